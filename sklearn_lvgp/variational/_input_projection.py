"""Bayesian input projection ``h = A^T x`` with a factorised Gaussian ``q(A)``.

The probabilistic input transformation of Salimbeni (2020, §4.2.3).

Local reparameterisation: ``h_nj = sum_i mu_ij x_ni + eps_nj sqrt(sum_i s_ij^2 x_ni^2)``; the KL
to the prior ``N(0, alpha^2)`` is closed form.
"""

import numpy as np

from ..expectations._rules import reparameterise, reparameterise_vjp

__all__ = ["projection_sample", "projection_sample_vjp"]


def projection_sample(X, mu, s, eps):
    """Sampled projected inputs.

    Parameters
    ----------
    X : ndarray of shape (n, D_x)
    mu, s : ndarray of shape (D_x, D_h)
        Means and standard deviations of ``q(A)``.
    eps : ndarray of shape (n, D_h)
        Standard normal noise.

    Returns
    -------
    h : ndarray of shape (n, D_h)
    cache : tuple
    """
    X2 = X * X
    sd = np.sqrt(X2 @ (s * s))
    return reparameterise(X @ mu, sd, eps), (X, X2, s, eps, sd)


def projection_sample_vjp(dL_dh, cache):
    """Backward pass of :func:`projection_sample`; returns ``(dmu, ds)``.

    ``ds_ij = sum_n dh_nj eps_nj s_ij x_ni^2 / sd_nj``; rows with ``sd_nj = 0`` (zero input)
    contribute nothing.
    """
    X, X2, s, eps, sd = cache
    dm, dsd = reparameterise_vjp(dL_dh, eps)
    g = np.where(sd > 0, dsd / np.where(sd > 0, sd, 1.0), 0.0)
    return X.T @ dm, s * (X2.T @ g)
