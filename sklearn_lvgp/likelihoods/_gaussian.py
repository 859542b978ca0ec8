"""Gaussian likelihood: the variational expectation ``E_N(f|mu,var) log N(y | f, s2)`` in
closed form with its backward, and the Gaussian log density."""

from typing import NamedTuple

import numpy as np

__all__ = ["gaussian_expectation", "gaussian_expectation_vjp", "gaussian_log_density",
           "GaussianVJP"]

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
