"""Bernoulli likelihood with a probit link: the variational expectation by 1-D Gauss–Hermite
quadrature with 20 points (Salimbeni 2020, §1.2), its backward, and class probabilities."""

import numpy as np
from scipy.special import log_ndtr

from .._core.constants import LOG_2PI
from ..expectations._rules import (
    gauss_hermite_rule,
    reparameterise,
    reparameterise_vjp,
    variance_adjoint,
)

__all__ = ["bernoulli_probit_expectation", "bernoulli_probit_expectation_vjp",
           "bernoulli_probit_predict"]


def _gh(n_points):
    """1-D probabilists' Gauss–Hermite nodes and normalised weights (cached, read-only)."""
    rule = gauss_hermite_rule(n_points, 1)
    return rule.nodes[:, 0], rule.weights


def bernoulli_probit_expectation(y, mu, var, n_points=20):
    """``E_N(f|mu,var) log Phi(s f)``, ``s = 2y - 1``, by Gauss–Hermite quadrature.

    Parameters
    ----------
    y : ndarray
        Labels in {0, 1}.
    mu, var : ndarray of the shape of ``y``
        Marginals of ``f``.
    n_points : int, default=20
        Quadrature nodes.

    Returns
    -------
    values : ndarray of the shape of ``y``
        Expected log likelihoods.
    cache : tuple
        Input of :func:`bernoulli_probit_expectation_vjp`.
    """
    x, w = _gh(n_points)
    sd = np.sqrt(var)
    sign = 2.0 * np.asarray(y, dtype=np.float64) - 1.0
    f = reparameterise(mu[..., None], sd[..., None], x)
    t = sign[..., None] * f
    logcdf = log_ndtr(t)
    values = logcdf @ w
    return values, (x, w, sign, sd, t, logcdf)


def bernoulli_probit_expectation_vjp(dL_dvalues, cache):
    """Backward pass of :func:`bernoulli_probit_expectation`.

    Parameters
    ----------
    dL_dvalues : ndarray or float
        Upstream adjoint.
    cache : tuple
        From the forward pass.

    Returns
    -------
    dmu, dvar : ndarray
        Adjoints of the marginal means and variances.
    """
    x, w, sign, sd, t, logcdf = cache
    # d/dt log Phi(t) = phi(t) / Phi(t), evaluated in log space
    ratio = np.exp(-0.5 * t * t - 0.5 * LOG_2PI - logcdf)
    g = sign[..., None] * ratio
    dmu_k, dsd_k = reparameterise_vjp(g, x)
    dmu = dmu_k @ w
    dvar = variance_adjoint(dsd_k @ w, sd)
    up = np.broadcast_to(dL_dvalues, dmu.shape)
    return up * dmu, up * dvar


def bernoulli_probit_predict(mu, var):
    """Predictive ``p(y = 1) = Phi(mu / sqrt(1 + var))``.

    Parameters
    ----------
    mu, var : ndarray
        Marginals of ``f``.

    Returns
    -------
    p : ndarray
        Probabilities of the positive class.
    """
    return np.exp(log_ndtr(mu / np.sqrt(1.0 + var)))
