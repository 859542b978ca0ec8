"""Jitted pairwise loops of the kernels and their backward contractions.

Rules (see ``doc/developers.rst``): ``prange`` over output rows or over fixed-size row blocks;
reductions over rows go to per-block partial sums whose number depends only on the problem size,
then are summed serially — so results are bit-identical for any thread count. No ``fastmath``.
"""

import numba as nb
import numpy as np

from .._compile.jit import twin_jit, twin_jit_per_value
from .._compile.vexp_numba import vexp

ROW_BLOCK = 128


# ----------------------------------------------------------------------- stationary kernels
# A stationary kernel is variance * g(r2) with r2 = sum_q ((x_q - z_q) / l_q)^2 and g(0) = 1.
# ``kind`` selects the profile g. The forward pass is one loop vectorised along Z
# (``stationary_K``); the backward pass from K is one vectorised pass for the weights
# (``stationary_slope_weights``) followed by products in ``_stationary.py``, except for Matérn 1/2,
# whose backward is one fused loop over (n, m) (``stationary_K_vjp``, also the tests' reference).
RBF_KIND, MATERN12_KIND, MATERN32_KIND, MATERN52_KIND, RQ_KIND = 0, 1, 2, 3, 4
#: Name of each profile: the jitted functions that take ``kind`` are compiled once per profile,
#: ``kind`` a constant in each (:func:`sklearn_lvgp._compile.jit.twin_jit_per_value`), so a fit
#: compiles
#: only the loops of the profile it uses.
PROFILE_NAMES = {RBF_KIND: "rbf", MATERN12_KIND: "matern12", MATERN32_KIND: "matern32",
                 MATERN52_KIND: "matern52", RQ_KIND: "rq"}


@nb.njit(inline="always")
def _profile(kind, r2, alpha):
    """``(g, dg/dr2, dg/dlog(alpha))`` of the profile ``kind`` at ``r2``."""
    if kind == RBF_KIND:
        g = vexp(-0.5 * r2)
        return g, -0.5 * g, 0.0
    if kind == MATERN12_KIND:
        r = np.sqrt(r2)
        g = vexp(-r)
        # not differentiable at r = 0; the zero subgradient is used there
        return g, (-0.5 * g / r if r > 0.0 else 0.0), 0.0
    if kind == MATERN32_KIND:
        r = np.sqrt(3.0 * r2)
        e = vexp(-r)
        return (1.0 + r) * e, -1.5 * e, 0.0
    if kind == MATERN52_KIND:
        r = np.sqrt(5.0 * r2)
        e = vexp(-r)
        return (1.0 + r + 5.0 * r2 / 3.0) * e, -(5.0 / 6.0) * (1.0 + r) * e, 0.0
    t = r2 / (2.0 * alpha)
    base = 1.0 + t
    g = base ** (-alpha)
    return g, -0.5 * g / base, alpha * g * (-np.log(base) + t / base)


@nb.njit(inline="always")
def _scaled_sq_dist_row(X, n, ZT, inv_ls, row):
    """``row[m] = sum_q ((X[n, q] - ZT[q, m]) * inv_ls[q])^2`` with ``m`` innermost."""
    M = row.shape[0]
    for m in range(M):
        row[m] = 0.0
    for q in range(X.shape[1]):
        xq = X[n, q]
        s = inv_ls[q]
        for m in range(M):
            d = (xq - ZT[q, m]) * s
            row[m] += d * d


#: Rows per parallel task of :func:`stationary_slope_weights` (each task has one scratch row).
_WEIGHT_BLOCK = 16


@nb.njit(inline="always")
def _profile_row(kind, row, variance, alpha):
    """Replace ``row[m] = r2`` by ``variance * g(r2)`` in place.

    One loop per profile, so each vectorises (:func:`vexp` is plain arithmetic).
    """
    M = row.shape[0]
    if kind == RBF_KIND:
        for m in range(M):
            row[m] = variance * vexp(-0.5 * row[m])
    elif kind == MATERN12_KIND:
        for m in range(M):
            row[m] = variance * vexp(-np.sqrt(row[m]))
    elif kind == MATERN32_KIND:
        for m in range(M):
            r = np.sqrt(3.0 * row[m])
            row[m] = variance * ((1.0 + r) * vexp(-r))
    elif kind == MATERN52_KIND:
        for m in range(M):
            r2 = row[m]
            r = np.sqrt(5.0 * r2)
            row[m] = variance * ((1.0 + r + 5.0 * r2 / 3.0) * vexp(-r))
    else:
        for m in range(M):
            row[m] = variance * (1.0 + row[m] / (2.0 * alpha)) ** (-alpha)


@twin_jit_per_value(position=4, names=PROFILE_NAMES,
                    work=lambda X, ZT, *rest: 2 * X.shape[0] * ZT.shape[1] * X.shape[1])
def stationary_K(kind):
    """``K[n, m] = variance * g(r2(x_n, z_m))``, written into ``out`` (N, M), C-contiguous.

    ``ZT`` is ``Z`` transposed (``(Q, M)``, C-contiguous): per row ``n`` the squared distances
    are accumulated with ``m`` innermost and the profile is applied along the row, so both loops
    vectorise. The caller owns ``out`` (a new array, or a buffer reused across evaluations).
    """
    def stationary_K(X, ZT, inv_ls, variance, alpha, out):
        N = X.shape[0]
        for n in nb.prange(N):
            row = out[n]
            _scaled_sq_dist_row(X, n, ZT, inv_ls, row)
            _profile_row(kind, row, variance, alpha)
        return out

    return stationary_K


@nb.njit(inline="always")
def slope_weight_row(kind, dK, K, r2, alpha, scale, C):
    """``C[m] = scale dK[m] variance dg/dr2`` along a row, from the kernel row ``K = variance g``
    and its ``r2`` (no ``exp``); returns ``sum_m dK[m] variance dg/dlog(alpha)`` (the rational
    quadratic's, else 0). One loop per profile, its branch outside, so each vectorises. ``C``
    may be ``dK``: each entry of ``dK`` is read before the same entry of ``C`` is written.
    Matérn 1/2 uses the zero subgradient at ``r = 0``. Used by :func:`stationary_slope_weights`
    (``scale = 2``) and by the unscented axis points (``expectations/_ut_numba.py``, ``scale = 1``).
    """
    M = C.shape[0]
    da = 0.0
    if kind == RBF_KIND:  # dg/dr2 = -g / 2
        c = -0.5 * scale
        for m in range(M):
            C[m] = c * dK[m] * K[m]
    elif kind == MATERN12_KIND:  # dg/dr2 = -g / (2r)
        c = -0.5 * scale
        for m in range(M):
            r = np.sqrt(r2[m])
            C[m] = c * dK[m] * K[m] / r if r > 0.0 else 0.0
    elif kind == MATERN32_KIND:
        c = -1.5 * scale
        for m in range(M):
            C[m] = c * dK[m] * K[m] / (1.0 + np.sqrt(3.0 * r2[m]))
    elif kind == MATERN52_KIND:
        c = -(5.0 / 6.0) * scale
        for m in range(M):
            r = np.sqrt(5.0 * r2[m])
            C[m] = c * dK[m] * K[m] * (1.0 + r) / (1.0 + r + 5.0 * r2[m] / 3.0)
    else:  # rational quadratic
        c = -0.5 * scale
        for m in range(M):
            t = r2[m] / (2.0 * alpha)
            base = 1.0 + t
            wk = dK[m] * K[m]
            da += wk * alpha * (t / base - np.log(base))
            C[m] = c * wk / base
    return da


@twin_jit_per_value(position=5, names=PROFILE_NAMES,
                    work=lambda dK, K, X, ZT, *rest: 2 * X.shape[0] * ZT.shape[1] * X.shape[1])
def stationary_slope_weights(kind):
    """Weights ``C = 2 dK variance dg/dr2`` of the product backward, from the forward ``K``.

    Every input adjoint of a stationary kernel is a weighted sum of ``x_n - z_m`` (or its square)
    with these weights (``kernels/_stationary._stationary_vjp_from_weights``). Per row the
    squared distances are recomputed with ``m`` innermost, so the pass vectorises; no ``exp``
    is evaluated. Not for Matérn 1/2, whose slope is unbounded at ``r = 0``. ``C`` (shape of
    ``dK``) receives the weights and may be ``dK`` itself: each entry of ``dK`` is read before
    the same entry of ``C`` is written, and the distances go to a scratch row. Also returns
    ``sum dK variance dg/dlog(alpha)`` (non-zero for the rational quadratic only). ``kind`` is
    a constant in each compilation, so the profile's branch is taken outside the loops and
    every loop vectorises.
    """
    def stationary_slope_weights(dK, K, X, ZT, inv_ls, alpha, C):
        N = X.shape[0]
        M = ZT.shape[1]
        da_rows = np.zeros(N)
        nbk = (N + _WEIGHT_BLOCK - 1) // _WEIGHT_BLOCK
        if kind == RBF_KIND:  # dg/dr2 = -g / 2: no distances needed
            for n in nb.prange(N):
                for m in range(M):
                    C[n, m] = -dK[n, m] * K[n, m]
        elif kind == MATERN12_KIND:
            raise ValueError("stationary_slope_weights: no product backward for Matérn 1/2 "
                             "(it uses stationary_K_vjp)")
        else:
            for b in nb.prange(nbk):
                r2 = np.empty(M)
                for n in range(b * _WEIGHT_BLOCK, min(N, (b + 1) * _WEIGHT_BLOCK)):
                    _scaled_sq_dist_row(X, n, ZT, inv_ls, r2)
                    da_rows[n] = slope_weight_row(kind, dK[n], K[n], r2, alpha, 2.0, C[n])
        da = 0.0
        for n in range(N):
            da += da_rows[n]
        return C, da

    return stationary_slope_weights


@nb.njit(inline="always")
def _profile_slope(kind, r2, g, alpha):
    """``(dg/dr2, dg/dlog(alpha))`` of the profile ``kind`` given its value ``g`` at ``r2``."""
    if kind == RBF_KIND:
        return -0.5 * g, 0.0
    if kind == MATERN12_KIND:
        r = np.sqrt(r2)
        # not differentiable at r = 0; the zero subgradient is used there
        return (-0.5 * g / r if r > 0.0 else 0.0), 0.0
    if kind == MATERN32_KIND:
        r = np.sqrt(3.0 * r2)
        return -1.5 * g / (1.0 + r), 0.0
    if kind == MATERN52_KIND:
        r = np.sqrt(5.0 * r2)
        return -(5.0 / 6.0) * (1.0 + r) * g / (1.0 + r + 5.0 * r2 / 3.0), 0.0
    t = r2 / (2.0 * alpha)
    base = 1.0 + t
    return -0.5 * g / base, alpha * g * (-np.log(base) + t / base)


@twin_jit_per_value(position=6, names=PROFILE_NAMES,
                    work=lambda dK, K, X, Z, *rest: 3 * X.shape[0] * Z.shape[0] * X.shape[1])
def stationary_K_vjp(kind):
    """Backward pass of :func:`stationary_K` given ``dK = dL/dK``.

    Returns ``dX`` (N, Q), ``dZ`` (M, Q), ``dlogls`` (Q,), ``dlogvar`` and ``dlogalpha``
    (gradients wrt ``log`` of each length scale, of the variance and of alpha). With ``cached``
    the profile's value comes from the forward matrix ``K`` and no ``exp`` (or ``pow``) is
    re-evaluated; otherwise ``K`` is ignored and the profile is recomputed (equal to round-off).
    """
    def stationary_K_vjp(dK, K, X, Z, inv_ls, variance, alpha, cached):
        N, Q = X.shape
        M = Z.shape[0]
        nb_ = max(1, (N + ROW_BLOCK - 1) // ROW_BLOCK)
        dX = np.zeros((N, Q))
        dZ_part = np.zeros((nb_, M, Q))
        dl_part = np.zeros((nb_, Q))
        dv_part = np.zeros(nb_)
        da_part = np.zeros(nb_)
        inv2 = np.empty(Q)
        for q in range(Q):
            inv2[q] = inv_ls[q] * inv_ls[q]
        inv_var = 1.0 / variance
        for b in nb.prange(nb_):
            lo = b * ROW_BLOCK
            hi = min(N, lo + ROW_BLOCK)
            for n in range(lo, hi):
                for m in range(M):
                    w = dK[n, m]
                    if w == 0.0:
                        continue
                    r2 = 0.0
                    for q in range(Q):
                        d = (X[n, q] - Z[m, q]) * inv_ls[q]
                        r2 += d * d
                    if cached:
                        g = K[n, m] * inv_var
                        dg, dga = _profile_slope(kind, r2, g, alpha)
                    else:
                        g, dg, dga = _profile(kind, r2, alpha)
                    dv_part[b] += w * variance * g
                    da_part[b] += w * variance * dga
                    c = 2.0 * w * variance * dg
                    for q in range(Q):
                        d = X[n, q] - Z[m, q]
                        t = c * d * inv2[q]
                        dX[n, q] += t
                        dZ_part[b, m, q] -= t
                        dl_part[b, q] -= t * d
        dZ, dl, dv, da = sum_block_partials(dZ_part, dl_part, dv_part, da_part)
        return dX, dZ, dl, dv, da

    return stationary_K_vjp


@nb.njit(inline="always")
def sum_block_partials(A_parts, v_parts, s_parts, t_parts):
    """Sums over the leading (block) axis, block by block in order: the serial end of a
    reduction over row blocks (the same order for any thread count). ``A_parts`` is 3-D and
    ``v_parts`` 2-D; explicit loops, as array expressions each compile a kernel of their own."""
    nblocks, R, C = A_parts.shape
    A = np.zeros((R, C))
    v = np.zeros(v_parts.shape[1])
    s = 0.0
    t = 0.0
    for b in range(nblocks):
        for i in range(R):
            for j in range(C):
                A[i, j] += A_parts[b, i, j]
        for i in range(v.shape[0]):
            v[i] += v_parts[b, i]
        s += s_parts[b]
        t += t_parts[b]
    return A, v, s, t


@twin_jit(work=lambda X, Z, *rest: 4 * X.shape[0] * Z.shape[0] * X.shape[1])
def periodic_forward(X, Z, period, length_scale, variance):
    """Periodic kernel matrix ``K[n, m]`` with one period and one length scale for all dims."""
    N, Q = X.shape
    M = Z.shape[0]
    w = np.pi / period
    inv2 = 1.0 / (length_scale * length_scale)
    out = np.empty((N, M))
    for n in nb.prange(N):
        for m in range(M):
            acc = 0.0
            for q in range(Q):
                s = np.sin(w * (X[n, q] - Z[m, q]))
                acc += s * s
            out[n, m] = variance * vexp(-0.5 * inv2 * acc)
    return out


@twin_jit(work=lambda G, X, Z, *rest: 4 * G.size * X.shape[1])
def periodic_backward(G, X, Z, period, length_scale):
    """Backward pass of :func:`periodic_forward` given ``G = dL/dK * K`` (elementwise).

    Returns ``dX`` (N, Q), ``dZ`` (M, Q), ``dlogp`` and ``dlogl`` (scalars), using
    ``dk/dx_q = -k pi sin(2 pi d_q / p) / (2 p l^2)``,
    ``dk/dlog p = k pi sum_q d_q sin(2 pi d_q / p) / (2 p l^2)`` and
    ``dk/dlog l = k sum_q sin^2(pi d_q / p) / l^2``.
    """
    N, Q = X.shape
    M = Z.shape[0]
    nb_ = max(1, (N + ROW_BLOCK - 1) // ROW_BLOCK)
    w = np.pi / period
    inv2 = 1.0 / (length_scale * length_scale)
    dX = np.zeros((N, Q))
    dZ_part = np.zeros((nb_, M, Q))
    dp_part = np.zeros(nb_)
    dl_part = np.zeros(nb_)
    for b in nb.prange(nb_):
        lo = b * ROW_BLOCK
        hi = min(N, lo + ROW_BLOCK)
        for n in range(lo, hi):
            for m in range(M):
                g = G[n, m]
                if g == 0.0:
                    continue
                for q in range(Q):
                    d = X[n, q] - Z[m, q]
                    s = np.sin(w * d)
                    c = np.cos(w * d)
                    t = g * w * s * c * inv2
                    dX[n, q] -= t
                    dZ_part[b, m, q] += t
                    dp_part[b] += t * d
                    dl_part[b] += g * s * s * inv2
    dZ = np.zeros((M, Q))
    dp = 0.0
    dl = 0.0
    for b in range(nb_):
        dZ += dZ_part[b]
        dp += dp_part[b]
        dl += dl_part[b]
    return dX, dZ, dp, dl


@nb.njit(cache=True, nogil=True)
def stationary_vjp_products(C, X, Z, inv_ls):
    """Adjoints of a stationary kernel from its weights ``C = 2 dK variance dg/dr2`` (N, M).

    ``dX = (Xc rowsum(C) - C Zc) / l^2``, ``dZ = (Zc colsum(C) - Cᵀ Xc) / l^2`` and
    ``d/dlog l = (2 sum Xc (C Zc) - rowsum(C) Xc² - colsum(C) Zc²) / l^2``, with both inputs
    centred on the mean of ``Z`` (the kernel is translation invariant, and centring keeps the
    expanded squares from cancelling far from the origin). The two ``(N, M) x (M or N, Q)``
    sums are BLAS products; the rest is one pass over ``C`` and one over the inputs. Returns
    ``dX`` (N, Q), ``dZ`` (M, Q), ``dlogls`` (Q,) and ``sum(C)``.
    """
    N, M = C.shape
    Q = X.shape[1]
    centre = np.zeros(Q)
    for m in range(M):
        for q in range(Q):
            centre[q] += Z[m, q]
    for q in range(Q):
        centre[q] /= max(M, 1)
    Xc = np.empty((N, Q))
    for n in range(N):
        for q in range(Q):
            Xc[n, q] = X[n, q] - centre[q]
    Zc = np.empty((M, Q))
    for m in range(M):
        for q in range(Q):
            Zc[m, q] = Z[m, q] - centre[q]
    r = np.zeros(N)
    c = np.zeros(M)
    for n in range(N):
        acc = 0.0
        for m in range(M):
            v = C[n, m]
            acc += v
            c[m] += v
        r[n] = acc
    CZ = np.dot(C, Zc)
    CtX = np.dot(C.T, Xc)
    inv2 = np.empty(Q)
    for q in range(Q):
        inv2[q] = inv_ls[q] * inv_ls[q]
    dX = np.empty((N, Q))
    dlogls = np.zeros(Q)
    total = 0.0
    for n in range(N):
        total += r[n]
        for q in range(Q):
            x = Xc[n, q]
            dX[n, q] = (x * r[n] - CZ[n, q]) * inv2[q]
            dlogls[q] += 2.0 * x * CZ[n, q] - r[n] * x * x
    dZ = np.empty((M, Q))
    for m in range(M):
        for q in range(Q):
            z = Zc[m, q]
            dZ[m, q] = (z * c[m] - CtX[m, q]) * inv2[q]
            dlogls[q] -= c[m] * z * z
    for q in range(Q):
        dlogls[q] *= inv2[q]
    return dX, dZ, dlogls, total
