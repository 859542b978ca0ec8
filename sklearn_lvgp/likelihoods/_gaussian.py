"""Gaussian likelihood: the variational expectation ``E_N(f|mu,var) log N(y | f, s2)`` in
closed form with its backward, and the Gaussian log density (the package's one home of both);
:class:`Gaussian` is the likelihood object on these functions.

The expectation depends on the moments of ``f`` only through the expected squared residual
``E‖y − f‖² = ‖y − mu‖² + Σ var`` (:func:`expected_log_gaussian`); the elementwise form and
GP-CDE's output-mixed form (:mod:`._mixed_gaussian`) both evaluate it.
"""

from typing import NamedTuple

import numpy as np

from .._core.constants import LOG_2PI
from ._base import Likelihood, LikelihoodVJP

__all__ = ["expected_log_gaussian", "expected_log_gaussian_vjp", "gaussian_expectation",
           "gaussian_expectation_vjp", "gaussian_log_density", "GaussianVJP", "Gaussian"]


class GaussianVJP(NamedTuple):
    """Adjoints of the Gaussian variational expectation."""

    mu: np.ndarray
    var: np.ndarray
    noise_variance: float


def expected_log_gaussian(sq, n_dims, noise_variance):
    """``E log N(y | f, s2 I)`` of ``n_dims`` outputs from the expected squared residual.

    Parameters
    ----------
    sq : float or ndarray
        ``E‖y − f‖² = ‖y − mu‖² + Σ var`` over the ``n_dims`` outputs.
    n_dims : int
        Number of outputs summed in ``sq``.
    noise_variance : float or ndarray
        Likelihood variance ``s2`` (broadcast against ``sq``).

    Returns
    -------
    values : float or ndarray of the shape of ``sq``
        ``-n_dims log(2 pi s2)/2 - sq / (2 s2)``.
    """
    return -0.5 * n_dims * (LOG_2PI + np.log(noise_variance)) - 0.5 * sq / noise_variance


def expected_log_gaussian_vjp(dL_dvalues, n_dims, sq, noise_variance):
    """Backward pass of :func:`expected_log_gaussian`.

    Parameters
    ----------
    dL_dvalues : float or ndarray
        Upstream adjoint (broadcast against ``sq``).
    n_dims, sq, noise_variance
        As in the forward pass.

    Returns
    -------
    dL_dsq : float or ndarray
        ``-w / (2 s2)``.
    dL_dnoise : float or ndarray
        ``w (-n_dims / (2 s2) + sq / (2 s2²))`` elementwise (the caller sums it).
    """
    w, s2 = dL_dvalues, noise_variance
    return -0.5 * w / s2, w * (-0.5 * n_dims / s2 + 0.5 * sq / (s2 * s2))


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
    return expected_log_gaussian(r * r + var, 1, noise_variance)


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
    dsq, g = expected_log_gaussian_vjp(w, 1, r * r + var, s2)
    dnoise = float(np.sum(g)) if s2.ndim == 0 else np.sum(g, axis=tuple(range(g.ndim - 1)))
    return GaussianVJP(w * r / s2, dsq * np.ones_like(var), dnoise)


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
    return -0.5 * (LOG_2PI + np.log(var) + r * r / var)


class Gaussian(Likelihood):
    """Gaussian likelihood ``p(y | f) = N(y | f, noise_variance)``, in closed form.

    The expectation is :func:`gaussian_expectation`; the predictive distribution is
    ``N(mu, var + noise_variance)``.

    Parameters
    ----------
    noise_variance : float or ndarray of shape (D,), default=1.0
        Likelihood variance: one for all outputs or one per output column.
    noise_variance_bounds : pair of float, "fixed" or None, default=(1e-6, 1e6)
        Bounds of ``noise_variance`` (``theta`` holds its log); ``"fixed"`` keeps it out of
        ``theta``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.likelihoods import Gaussian
    >>> lik = Gaussian(noise_variance=0.1)
    >>> lik.variational_expectation(np.zeros((1, 1)), np.zeros((1, 1)), np.ones((1, 1))).shape
    (1, 1)
    """

    _hyperparameters = (("noise_variance", "log"),)

    def __init__(self, noise_variance=1.0, noise_variance_bounds=(1e-6, 1e6)):
        self.noise_variance = noise_variance
        self.noise_variance_bounds = noise_variance_bounds

    def _check_values(self):
        message = ("noise_variance must be a positive number or a 1-D array of positive "
                   f"numbers, got {self.noise_variance!r}.")
        try:
            s2 = np.asarray(self.noise_variance, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(message) from None
        if s2.ndim > 1 or s2.size == 0 or not np.all(np.isfinite(s2) & (s2 > 0)):
            raise ValueError(message)

    def _noise(self, shape):
        s2 = np.asarray(self.noise_variance, dtype=np.float64)
        if s2.ndim == 1 and (len(shape) < 1 or shape[-1] != s2.size):
            raise ValueError(f"noise_variance has {s2.size} entries but the outputs have "
                             f"shape {shape}; pass one per output column.")
        return s2 if s2.ndim else float(s2)

    def _expectation(self, y, mu, var):
        s2 = self._noise(mu.shape)
        return gaussian_expectation(y, mu, var, s2), (y, mu, var, s2)

    def _expectation_vjp(self, dL_dvalues, cache):
        y, mu, var, s2 = cache
        adj = gaussian_expectation_vjp(dL_dvalues, y, mu, var, s2)
        theta = np.zeros(0)
        if self.n_theta:
            theta = self._pack_theta_grad({"noise_variance": np.asarray(adj.noise_variance) * s2})
        return LikelihoodVJP(adj.mu, adj.var, theta)

    def _log_density(self, y, mu, var):
        return gaussian_log_density(y, mu, var + self._noise(mu.shape))

    def _mean_and_var(self, mu, var):
        return mu.copy(), var + self._noise(mu.shape)
