"""Likelihoods of an SVGP output layer: variational expectations ``E_N(f|mu,var) log p(y|f)``.

Gaussian: closed form. Bernoulli with a probit link: 1-D Gauss–Hermite quadrature with 20 points
(Salimbeni 2020, §1.2). Each expectation has its backward beside it.
"""

from typing import NamedTuple

import numpy as np
from scipy.special import log_ndtr

from .._psi._rules import gauss_hermite_rule

__all__ = ["gaussian_expectation", "gaussian_expectation_vjp", "gaussian_log_density",
           "bernoulli_probit_expectation", "bernoulli_probit_expectation_vjp",
           "bernoulli_probit_predict", "GaussianVJP"]

_LOG_2PI = float(np.log(2.0 * np.pi))


class GaussianVJP(NamedTuple):
    """Adjoints of the Gaussian variational expectation."""

    mu: np.ndarray
    var: np.ndarray
    noise_variance: float


def gaussian_expectation(y, mu, var, noise_variance):
    """``E_N(f|mu,var) log N(y | f, s2)`` elementwise (closed form).

    Parameters
    ----------
    y, mu, var : ndarray of the same shape
        Targets, marginal means and variances of ``f``.
    noise_variance : float or ndarray of shape (D,)
        Likelihood variance ``s2``: one for all outputs, or one per output column.

    Returns
    -------
    values : ndarray of the shape of ``y``
        ``-log(2 pi s2)/2 - ((y - mu)^2 + var) / (2 s2)``.
    """
    r = y - mu
    return -0.5 * (_LOG_2PI + np.log(noise_variance)) - 0.5 * (r * r + var) / noise_variance


def gaussian_expectation_vjp(dL_dvalues, y, mu, var, noise_variance):
    """Backward pass of :func:`gaussian_expectation`.

    Parameters
    ----------
    dL_dvalues : ndarray or float
        Upstream adjoint (broadcast to the shape of ``y``).
    y, mu, var : ndarray
        As in the forward pass.
    noise_variance : float or ndarray of shape (D,)
        As in the forward pass.

    Returns
    -------
    GaussianVJP
        ``noise_variance`` holds a float for a scalar noise, else one adjoint per column.
    """
    w = np.broadcast_to(dL_dvalues, np.shape(y))
    r = y - mu
    s2 = np.asarray(noise_variance, dtype=np.float64)
    g = w * (-0.5 / s2 + 0.5 * (r * r + var) / (s2 * s2))
    dnoise = float(np.sum(g)) if s2.ndim == 0 else np.sum(g, axis=tuple(range(g.ndim - 1)))
    return GaussianVJP(w * r / s2, -0.5 * w / s2 * np.ones_like(var), dnoise)


def gaussian_log_density(y, mean, var):
    """``log N(y | mean, var)`` elementwise.

    Parameters
    ----------
    y, mean, var : ndarray
        Broadcastable arrays.

    Returns
    -------
    values : ndarray
        Log densities.
    """
    r = y - mean
    return -0.5 * (_LOG_2PI + np.log(var) + r * r / var)


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
    f = mu[..., None] + sd[..., None] * x
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
    ratio = np.exp(-0.5 * t * t - 0.5 * _LOG_2PI - logcdf)
    g = sign[..., None] * ratio
    dmu = g @ w
    safe = np.where(sd > 0.0, sd, 1.0)
    dvar = np.where(sd > 0.0, (g * x) @ w / (2.0 * safe), 0.0)
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
