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
"""

import numba as nb
import numpy as np

from .._jit import twin_jit
from ..kernels._kernels_numba import _profile

__all__ = ["ut_stationary_K", "ut_stationary_vjp", "UT_BLOCK"]

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


@twin_jit(work=lambda mu, delta, ZT, w, variance, kind, alpha, Ks, Gs, Ga: Ks.size * 4)
def ut_stationary_K(mu, delta, ZT, w, variance, kind, alpha, Ks, Gs, Ga):
    """Kernel rows of the ``2Q`` unscented points of every row, written into ``Ks`` (N, 2Q, M).

    Also writes ``Gs = variance dg/dr2`` (same shape), the slope the backward pass needs, and,
    when ``Ga`` has the shape of ``Ks`` (the rational quadratic), ``Ga = variance dg/dlog alpha``.
    ``w`` holds the inverse squared length scales (Q,).
    """
    N, Q = mu.shape
    M = ZT.shape[1]
    with_alpha = Ga.shape[0] == N
    for b in nb.prange((N + UT_BLOCK - 1) // UT_BLOCK):
        D = np.empty((Q, M))
        base = np.empty(M)
        for n in range(b * UT_BLOCK, min(N, (b + 1) * UT_BLOCK)):
            _centre_rows(mu, n, ZT, w, D, base)
            for q in range(Q):
                dq = delta[n, q]
                wq = w[q]
                for half in range(2):
                    s = 1.0 if half == 0 else -1.0
                    k = q + half * Q
                    for m in range(M):
                        r2 = base[m] + wq * dq * (2.0 * s * D[q, m] + dq)
                        g, slope, ga = _profile(kind, max(r2, 0.0), alpha)
                        Ks[n, k, m] = variance * g
                        Gs[n, k, m] = variance * slope
                        if with_alpha:
                            Ga[n, k, m] = variance * ga


@twin_jit(work=lambda dKs, Ks, Gs, Ga, mu, delta, ZT, w: dKs.size * 4)
def ut_stationary_vjp(dKs, Ks, Gs, Ga, mu, delta, ZT, w):
    """Backward pass of :func:`ut_stationary_K` given ``dKs`` (N, 2Q, M).

    Returns ``dmu``, ``ddelta`` (N, Q), ``dZ`` (M, Q), ``dw`` (Q,) (wrt the inverse squared
    length scales), ``dlogvar`` and ``dlogalpha`` (zero unless ``Ga`` is given). With
    ``C = dKs Gs`` (the adjoint of ``r2``) and ``Cb[m] = sum_k C[k, m]`` (of ``b_nm``):
    ``d d_nmq = 2 w_q d Cb + 2 w_q delta sum_s s C[(q, s), m]``,
    ``d delta_nq = 2 w_q sum_m sum_s C[(q, s), m] (s d + delta)``,
    ``d w_q = sum_m (Cb d² + sum_s C[(q, s), m] delta (2 s d + delta))``;
    ``dmu = sum_m d d``, ``dZ = -sum_n d d``.
    """
    N, Q = mu.shape
    M = ZT.shape[1]
    K = 2 * Q
    with_alpha = Ga.shape[0] == N
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
        C = np.empty((K, M))
        Cb = np.empty(M)
        dZb = dZ_parts[b]
        dvar = 0.0
        dalpha = 0.0
        for n in range(b * UT_BLOCK, min(N, (b + 1) * UT_BLOCK)):
            _centre_rows(mu, n, ZT, w, D, base)
            for m in range(M):
                Cb[m] = 0.0
            for k in range(K):
                for m in range(M):
                    a = dKs[n, k, m]
                    c = a * Gs[n, k, m]
                    C[k, m] = c
                    Cb[m] += c
                    dvar += a * Ks[n, k, m]
                    if with_alpha:
                        dalpha += a * Ga[n, k, m]
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
                    dZb[q, m] -= dd
                    gdelta += d * diff + dq * both
                    gw += Cb[m] * d * d + dq * (2.0 * d * diff + dq * both)
                dmu[n, q] = gmu
                ddelta[n, q] = 2.0 * wq * gdelta
                dw_parts[b, q] += gw
        dvar_parts[b] = dvar
        dalpha_parts[b] = dalpha
    dZT = np.zeros((Q, M))
    dw = np.zeros(Q)
    dlogvar = 0.0
    dlogalpha = 0.0
    for b in range(nblocks):
        dZT += dZ_parts[b]
        dw += dw_parts[b]
        dlogvar += dvar_parts[b]
        dlogalpha += dalpha_parts[b]
    return dmu, ddelta, dZT.T.copy(), dw, dlogvar, dlogalpha
