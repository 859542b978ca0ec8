"""Jitted dense algebra of the collapsed bound (:mod:`._collapsed`).

Everything between the two Cholesky factorisations and after them: the whitened Ψ2, the solves
for ``c``, ``G`` and ``B^-1``, and the adjoints of Ψ2, ``K_uu`` and the noise variance. The
factorisations themselves stay in :func:`sklearn_lvgp._core.linalg.cholesky_jitter`, the one place
that escalates jitter, warns and raises.

At the sizes of a GPLVM (M in the tens) the arithmetic of each step is a few microseconds, less
than the argument handling of the twenty-odd numpy and BLAS calls it would take from Python
(``doc/developers.rst``, "BLAS from jitted code"). Here each function is one call, and the
triangular solves reach BLAS ``dtrsm`` directly (:mod:`sklearn_lvgp._core.blas_numba`), so large M
still runs at BLAS speed. Work arrays are F-contiguous (BLAS's layout); so are the results.
"""

import numba as nb
import numpy as np

from .._core.blas_numba import trsm_left

__all__ = ["whitened_psi2", "collapsed_solves", "collapsed_adjoints"]


@nb.njit(cache=True, nogil=True)
def _fortran_empty(m, n):
    return np.empty((n, m)).T


@nb.njit(cache=True, nogil=True)
def _fortran_copy(A):
    m, n = A.shape
    out = _fortran_empty(m, n)
    for j in range(n):
        for i in range(m):
            out[i, j] = A[i, j]
    return out


@nb.njit(cache=True, nogil=True)
def whitened_psi2(trsm, L, Psi2, s2):
    """``B = I + E`` with ``E = sym(L^-1 Psi2 L^-T) / s2``, and ``trace(E)``.

    ``L`` is the F-contiguous lower factor of ``K_uu`` (plus jitter); ``Psi2`` is symmetric.
    """
    M = L.shape[0]
    X = _fortran_copy(Psi2)
    trsm_left(trsm, L, X, False)  # L^-1 Psi2
    W = _fortran_empty(M, M)
    for j in range(M):
        for i in range(M):
            W[i, j] = X[j, i]  # (L^-1 Psi2)^T = Psi2 L^-T
    trsm_left(trsm, L, W, False)  # L^-1 Psi2 L^-T
    B = _fortran_empty(M, M)
    trE = 0.0
    for j in range(M):
        for i in range(M):
            B[i, j] = 0.5 * (W[i, j] + W[j, i]) / s2
        trE += B[j, j]
        B[j, j] += 1.0
    return B, trE


@nb.njit(cache=True, nogil=True)
def collapsed_solves(trsm, L, LB, PY, s2):
    """Solves of the collapsed bound given both factors.

    Returns ``c = LB^-1 L^-1 PY / s2``, ``LBtc = LB^-T c``, ``G = L^-T LBtc`` (M, D),
    ``Binv = B^-1`` (M, M), ``log|B|`` and ``sum(c²)``.
    """
    M = L.shape[0]
    c = _fortran_copy(PY)
    trsm_left(trsm, L, c, False)
    trsm_left(trsm, LB, c, False)
    cc = 0.0
    for j in range(c.shape[1]):
        for i in range(M):
            c[i, j] /= s2
            cc += c[i, j] * c[i, j]
    LBtc = _fortran_copy(c)
    trsm_left(trsm, LB, LBtc, True)
    G = _fortran_copy(LBtc)
    trsm_left(trsm, L, G, True)
    LBinv = _fortran_empty(M, M)
    LBinv[:] = 0.0
    for i in range(M):
        LBinv[i, i] = 1.0
    trsm_left(trsm, LB, LBinv, False)
    Binv = np.dot(LBinv.T, LBinv)
    logdet = 0.0
    for i in range(M):
        logdet += np.log(LB[i, i])
    return c, LBtc, G, Binv, 2.0 * logdet, cc


@nb.njit(cache=True, nogil=True)
def collapsed_adjoints(trsm, L, LB, G, Binv, LBtc, PY, N, D, s2, YY, psi0, trE, rel_jitter):
    """Adjoints of the collapsed bound wrt Ψ2, ``K_uu`` and the noise variance.

    ``dPsi2 = sym(D L^-T (I - B^-1) L^-1 - G Gᵀ) / (2 s2)`` and
    ``dKu = sym(D L^-T (2I - B - B^-1) L^-1 - G Gᵀ) / 2``, plus the relative jitter's
    dependence on ``mean(diag(K_uu))`` (``rel_jitter tr(dKu) / M`` on the diagonal). The two
    sandwiches share their solves (one ``(M, 2M)`` right-hand side per side).
    """
    M = L.shape[0]
    GG = np.dot(G, G.T)
    Bm = np.dot(LB, LB.T)
    X = _fortran_empty(M, 2 * M)
    for j in range(M):
        for i in range(M):
            e = 1.0 if i == j else 0.0
            X[i, j] = e - Binv[i, j]
            X[i, M + j] = 2.0 * e - Bm[i, j] - Binv[i, j]
    trsm_left(trsm, L, X, True)  # L^-T X for both blocks
    W = _fortran_empty(M, 2 * M)
    for j in range(M):
        for i in range(M):
            W[i, j] = X[j, i]
            W[i, M + j] = X[j, M + i]
    trsm_left(trsm, L, W, True)  # L^-T X L^-1 (X symmetric)
    dPsi2 = _fortran_empty(M, M)
    dKu = _fortran_empty(M, M)
    trK = 0.0
    for j in range(M):
        for i in range(M):
            gg = 0.5 * (GG[i, j] + GG[j, i])
            dPsi2[i, j] = (0.5 * D * (W[i, j] + W[j, i]) - gg) / (2.0 * s2)
            dKu[i, j] = 0.25 * D * (W[i, M + j] + W[j, M + i]) - 0.5 * gg
        trK += dKu[j, j]
    if rel_jitter != 0.0:
        for i in range(M):
            dKu[i, i] += rel_jitter * trK / M
    trBinv = 0.0
    for i in range(M):
        trBinv += Binv[i, i]
    GPY = 0.0
    for i in range(M):
        for j in range(G.shape[1]):
            GPY += G[i, j] * PY[i, j]
    tt = 0.0
    for j in range(LBtc.shape[1]):
        for i in range(M):
            tt += LBtc[i, j] * LBtc[i, j]
    dnoise = (-D * (N - M) / (2.0 * s2) - D * trBinv / (2.0 * s2)
              + (YY - GPY + D * psi0 - D * s2 * trE) / (2.0 * s2 * s2)
              - tt / (2.0 * s2))
    return dPsi2, dKu, dnoise
