"""Bernoulli likelihood with a probit link: the variational expectation by 1-D Gauss–Hermite
quadrature with 20 points (Salimbeni 2020, §1.2), its backward, and class probabilities;
:class:`Bernoulli` is the likelihood object, with a probit (these functions) or logit link."""

import numpy as np
from scipy.special import expit, log_ndtr

from .._core.constants import LOG_2PI
from ..expectations._rules import (
    gauss_hermite_rule,
    reparameterise,
    reparameterise_vjp,
    variance_adjoint,
)
from . import _quadrature_numba as _nb
from ._base import LikelihoodVJP, broadcast_adjoint
from ._quadrature import QuadratureLikelihood

__all__ = ["bernoulli_probit_expectation", "bernoulli_probit_expectation_vjp",
           "bernoulli_probit_predict", "Bernoulli"]


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


class Bernoulli(QuadratureLikelihood):
    """Bernoulli likelihood for binary targets ``y`` in {0, 1}.

    ``p(y = 1 | f) = Phi(f)`` (probit) or ``sigma(f)`` (logit). The expectation ``E log p(y | f)``
    is a 1-D Gauss–Hermite sum for both links (the probit one is
    :func:`bernoulli_probit_expectation`, the logit one jitted). The predictive probability is
    ``Phi(mu / sqrt(1 + var))`` in closed form for the probit link and a Gauss–Hermite sum for the
    logit link.

    Parameters
    ----------
    link : {"probit", "logit"}, default="probit"
        Inverse link from the latent function to ``p(y = 1)``.
    gh_order : int, default=20
        Gauss–Hermite nodes.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.likelihoods import Bernoulli
    >>> Bernoulli(link="logit").predict_proba(np.zeros((2, 1)), np.ones((2, 1)))
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """

    is_classification = True

    def __init__(self, link="probit", gh_order=20):
        self.link = link
        self.gh_order = gh_order

    def _check_values(self):
        super()._check_values()
        if not (isinstance(self.link, str) and self.link in ("probit", "logit")):
            raise ValueError(f"link must be 'probit' or 'logit', got {self.link!r}.")

    def _kind(self):
        return _nb.BERNOULLI_LOGIT

    def check_targets(self, y, n_classes=None):
        y = super().check_targets(y)
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("Bernoulli needs targets in {0, 1}.")
        return y

    def n_latent(self, n_targets):
        """One latent function for the two classes.

        Parameters
        ----------
        n_targets : int
            Number of classes; must be 2.

        Returns
        -------
        n_latent : int
            1.
        """
        if int(n_targets) != 2:
            raise ValueError(f"Bernoulli is a two-class likelihood, got {n_targets} classes; "
                             "use Softmax or RobustMax for more.")
        return 1

    def _expectation(self, y, mu, var):
        if self.link == "logit":
            return super()._expectation(y, mu, var)
        values, cache = bernoulli_probit_expectation(y, mu, np.maximum(var, 0.0), self.gh_order)
        return values, (mu.shape, cache)

    def _expectation_vjp(self, dL_dvalues, cache):
        if self.link == "logit":
            return super()._expectation_vjp(dL_dvalues, cache)
        shape, cache = cache
        dmu, dvar = bernoulli_probit_expectation_vjp(broadcast_adjoint(dL_dvalues, shape), cache)
        return LikelihoodVJP(dmu, dvar, np.zeros(0))

    def _log_density(self, y, mu, var):
        if self.link == "logit":
            return super()._log_density(y, mu, var)
        return log_ndtr((2.0 * y - 1.0) * mu / np.sqrt(1.0 + np.maximum(var, 0.0)))

    def _p1(self, mu, var):
        if self.link == "probit":
            return bernoulli_probit_predict(mu, np.maximum(var, 0.0))
        f, w = self._node_values(mu, var)
        return expit(f) @ w

    def _mean_and_var(self, mu, var):
        p = self._p1(mu, var)
        return p, p * (1.0 - p)

    def _proba(self, mu, var):
        if mu.ndim != 2 or mu.shape[1] != 1:
            raise ValueError(f"predict_proba needs mu of shape (N, 1) (one latent function), "
                             f"got {mu.shape}; predict_mean_and_var gives p(y = 1) per column.")
        p = self._p1(mu, var)
        return np.hstack([1.0 - p, p])
