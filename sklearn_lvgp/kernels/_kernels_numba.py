"""Jitted pairwise loops of the kernels and their backward contractions.

Rules (see ``doc/developers.rst``): ``prange`` over output rows or over fixed-size row blocks;
reductions over rows go to per-block partial sums whose number depends only on the problem size,
then are summed serially — so results are bit-identical for any thread count. No ``fastmath``.
"""

import numba as nb
import numpy as np

from .._jit import twin_jit

ROW_BLOCK = 128


def n_blocks(n_rows):
    """Number of fixed-size row blocks for ``n_rows`` rows."""
    return max(1, (n_rows + ROW_BLOCK - 1) // ROW_BLOCK)


@twin_jit(work=lambda X, Z, *rest: X.shape[0] * Z.shape[0] * X.shape[1])
def scaled_sqdist(X, Z, inv_ls):
    """``r2[n, m] = sum_q ((X[n, q] - Z[m, q]) * inv_ls[q])**2``."""
    N, Q = X.shape
    M = Z.shape[0]
    out = np.empty((N, M))
    for n in nb.prange(N):
        for m in range(M):
            acc = 0.0
            for q in range(Q):
                d = (X[n, q] - Z[m, q]) * inv_ls[q]
                acc += d * d
            out[n, m] = acc
    return out


@twin_jit(work=lambda G, X, Z, *rest: G.size * X.shape[1])
def stationary_backward(G, X, Z, inv_ls):
    """Chain rule through ``r2`` given ``G = dL/dr2`` (shared by all stationary kernels).

    Returns ``dX`` (N, Q), ``dZ`` (M, Q) and ``dlogls`` (Q,): the gradient wrt the log of each
    length scale (``d r2 / d log l_q = -2 (x_q - z_q)^2 / l_q^2``).
    """
    N, Q = X.shape
    M = Z.shape[0]
    nb_ = max(1, (N + ROW_BLOCK - 1) // ROW_BLOCK)
    dX = np.zeros((N, Q))
    dZ_part = np.zeros((nb_, M, Q))
    dl_part = np.zeros((nb_, Q))
    inv2 = inv_ls * inv_ls
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
                    t = 2.0 * g * d * inv2[q]
                    dX[n, q] += t
                    dZ_part[b, m, q] -= t
                    dl_part[b, q] -= t * d
    dZ = np.zeros((M, Q))
    dl = np.zeros(Q)
    for b in range(nb_):
        dZ += dZ_part[b]
        dl += dl_part[b]
    return dX, dZ, dl


# --------------------------------------------------------------------------------- profiles
# Each profile maps the squared scaled distance r2 to g(r2) with g(0) = 1, and returns the pair
# (g, dg/dr2) elementwise. The kernel is variance * g.

@twin_jit(work=lambda r2, *rest: 4 * r2.size)
def rbf_profile(r2):
    N, M = r2.shape
    g = np.empty((N, M))
    dg = np.empty((N, M))
    for n in nb.prange(N):
        for m in range(M):
            v = np.exp(-0.5 * r2[n, m])
            g[n, m] = v
            dg[n, m] = -0.5 * v
    return g, dg


@twin_jit(work=lambda r2, *rest: 4 * r2.size)
def matern12_profile(r2):
    N, M = r2.shape
    g = np.empty((N, M))
    dg = np.empty((N, M))
    for n in nb.prange(N):
        for m in range(M):
            r = np.sqrt(r2[n, m])
            v = np.exp(-r)
            g[n, m] = v
            # not differentiable at r = 0; the zero subgradient is used there
            dg[n, m] = -0.5 * v / r if r > 0.0 else 0.0
    return g, dg


@twin_jit(work=lambda r2, *rest: 4 * r2.size)
def matern32_profile(r2):
    s3 = np.sqrt(3.0)
    N, M = r2.shape
    g = np.empty((N, M))
    dg = np.empty((N, M))
    for n in nb.prange(N):
        for m in range(M):
            r = np.sqrt(r2[n, m])
            e = np.exp(-s3 * r)
            g[n, m] = (1.0 + s3 * r) * e
            dg[n, m] = -1.5 * e
    return g, dg


@twin_jit(work=lambda r2, *rest: 4 * r2.size)
def matern52_profile(r2):
    s5 = np.sqrt(5.0)
    N, M = r2.shape
    g = np.empty((N, M))
    dg = np.empty((N, M))
    for n in nb.prange(N):
        for m in range(M):
            rr = r2[n, m]
            r = np.sqrt(rr)
            e = np.exp(-s5 * r)
            g[n, m] = (1.0 + s5 * r + 5.0 * rr / 3.0) * e
            dg[n, m] = -(5.0 / 6.0) * (1.0 + s5 * r) * e
    return g, dg


@twin_jit(work=lambda r2, *rest: 4 * r2.size)
def rq_profile(r2, alpha):
    N, M = r2.shape
    g = np.empty((N, M))
    dg = np.empty((N, M))
    dalpha = np.empty((N, M))  # d g / d log(alpha)
    for n in nb.prange(N):
        for m in range(M):
            t = r2[n, m] / (2.0 * alpha)
            base = 1.0 + t
            v = base ** (-alpha)
            g[n, m] = v
            dg[n, m] = -0.5 * v / base
            dalpha[n, m] = alpha * v * (-np.log(base) + t / base)
    return g, dg, dalpha


# --------------------------------------------------------------------------------- periodic
# k(x, z) = variance * exp(-0.5 * sum_q sin^2(pi (x_q - z_q) / p) / l^2)   (spec §4, one p, one l)

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
            out[n, m] = variance * np.exp(-0.5 * inv2 * acc)
    return out


@twin_jit(work=lambda G, X, Z, *rest: 4 * G.size * X.shape[1])
def periodic_backward(G, X, Z, period, length_scale):
    """Backward pass of :func:`periodic_forward` given ``G = dL/dK * K`` (elementwise).

    Returns ``dX`` (N, Q), ``dZ`` (M, Q), ``dlogp`` and ``dlogl`` (scalars), using (spec §4)
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
