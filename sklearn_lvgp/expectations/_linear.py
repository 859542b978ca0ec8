"""Closed-form Ψ-statistics of the (ARD) linear kernel and their VJP.

With ``A = diag(alpha)``, ``ZA = Z A`` and ``R_n = mu_n mu_n^T + diag(S_n)``::

    psi0 = sum_q alpha_q sum_n (mu_nq^2 + S_nq),   Psi1 = mu ZA^T,
    Psi2 = ZA R ZA^T  with  R = sum_n R_n = mu^T mu + diag(sum_n S_n).

Every cost is a small GEMM, so this module is plain numpy.
"""

from typing import NamedTuple

import numpy as np

from .._core.linalg import symmetrise
from ._types import PsiStats, PsiVJP, check_psi_adjoints, check_psi_inputs

__all__ = ["linear_psi", "linear_psi_vjp"]


def linear_alpha(kernel, Q):
    """Per-dimension variances ``alpha`` of a ``Linear`` kernel as a ``(Q,)`` array."""
    return np.ascontiguousarray(kernel._alpha(Q), dtype=np.float64)


def linear_theta_grad(kernel, dalpha, alpha):
    """Pack the natural ``d/d alpha`` into ``theta`` space (``d/d log alpha = alpha d/d alpha``)."""
    dlog = alpha * dalpha
    if np.ndim(kernel.variances) == 0:
        dlog = np.sum(dlog)
    return kernel._pack_theta_grad({"variances": dlog})


def second_moment(mu, S):
    """``R = sum_n (mu_n mu_n^T + diag(S_n))`` of shape (Q, Q)."""
    return mu.T @ mu + np.diag(S.sum(axis=0))


def second_moment_per_point(mu, S):
    """``R_n = mu_n mu_n^T + diag(S_n)`` of shape (N, Q, Q)."""
    R = mu[:, :, None] * mu[:, None, :]
    idx = np.arange(mu.shape[1])
    R[:, idx, idx] += S
    return R


def scaled_inputs_vjp(dZA, Z, alpha):
    """Chain ``dL/d(Z A)`` to ``dL/dZ`` and the natural ``dL/dalpha``."""
    return dZA * alpha, np.einsum("mq,mq->q", dZA, Z)


class _LinearCache(NamedTuple):
    kernel: object
    Z: np.ndarray
    mu: np.ndarray
    S: np.ndarray
    alpha: np.ndarray
    ZA: np.ndarray


def linear_psi(kernel, Z, mu, S, per_point=False, workspace=None):
    """Closed-form Ψ-statistics of a linear kernel ``k(x, z) = sum_q alpha_q x_q z_q``.

    Parameters
    ----------
    kernel : Linear
        Kernel with scalar or per-dimension ``variances``.
    Z : ndarray of shape (M, Q)
        Inducing inputs.
    mu : ndarray of shape (N, Q)
        Means of ``q(x_n)``.
    S : ndarray of shape (N, Q)
        Variances of ``q(x_n)`` (``S >= 0``).
    per_point : bool, default=False
        Return the per-point summands ``Psi2[n]`` of shape (N, M, M) instead of their sum.
    workspace : Workspace, default=None
        Accepted for a signature shared with :func:`~._rbf.rbf_psi`; unused (the linear
        statistics keep no large arrays).

    Returns
    -------
    stats : PsiStats
        ``psi0``, ``Psi1`` (N, M) and ``Psi2`` (M, M) or (N, M, M).
    cache : object
        Opaque state for :func:`linear_psi_vjp`.
    """
    Z, mu, S = check_psi_inputs(Z, mu, S)
    alpha = linear_alpha(kernel, mu.shape[1])
    ZA = Z * alpha
    per_row = (mu * mu + S) @ alpha
    psi0 = per_row if per_point else float(np.sum(per_row))
    Psi1 = mu @ ZA.T
    if per_point:
        Psi2 = Psi1[:, :, None] * Psi1[:, None, :] + np.einsum("mq,nq,kq->nmk", ZA, S, ZA)
    else:
        Psi2 = ZA @ second_moment(mu, S) @ ZA.T
    Psi2 = symmetrise(Psi2)  # exact symmetry for downstream Cholesky factorisations
    return PsiStats(psi0, Psi1, Psi2), _LinearCache(kernel, Z, mu, S, alpha, ZA)


def linear_psi_vjp(dL_dpsi0, dL_dPsi1, dL_dPsi2, cache):
    """Backward pass of :func:`linear_psi`.

    Parameters
    ----------
    dL_dpsi0 : float or None
        Adjoint of ``psi0`` (``None`` means zero).
    dL_dPsi1 : ndarray of shape (N, M) or None
        Adjoint of ``Psi1``.
    dL_dPsi2 : ndarray of shape (M, M) or (N, M, M), or None
        Adjoint of ``Psi2`` (summed or per point; its symmetric part is used).
    cache : object
        Second output of :func:`linear_psi`.

    Returns
    -------
    PsiVJP
        Adjoints of ``mu``, ``S``, ``Z`` and ``kernel.theta``.
    """
    c = cache
    N, Q = c.mu.shape
    M = c.Z.shape[0]
    g0, G1, G2 = check_psi_adjoints(dL_dpsi0, dL_dPsi1, dL_dPsi2, N, M)
    alpha, ZA, mu = c.alpha, c.ZA, c.mu
    dmu = 2.0 * g0[:, None] * mu * alpha
    dS = g0[:, None] * alpha * np.ones((N, Q))
    dalpha = g0 @ (mu * mu + c.S)
    dZA = np.zeros((M, Q))
    if G1 is not None:
        dmu += G1 @ ZA
        dZA += G1.T @ mu
    if G2 is not None:
        G2 = symmetrise(G2)
        if G2.shape[0] == 1:
            G = G2[0]
            GZA = G @ ZA
            H = ZA.T @ GZA
            dmu += 2.0 * mu @ H
            dS += np.diag(H)
            dZA += 2.0 * GZA @ second_moment(mu, c.S)
        else:
            GZA = np.einsum("nmk,kq->nmq", G2, ZA)
            H = np.einsum("mq,nmr->nqr", ZA, GZA)
            dmu += 2.0 * np.einsum("nqr,nr->nq", H, mu)
            dS += np.einsum("nqq->nq", H)
            dZA += 2.0 * np.einsum("nmq,nqr->mr", GZA, second_moment_per_point(mu, c.S))
    dZ, da = scaled_inputs_vjp(dZA, c.Z, alpha)
    dalpha += da
    return PsiVJP(dmu, dS, dZ, linear_theta_grad(c.kernel, dalpha, alpha))
