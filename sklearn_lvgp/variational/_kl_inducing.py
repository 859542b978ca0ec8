"""KL(q(u) ‖ p(u)) of an SVGP layer and its backward pass.

``q(u_d) = N(m_d, L_d L_d^T)`` per output column ``d``; whitened prior ``N(0, I)``, unwhitened
prior ``N(0, K_uu)`` with ``K_uu = L_u L_u^T`` (Salimbeni 2020, eq. 1.24).
"""

from typing import NamedTuple

import numpy as np

from .._core.linalg import cho_solve, solve_lower, tril

__all__ = ["KLCache", "KLVJP", "kl_divergence", "kl_divergence_vjp"]


class KLCache(NamedTuple):
    """Forward quantities reused by :func:`kl_divergence_vjp`."""

    q_mu: np.ndarray
    q_sqrt: np.ndarray
    Lu: np.ndarray | None
    whiten: bool


class KLVJP(NamedTuple):
    """Adjoints of the KL term.

    Attributes
    ----------
    q_mu : ndarray of shape (M, D)
    q_sqrt : ndarray of shape (D, M, M)
        Lower triangle only.
    Kuu : ndarray of shape (M, M) or None
        Symmetric adjoint of the (jittered) ``K_uu`` (``None`` when whitened).
    """

    q_mu: np.ndarray
    q_sqrt: np.ndarray
    Kuu: np.ndarray | None


def kl_divergence(q_mu, q_sqrt, Lu=None, whiten=True):
    """KL divergence summed over output columns.

    Parameters
    ----------
    q_mu : ndarray of shape (M, D)
        Variational means.
    q_sqrt : ndarray of shape (D, M, M)
        Lower-triangular square roots of the variational covariances.
    Lu : ndarray of shape (M, M) or None
        Cholesky factor of ``K_uu`` (required when ``whiten=False``).
    whiten : bool, default=True
        Whitened parameterisation (prior ``N(0, I)``).

    Returns
    -------
    kl : float
        ``sum_d KL(q(u_d) ‖ p(u_d))``.
    cache : KLCache
        Input of :func:`kl_divergence_vjp`.
    """
    M, D = q_mu.shape
    Ls = tril(q_sqrt)
    logdiag = np.sum(np.log(np.abs(np.diagonal(Ls, axis1=1, axis2=2))))
    if whiten:
        kl = 0.5 * (np.sum(Ls * Ls) + np.sum(q_mu * q_mu) - M * D) - logdiag
    else:
        if Lu is None:
            raise ValueError("the unwhitened KL needs the Cholesky factor Lu of Kuu.")
        trace = sum(np.sum(solve_lower(Lu, Ls[d]) ** 2) for d in range(D))
        maha = np.sum(solve_lower(Lu, q_mu) ** 2)
        logdet_p = 2.0 * np.sum(np.log(np.diag(Lu)))
        kl = 0.5 * (trace + maha - M * D + D * logdet_p) - logdiag
    return float(kl), KLCache(q_mu, q_sqrt, Lu, bool(whiten))


def kl_divergence_vjp(dL_dkl, cache):
    """Backward pass of :func:`kl_divergence` (with upstream ``dL_dkl``).

    Parameters
    ----------
    dL_dkl : float
        Adjoint of the KL value (``-1`` for an ELBO).
    cache : KLCache
        From :func:`kl_divergence`.

    Returns
    -------
    KLVJP
    """
    q_mu, q_sqrt, Lu, whiten = cache
    D, M, _ = q_sqrt.shape
    Ls = tril(q_sqrt)
    inv_diag = np.zeros_like(Ls)
    idx = np.arange(M)
    inv_diag[:, idx, idx] = 1.0 / np.diagonal(Ls, axis1=1, axis2=2)
    if whiten:
        return KLVJP(dL_dkl * q_mu, dL_dkl * (Ls - inv_diag), None)
    Kinv_m = cho_solve(Lu, q_mu)
    Kinv = cho_solve(Lu, np.eye(M))
    dq_sqrt = np.empty_like(Ls)
    outer = Kinv_m @ Kinv_m.T
    for d in range(D):
        Kinv_L = cho_solve(Lu, Ls[d])
        dq_sqrt[d] = tril(Kinv_L) - inv_diag[d]
        outer += Kinv_L @ Kinv_L.T
    dKuu = 0.5 * (D * Kinv - outer)
    dKuu = 0.5 * (dKuu + dKuu.T)
    return KLVJP(dL_dkl * Kinv_m, dL_dkl * dq_sqrt, dL_dkl * dKuu)
