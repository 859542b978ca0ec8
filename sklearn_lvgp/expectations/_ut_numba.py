"""Jitted kernel matrix and backward pass of a stationary kernel at the unscented points.

The unscented points of row ``n`` are ``mu_n + s delta_nq e_q`` (``s = ±1``, ``delta = sqrt(Q S)``,
:func:`._rules.unscented_rule`): each differs from the centre in one coordinate. With
``w_q = 1 / l_q²`` and ``d_nmq = mu_nq - z_mq`` the squared scaled distance of point ``(q, s)`` to
``z_m`` is therefore the centre's plus a one-coordinate correction,

    r2[n, (q, s), m] = b_nm + w_q delta_nq (2 s d_nmq + delta_nq),   b_nm = sum_q w_q d_nmq²,

so the ``2Q`` kernel rows of a data point cost ``O(M Q)`` together instead of ``O(M Q²)`` through
the explicit ``(N, 2Q, Q)`` point array. The backward pass has the same structure. Point index
``k = q`` is ``s = +1``, ``k = Q + q`` is ``s = -1`` (the order of the rule's nodes).

``prange`` runs over fixed blocks of ``UT_BLOCK`` rows; the reductions over rows (``dZ``, the
length-scale, variance and ``alpha`` adjoints) go to one partial per block, summed serially, so
results do not depend on the thread count.

``ut_chunk_stats`` and ``ut_chunk_grads`` are the objective engine's chunk passes: the same
per-row loops (``point_rows``, ``point_rows_vjp``) plus Ψ1ᵀY, Ψ2 and the Ψ2 adjoint's product,
one serial call per chunk, whose rows are summed in order (the engine's threads run the chunks).
"""

import numba as nb
import numpy as np

from .._compile.jit import twin_jit_per_value
from .._core.blas_numba import gram_inlined
from ..kernels._kernels_numba import (
    PROFILE_NAMES,
    _profile_row,
    slope_weight_row,
    sum_block_partials,
)

__all__ = ["ut_stationary_K", "ut_stationary_vjp", "point_rows", "point_rows_vjp", "ut_chunk_stats",
           "ut_chunk_grads", "UT_BLOCK"]

#: Rows per parallel task (each task has one ``(Q, M)`` scratch block of differences).
UT_BLOCK = 16


@nb.njit(inline="always")
def _centre_rows(mu, n, ZT, w, D, base):
    """``D[q, m] = mu[n, q] - Z[m, q]`` and ``base[m] = sum_q w_q D[q, m]²``."""
    Q, M = ZT.shape
    for m in range(M):
        base[m] = 0.0
    for q in range(Q):
        x = mu[n, q]
        wq = w[q]
        for m in range(M):
            d = x - ZT[q, m]
            D[q, m] = d
            base[m] += wq * d * d


@nb.njit(inline="always")
def _point_r2(base, D, q, s, wq, dq, row):
    """``row[m] = r2`` of the point ``(q, s)``: the centre's plus the one-coordinate term."""
    for m in range(row.shape[0]):
        row[m] = max(base[m] + wq * dq * (2.0 * s * D[q, m] + dq), 0.0)


@nb.njit(inline="always")
def point_rows(kind, mu, delta, ZT, w, variance, alpha, n, D, base, Ks_n):
    """``Ks_n[k] = k(x_nk, Z)`` for the ``2Q`` points of row ``n`` (``D``, ``base``: scratch)."""
    Q = mu.shape[1]
    _centre_rows(mu, n, ZT, w, D, base)
    for q in range(Q):
        for half in range(2):
            row = Ks_n[q + half * Q]
            _point_r2(base, D, q, 1.0 - 2.0 * half, w[q], delta[n, q], row)
            _profile_row(kind, row, variance, alpha)


@nb.njit(inline="always")
def point_rows_vjp(kind, dKs_n, Ks_n, mu, delta, ZT, w, alpha, n, D, base, r2, C, Cb, dZT, dw,
                   dmu, ddelta, dvar, dalpha):
    """Backward pass of :func:`point_rows` for row ``n``: writes ``dmu[n]`` and
    ``ddelta[n]``, adds to ``dZT`` (Q, M) and ``dw`` (Q,), and returns the running sums
    ``(dvar, dalpha)`` with the row's ``dlogvar`` and ``dlogalpha`` terms added one by one
    (``D``, ``base``, ``r2``, ``C``, ``Cb``: scratch)."""
    Q = mu.shape[1]
    M = ZT.shape[1]
    _centre_rows(mu, n, ZT, w, D, base)
    for m in range(M):
        Cb[m] = 0.0
    for q in range(Q):
        for half in range(2):
            k = q + half * Q
            _point_r2(base, D, q, 1.0 - 2.0 * half, w[q], delta[n, q], r2)
            dalpha += slope_weight_row(kind, dKs_n[k], Ks_n[k], r2, alpha, 1.0, C[k])
            Ck = C[k]
            dKk = dKs_n[k]
            Kk = Ks_n[k]
            for m in range(M):
                Cb[m] += Ck[m]
                dvar += dKk[m] * Kk[m]
    for q in range(Q):
        wq = w[q]
        dq = delta[n, q]
        Cp = C[q]
        Cm = C[Q + q]
        gmu = 0.0
        gdelta = 0.0
        gw = 0.0
        for m in range(M):
            d = D[q, m]
            diff = Cp[m] - Cm[m]
            both = Cp[m] + Cm[m]
            dd = 2.0 * wq * (d * Cb[m] + dq * diff)
            gmu += dd
            dZT[q, m] -= dd
            gdelta += d * diff + dq * both
            gw += Cb[m] * d * d + dq * (2.0 * d * diff + dq * both)
        dmu[n, q] = gmu
        ddelta[n, q] = 2.0 * wq * gdelta
        dw[q] += gw
    return dvar, dalpha


@twin_jit_per_value(position=5, names=PROFILE_NAMES,
                    work=lambda mu, delta, ZT, w, variance, alpha, Ks: Ks.size * 4)
def ut_stationary_K(kind):
    """Kernel rows of the ``2Q`` unscented points of every row, written into ``Ks`` (N, 2Q, M).

    ``w`` holds the inverse squared length scales (Q,). Per point, one vectorised pass forms
    ``r2`` from the centre's distances and one applies the profile (as ``stationary_K`` does).
    """
    def ut_stationary_K(mu, delta, ZT, w, variance, alpha, Ks):
        N, Q = mu.shape
        for b in nb.prange((N + UT_BLOCK - 1) // UT_BLOCK):
            D = np.empty((Q, ZT.shape[1]))
            base = np.empty(ZT.shape[1])
            for n in range(b * UT_BLOCK, min(N, (b + 1) * UT_BLOCK)):
                point_rows(kind, mu, delta, ZT, w, variance, alpha, n, D, base, Ks[n])

    return ut_stationary_K


@twin_jit_per_value(position=6, names=PROFILE_NAMES,
                    work=lambda dKs, Ks, mu, delta, ZT, w, alpha: dKs.size * 4)
def ut_stationary_vjp(kind):
    """Backward pass of :func:`ut_stationary_K` given ``dKs`` (N, 2Q, M).

    Returns ``dmu``, ``ddelta`` (N, Q), ``dZ`` (M, Q), ``dw`` (Q,) (wrt the inverse squared
    length scales), ``dlogvar`` and ``dlogalpha``. With ``C = dKs variance dg/dr2`` (the adjoint
    of ``r2``, from ``Ks`` and the recomputed ``r2``: no ``exp``) and ``Cb[m] = sum_k C[k, m]``
    (the adjoint of ``b_nm``): ``d d_nmq = 2 w_q (d Cb + delta sum_s s C[(q, s), m])``,
    ``d delta_nq = 2 w_q sum_m sum_s C[(q, s), m] (s d + delta)``,
    ``d w_q = sum_m (Cb d² + sum_s C[(q, s), m] delta (2 s d + delta))``;
    ``dmu = sum_m d d``, ``dZ = -sum_n d d``, ``dlogvar = sum dKs Ks``.
    """
    def ut_stationary_vjp(dKs, Ks, mu, delta, ZT, w, alpha):
        N, Q = mu.shape
        M = ZT.shape[1]
        K = 2 * Q
        nblocks = (N + UT_BLOCK - 1) // UT_BLOCK
        dmu = np.empty((N, Q))
        ddelta = np.empty((N, Q))
        dZ_parts = np.zeros((nblocks, Q, M))
        dw_parts = np.zeros((nblocks, Q))
        dvar_parts = np.zeros(nblocks)
        dalpha_parts = np.zeros(nblocks)
        for b in nb.prange(nblocks):
            D = np.empty((Q, M))
            base = np.empty(M)
            r2 = np.empty(M)
            C = np.empty((K, M))
            Cb = np.empty(M)
            dZb = dZ_parts[b]
            dvar = 0.0
            dalpha = 0.0
            for n in range(b * UT_BLOCK, min(N, (b + 1) * UT_BLOCK)):
                dvar, dalpha = point_rows_vjp(kind, dKs[n], Ks[n], mu, delta, ZT, w, alpha, n,
                                              D, base, r2, C, Cb, dZb, dw_parts[b], dmu, ddelta,
                                              dvar, dalpha)
            dvar_parts[b] = dvar
            dalpha_parts[b] = dalpha
        dZT, dw, dlogvar, dlogalpha = sum_block_partials(dZ_parts, dw_parts, dvar_parts,
                                                         dalpha_parts)
        return dmu, ddelta, dZT.T.copy(), dw, dlogvar, dlogalpha

    return ut_stationary_vjp


# ----------------------------------------------------------- one chunk of the objective engine

@nb.njit(inline="always")
def _chunk_scratch(S, node, M):
    """``delta = node sqrt(S)``, the half-widths of the unscented points of a chunk's rows, and
    the per-row scratch ``(D, base)`` of :func:`point_rows` and :func:`point_rows_vjp`."""
    N, Q = S.shape
    delta = np.empty((N, Q))
    for n in range(N):
        for q in range(Q):
            delta[n, q] = node * np.sqrt(S[n, q])
    return delta, np.empty((Q, M)), np.empty(M)


@twin_jit_per_value(position=7, names=PROFILE_NAMES,
                    work=lambda syrk, mu, S, node, ZT, w, variance, alpha, weights, Y, Ks, Kw: 0)
def ut_chunk_stats(kind):
    """One chunk's ``(Ψ1ᵀY, Ψ2)`` at the unscented points; the kernel rows go into ``Ks``.

    Only its serial twin is called (the objective engine's chunk threads are the parallelism):
    the chunk's kernel rows, ``Ψ1 = Σ_k w_k Ks[:, k]``, the weighted rows ``Kw`` (scratch of the
    shape of ``Ks``) and the products ``Ψ1ᵀY`` and ``Kwᵀ Kw`` (BLAS; ``syrk`` is
    :data:`~sklearn_lvgp._core.blas_numba.DSYRK`) in one call that holds no GIL, where the point-set
    path makes about fifteen numpy calls per chunk.
    """
    def ut_chunk_stats(syrk, mu, S, node, ZT, w, variance, alpha, weights, Y, Ks, Kw):
        N, Q = mu.shape
        M = ZT.shape[1]
        delta, D, base = _chunk_scratch(S, node, M)
        Psi1 = np.zeros((N, M))
        for n in range(N):
            point_rows(kind, mu, delta, ZT, w, variance, alpha, n, D, base, Ks[n])
            for k in range(2 * Q):
                wk = weights[k]
                swk = np.sqrt(wk)
                Kk = Ks[n, k]
                Wk = Kw[n, k]
                for m in range(M):
                    Psi1[n, m] += wk * Kk[m]
                    Wk[m] = swk * Kk[m]
        Psi2 = np.empty((M, M))
        gram_inlined(syrk, Kw.reshape(N * 2 * Q, M), Psi2)
        return np.dot(Psi1.T, Y), Psi2

    return ut_chunk_stats


@twin_jit_per_value(position=8, names=PROFILE_NAMES,
                    work=lambda Ks, have_Ks, mu, S, node, ZT, w, variance, alpha, weights, Y,
                    dPY_T, dPsi2, dKs: 0)
def ut_chunk_grads(kind):
    """Backward pass of :func:`ut_chunk_stats` for the adjoints ``dPY_T`` ((dF/dΨ1ᵀY)ᵀ, D × M)
    and ``dPsi2``.

    ``Ks`` holds the chunk's kernel rows when ``have_Ks``, else they are recomputed into it;
    ``dKs`` (the shape of ``Ks``) is scratch. ``dKs[n, k] = w_k (Ks[n, k] (dΨ2 + dΨ2ᵀ) +
    y_n dPY_T)`` as in the point-set path, then :func:`point_rows_vjp` row by row. Returns
    ``dmu``, ``dS`` (0 where ``S`` is 0), ``dZ`` (M, Q), ``dw`` (wrt the inverse squared length
    scales), ``dlogvar`` and ``dlogalpha``. Serial twin only, as :func:`ut_chunk_stats`.
    """
    def ut_chunk_grads(Ks, have_Ks, mu, S, node, ZT, w, variance, alpha, weights, Y, dPY_T,
                       dPsi2, dKs):
        N, Q = mu.shape
        M = ZT.shape[1]
        K = 2 * Q
        delta, D, base = _chunk_scratch(S, node, M)
        if not have_Ks:
            for n in range(N):
                point_rows(kind, mu, delta, ZT, w, variance, alpha, n, D, base, Ks[n])
        G2 = np.empty((M, M))
        for i in range(M):
            for j in range(M):
                G2[i, j] = dPsi2[i, j] + dPsi2[j, i]
        np.dot(Ks.reshape(N * K, M), G2, dKs.reshape(N * K, M))
        dPsi1 = np.dot(Y, dPY_T)
        for n in range(N):
            for k in range(K):
                wk = weights[k]
                dKk = dKs[n, k]
                for m in range(M):
                    dKk[m] = (dKk[m] + dPsi1[n, m]) * wk
        dmu = np.empty((N, Q))
        ddelta = np.empty((N, Q))
        dZT = np.zeros((Q, M))
        dw = np.zeros(Q)
        r2 = np.empty(M)
        C = np.empty((K, M))
        Cb = np.empty(M)
        dvar = 0.0
        dalpha = 0.0
        for n in range(N):
            dvar, dalpha = point_rows_vjp(kind, dKs[n], Ks[n], mu, delta, ZT, w, alpha, n, D,
                                          base, r2, C, Cb, dZT, dw, dmu, ddelta, dvar, dalpha)
        dS = np.empty((N, Q))
        for n in range(N):
            for q in range(Q):
                s = np.sqrt(S[n, q])
                dS[n, q] = ddelta[n, q] * node / (2.0 * s) if s > 0.0 else 0.0
        return dmu, dS, dZT.T.copy(), dw, dvar, dalpha

    return ut_chunk_grads
