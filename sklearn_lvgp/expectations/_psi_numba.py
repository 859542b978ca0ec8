"""Jitted loops of the closed-form Ψ-statistics (RBF Ψ1, RBF×linear) and their backward.

Rules (see ``doc/developers.rst``): forward passes parallelise over output entries (rows ``n`` of
Ψ1, columns ``m`` of the tilted RBF×linear sums) with any sum over ``n`` done serially inside,
so every entry is computed in a fixed order; backward passes parallelise over fixed-size blocks
of ``PSI_BLOCK`` rows, write per-row adjoints directly and reduce the rest into per-block partials
that are summed serially. Results are therefore bit-identical for any thread count. No ``fastmath``.

Everything is evaluated in log space: a Ψ entry is ``exp(constant + per-row term + per-pair term
- quadratic form)``, never a product of separately rounded factors that could underflow.

The two-RBF Ψ2 matrices (Ψ2 of one RBF and the RBF×RBF cross term) are assembled in
:mod:`._two_rbf` from the loops of :mod:`._two_rbf_numba`. The backward pass of the RBF Ψ1 is
BLAS products between a serial jitted pass that forms their operands and one that turns the sums
into adjoints (``rbf_psi1_factors`` and ``rbf_psi1_assemble``; the two-RBF backward ends in
``two_rbf_assemble`` the same way), which beats a fused row-block loop (``doc/developers.rst``,
"Where a product beats a loop"). With BLAS at one thread (as inside
the estimators) these results do not depend on ``n_jobs`` either.
``exp`` is :func:`~sklearn_lvgp._compile.vexp_numba.vexp` throughout, so the loops over ``m``
(pairs)
vectorise.
"""

import numba as nb
import numpy as np

from .._compile.jit import twin_jit
from .._compile.vexp_numba import vexp, vlog1p, wide_vectors

PSI_BLOCK = 64


@nb.njit(cache=True, nogil=True)
def n_blocks(n_rows):
    """Number of fixed-size row blocks of ``PSI_BLOCK`` rows for ``n_rows`` rows."""
    return max(1, (n_rows + PSI_BLOCK - 1) // PSI_BLOCK)


@nb.njit(inline="always")
def _half_weighted_sq_dist_row(mu, W, n, CT, row):
    """``row[p] = -0.5 sum_q W[n, q] (mu[n, q] - CT[q, p])^2`` with ``p`` innermost.

    The kernels' ``_scaled_sq_dist_row`` has the same shape with per-dimension weights; one
    helper for both, taking row views, made the Matérn weight pass markedly slower.
    """
    P = row.shape[0]
    for p in range(P):
        row[p] = 0.0
    for q in range(mu.shape[1]):
        h = -0.5 * W[n, q]
        x = mu[n, q]
        for p in range(P):
            d = x - CT[q, p]
            row[p] += h * d * d


@nb.njit(cache=True, nogil=True, error_model="numpy")
def _precision_rows(S, tau, offset, scale):
    """``1 / (tau + S)`` (N, Q) and ``offset + scale sum_q log1p(S[n, q] / tau_q)`` (N,): the
    per-row terms of a Gaussian expectation of an RBF factor with squared length ``tau``.

    ``log1p`` keeps full relative accuracy as ``S -> 0`` (near-deterministic inputs). It is
    :func:`~sklearn_lvgp._compile.vexp_numba.vlog1p` over all ``N Q`` ratios in one vectorised loop
    (the C
    library's scalar ``log1p`` does not vectorise), then summed over ``q`` in order.
    ``error_model="numpy"``: a division by zero gives inf instead of a Python exception, so numba
    inserts no check that would stop the loops vectorising (``S`` and ``tau`` are validated as
    non-negative and positive before). The log of a running product (one ``log`` per row) was tried
    before: it loses the accuracy as ``S -> 0``, and it moved the DVMGP synthetic fit (de Souza
    2020, Table 4) of the default suite to another optimum (higher ELBO, worse test NLPD).
    """
    wide_vectors()
    N, Q = S.shape
    P = np.empty((N, Q))
    L = np.empty((N, Q))
    inv_tau = np.empty(Q)
    for q in range(Q):
        inv_tau[q] = 1.0 / tau[q]
    for n in range(N):
        for q in range(Q):
            P[n, q] = 1.0 / (tau[q] + S[n, q])
            L[n, q] = S[n, q] * inv_tau[q]
    flat = L.reshape(N * Q)
    for i in range(flat.size):
        flat[i] = vlog1p(flat[i])
    logk = np.empty(N)
    for n in range(N):
        acc = 0.0
        for q in range(Q):
            acc += L[n, q]
        logk[n] = offset + scale * acc
    return P, logk


# ------------------------------------------------------------------------------------ RBF Ψ1

@nb.njit(inline="always")
def _column_means(A):
    """Mean of each column of ``A`` (R, C); zeros when ``R = 0``."""
    R, C = A.shape
    out = np.zeros(C)
    for i in range(R):
        for j in range(C):
            out[j] += A[i, j]
    if R:
        for j in range(C):
            out[j] /= R
    return out


@nb.njit(cache=True, nogil=True)
def rbf_psi1_row_terms(lam, log_var, S):
    """``B = 1 / (lam + S)`` (N, Q) and ``logk1 = log var - 0.5 sum_q log1p(S / lam)`` (N,)."""
    return _precision_rows(S, lam, log_var, -0.5)


@nb.njit(cache=True, nogil=True)
def _vexp_inplace(x, lo, hi):
    """``x[lo:hi] = exp(x[lo:hi])`` in 512-bit vectors where the CPU has them.

    A function of its own: the wide-vector mark applies to a whole function, and the short
    rows of its callers' other loops are faster at LLVM's default width.
    """
    wide_vectors()
    y = x[lo:hi]  # a loop from 0 over a view: numba's negative-index check then folds away
    for i in range(y.size):
        y[i] = vexp(y[i])


#: Rows per parallel task of the ``exp`` pass of :func:`rbf_psi1`.
_EXP_BLOCK_ROWS = 64


@twin_jit(work=lambda mu, ZT, *rest: mu.shape[0] * ZT.shape[1] * mu.shape[1])
def rbf_psi1(mu, ZT, B, logk1):
    """``Psi1[n, m] = exp(logk1[n] - 0.5 sum_q B[n, q] (mu[n, q] - Z[m, q])^2)``.

    ``B = 1 / (lam + S)`` and ``logk1[n] = log var + 0.5 sum_q log(lam_q B[n, q])``.
    ``ZT`` is ``Z`` transposed (``(Q, M)``, C-contiguous) so the loops over ``m`` vectorise.
    """
    N = mu.shape[0]
    M = ZT.shape[1]
    out = np.empty((N, M))
    for n in nb.prange(N):
        row = out[n]
        _half_weighted_sq_dist_row(mu, B, n, ZT, row)
        c = logk1[n]
        for m in range(M):
            row[m] += c
    # exp over blocks of whole rows: a row of M ~ 20 is too short for 512-bit vectors
    flat = out.reshape(N * M)
    step = _EXP_BLOCK_ROWS * M
    for b in nb.prange((N + _EXP_BLOCK_ROWS - 1) // _EXP_BLOCK_ROWS):
        _vexp_inplace(flat, b * step, min(N * M, (b + 1) * step))
    return out


@nb.njit(inline="always")
def _sum4(x):
    """``sum(x)`` in four interleaved partial sums, combined as ``(a0 + a1) + (a2 + a3)``.

    A fixed order (the same bits every call), with four independent chains instead of one: a
    plain loop reduction does not vectorise without ``fastmath`` and waits on every add.
    """
    n = x.shape[0]
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    m = 0
    while m + 4 <= n:
        a0 += x[m]
        a1 += x[m + 1]
        a2 += x[m + 2]
        a3 += x[m + 3]
        m += 4
    while m < n:
        a0 += x[m]
        m += 1
    return (a0 + a1) + (a2 + a3)


@nb.njit(cache=True, nogil=True)
def rbf_psi1_factors(mu, B, Z, A, Psi1):
    """Operands of the RBF Ψ1 backward products (:func:`._rbf.rbf_psi1_backward`).

    Returns ``PW = A * Psi1`` (N, M), its row sums ``r`` (N,), ``XB = [x B, B]`` (N, 2Q),
    ``ZZ = [z, z²]`` (M, 2Q) and the centre ``ctr`` (Q,), the mean of ``Z``, with
    ``x = mu - ctr`` and ``z = Z - ctr``. The adjoints depend on ``mu - Z`` only; centring keeps
    the expanded squares from cancelling far from the origin.
    """
    N, Q = mu.shape
    M = Z.shape[0]
    ctr = _column_means(Z)
    PW = np.empty((N, M))
    r = np.empty(N)
    XB = np.empty((N, 2 * Q))
    for n in range(N):
        row = PW[n]
        for m in range(M):
            row[m] = A[n, m] * Psi1[n, m]
        r[n] = _sum4(row)
        for q in range(Q):
            XB[n, q] = (mu[n, q] - ctr[q]) * B[n, q]
            XB[n, Q + q] = B[n, q]
    ZZ = np.empty((M, 2 * Q))
    for m in range(M):
        for q in range(Q):
            z = Z[m, q] - ctr[q]
            ZZ[m, q] = z
            ZZ[m, Q + q] = z * z
    return PW, r, XB, ZZ, ctr


@nb.njit(cache=True, nogil=True)
def rbf_psi1_assemble(mu, B, Z, ctr, r, S1, T):
    """Adjoints of the RBF Ψ1 from ``S1 = PW ZZ`` (N, 2Q) and ``T = PWᵀ XB`` (M, 2Q).

    With centred ``x = mu - ctr``, ``z = Z - ctr`` (:func:`rbf_psi1_factors`) and
    ``t = (x - z) B``: ``dmu = -sum_m PW t = -B (x r - S1[:, :Q])``,
    ``dS = (sum_m PW t² - B r) / 2 = (B² (x² r - 2 x S1[:, :Q] + S1[:, Q:]) - B r) / 2`` and
    ``dZ = sum_n PW t = T[:, :Q] - z T[:, Q:]``. Returns ``dmu``, ``dS`` (N, Q), ``dZ``
    (M, Q), ``dlam_rest = sum_n dS`` (Q,) and ``total = sum r`` (see :func:`rbf_psi1`'s
    caller for how they combine into the length-scale and variance adjoints).
    """
    N, Q = mu.shape
    M = Z.shape[0]
    dmu = np.empty((N, Q))
    dS = np.empty((N, Q))
    dl = np.zeros(Q)
    total = 0.0
    for n in range(N):
        rn = r[n]
        total += rn
        for q in range(Q):
            b = B[n, q]
            x = mu[n, q] - ctr[q]
            s1 = S1[n, q]
            dmu[n, q] = -b * (x * rn - s1)
            v = 0.5 * ((b * b) * (x * x * rn - 2.0 * x * s1 + S1[n, Q + q]) - b * rn)
            dS[n, q] = v
            dl[q] += v
    dZ = np.empty((M, Q))
    for m in range(M):
        for q in range(Q):
            dZ[m, q] = T[m, q] - (Z[m, q] - ctr[q]) * T[m, Q + q]
    return dmu, dS, dZ, dl, total


# ------------------------------------------------------------------------------ RBF × linear

@twin_jit(work=lambda mu, S, Z, *rest: mu.shape[0] * Z.shape[0] * mu.shape[1])
def rbf_linear_tilted(mu, S, Z, lam, B, Psi1):
    """``W[m, q] = sum_n Psi1[n, m] (lam_q mu_nq + S_nq z_mq) / (lam_q + S_nq)``.

    ``E[k_rbf(x_n, z_m) x_n]`` summed over ``n``; one parallel task per row ``m``.
    """
    N, Q = mu.shape
    M = Z.shape[0]
    W = np.zeros((M, Q))
    for m in nb.prange(M):
        for n in range(N):
            psi = Psi1[n, m]
            for q in range(Q):
                W[m, q] += psi * (lam[q] * mu[n, q] + S[n, q] * Z[m, q]) * B[n, q]
    return W


@twin_jit(work=lambda mu, S, Z, *rest: mu.shape[0] * Z.shape[0] * mu.shape[1])
def rbf_linear_tilted_backward(mu, S, Z, lam, B, Psi1, dW):
    """Backward pass of :func:`rbf_linear_tilted` given ``dW`` of shape (1, M, Q) or (N, M, Q).

    Returns the adjoint ``A`` (N, M) of ``Psi1`` (to be chained through
    :func:`rbf_psi1_backward`) and the direct adjoints ``dmu``, ``dS`` (N, Q), ``dZ`` (M, Q) and
    ``dlam`` (Q,) of the tilted mean ``m = mu - S (mu - z) / (lam + S)``.
    """
    N, Q = mu.shape
    M = Z.shape[0]
    per_point = dW.shape[0] > 1
    nbk = n_blocks(N)
    A = np.empty((N, M))
    dmu = np.zeros((N, Q))
    dS = np.zeros((N, Q))
    dZ_part = np.zeros((nbk, M, Q))
    dl_part = np.zeros((nbk, Q))
    for b in nb.prange(nbk):
        lo = b * PSI_BLOCK
        hi = min(N, lo + PSI_BLOCK)
        for n in range(lo, hi):
            g = n if per_point else 0
            for m in range(M):
                psi = Psi1[n, m]
                a = 0.0
                for q in range(Q):
                    bq = B[n, q]
                    dw = dW[g, m, q]
                    a += dw * (lam[q] * mu[n, q] + S[n, q] * Z[m, q]) * bq
                    t = dw * psi * bq
                    td = t * (mu[n, q] - Z[m, q]) * bq
                    dmu[n, q] += t * lam[q]
                    dZ_part[b, m, q] += t * S[n, q]
                    dS[n, q] -= td * lam[q]
                    dl_part[b, q] += td * S[n, q]
                A[n, m] = a
    dZ = np.zeros((M, Q))
    dl = np.zeros(Q)
    for b in range(nbk):
        dZ += dZ_part[b]
        dl += dl_part[b]
    return A, dmu, dS, dZ, dl
