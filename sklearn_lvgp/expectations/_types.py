"""Result types shared by every Ψ-statistic implementation, and their input checks."""

from typing import NamedTuple

import numba as nb
import numpy as np

__all__ = ["PsiStats", "PsiVJP"]


class PsiStats(NamedTuple):
    """Ψ-statistics of a kernel under ``q(x_n) = N(mu_n, diag(S_n))``.

    As defined by Titsias & Lawrence (2010); see also de Souza et al. (2021, §2.2).

    Attributes
    ----------
    psi0 : float
        ``sum_n E[k(x_n, x_n)]``.
    Psi1 : ndarray of shape (N, M)
        ``E[k(x_n, z_m)]``.
    Psi2 : ndarray of shape (M, M) or (N, M, M)
        ``sum_n E[k(z_m, x_n) k(x_n, z_m')]``, or its per-point summands.
    """

    psi0: float
    Psi1: np.ndarray
    Psi2: np.ndarray


class PsiVJP(NamedTuple):
    """Adjoints of the inputs of a Ψ-statistic computation.

    Attributes
    ----------
    mu : ndarray of shape (N, Q)
        Adjoint of the variational means.
    S : ndarray of shape (N, Q)
        Adjoint of the variational variances (natural space, not log).
    Z : ndarray of shape (M, Q)
        Adjoint of the inducing inputs.
    theta : ndarray of shape (n_theta,)
        Adjoint of the kernel's free hyperparameters, in its ``theta`` (transformed) space.
    """

    mu: np.ndarray
    S: np.ndarray
    Z: np.ndarray
    theta: np.ndarray


def check_psi_inputs(Z, mu, S):
    """Return float64 C-contiguous ``Z``, ``mu``, ``S`` after shape and value checks.

    Raises ``ValueError`` for mismatched shapes, non-finite values or negative variances
    (``S = 0`` is allowed: the closed forms reduce to kernel evaluations at ``mu``).
    """
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    mu = np.ascontiguousarray(mu, dtype=np.float64)
    S = np.ascontiguousarray(S, dtype=np.float64)
    if mu.ndim != 2 or Z.ndim != 2:
        raise ValueError(f"mu and Z must be 2-D, got shapes {mu.shape} and {Z.shape}.")
    if S.shape != mu.shape:
        raise ValueError(f"S has shape {S.shape} but mu has shape {mu.shape}.")
    if Z.shape[1] != mu.shape[1]:
        raise ValueError(f"Z has {Z.shape[1]} columns but mu has {mu.shape[1]}.")
    code = first_invalid_psi_input(Z, mu, S)
    if code == 4:
        raise ValueError("S (the variational variances) must be non-negative.")
    if code:
        name = ("Z", "mu", "S")[code - 1]
        raise ValueError(f"{name} contains NaN or infinite values.")
    return Z, mu, S


@nb.njit(cache=True, nogil=True, fastmath={"reassoc"})
def first_invalid_psi_input(Z, mu, S):
    """``0`` when all is valid; else ``1``/``2``/``3`` for a non-finite ``Z``/``mu``/``S`` and
    ``4`` for a negative ``S`` (one pass over each array instead of four numpy reductions).

    An array is finite when ``sum(a * 0)`` is ``0`` (NaN otherwise). No early exit, so the
    loops vectorise; ``reassoc`` only lets the sums run in any order, which cannot turn a NaN
    into a number (no ``nnan``/``ninf`` assumptions). The negative count is an integer sum.
    The three arrays may differ in type (a read-only memory map among them).
    """
    if _sum_times_zero(Z) != 0.0:
        return 1
    if _sum_times_zero(mu) != 0.0:
        return 2
    if _sum_times_zero(S) != 0.0:
        return 3
    x = S.ravel()
    count = 0
    for i in range(x.size):
        count += x[i] < 0.0
    return 4 if count else 0


@nb.njit(inline="always")
def _sum_times_zero(a):
    """``sum(a * 0)``: ``0`` when every entry is finite, NaN otherwise."""
    x = a.ravel()
    acc = 0.0
    for i in range(x.size):
        acc += x[i] * 0.0
    return acc


def check_psi_adjoints(dL_dpsi0, dL_dPsi1, dL_dPsi2, N, M):
    """Normalise upstream adjoints: ``None`` means zero; ``dL_dPsi2`` becomes (1|N, M, M).

    Returns ``(g0, G1, G2)`` with ``g0`` an (N,) array (a scalar ``dL_dpsi0``, the adjoint of the
    summed ``psi0``, is broadcast to every point), ``G1`` an (N, M) array or ``None`` and ``G2``
    a 3-D array or ``None``; ``G2`` is not symmetrised here.
    """
    if dL_dpsi0 is None:
        g0 = np.zeros(N)
    elif np.ndim(dL_dpsi0) == 0:  # np.full: a third of broadcast_to's cost
        g0 = np.full(N, float(dL_dpsi0))
    else:
        g0 = np.broadcast_to(np.asarray(dL_dpsi0, dtype=np.float64), (N,))
    G1 = None
    if dL_dPsi1 is not None:
        G1 = np.ascontiguousarray(dL_dPsi1, dtype=np.float64)
        if G1.shape != (N, M):
            raise ValueError(f"dL_dPsi1 has shape {G1.shape}, expected {(N, M)}.")
    return g0, G1, as_psi2_adjoint(dL_dPsi2, N, M)


def as_psi2_adjoint(dL_dPsi2, N, M):
    """``dL_dPsi2`` of shape (M, M), (1, M, M) or (N, M, M) as a 3-D float64 array.

    ``None`` is passed through; a leading axis of length 1 means the adjoint of the summed Ψ2.
    """
    if dL_dPsi2 is None:
        return None
    G2 = np.asarray(dL_dPsi2, dtype=np.float64)
    if G2.shape == (M, M):
        G2 = G2[None]
    elif G2.shape not in ((N, M, M), (1, M, M)):
        raise ValueError(
            f"dL_dPsi2 has shape {G2.shape}, expected {(M, M)} or {(N, M, M)} (per point).")
    return np.ascontiguousarray(G2)
