"""Gaussian likelihood: the variational expectation ``E_N(f|mu,var) log N(y | f, s2)`` in
closed form with its backward, and the Gaussian log density (the package's one home of both).

The expectation depends on the moments of ``f`` only through the expected squared residual
``E‖y − f‖² = ‖y − mu‖² + Σ var`` (:func:`expected_log_gaussian`); the elementwise form and
GP-CDE's output-mixed form (:mod:`._mixed_gaussian`) both evaluate it.
"""

from typing import NamedTuple

import numpy as np

from .._core.constants import LOG_2PI

__all__ = ["expected_log_gaussian", "expected_log_gaussian_vjp", "gaussian_expectation",
           "gaussian_expectation_vjp", "gaussian_log_density", "GaussianVJP"]


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
