"""Jitted loops of the closed-form Ψ-statistics (RBF Ψ1, RBF×linear) and their backward.

Rules (see ``doc/developers.rst``): forward passes parallelise over output entries (rows ``n`` of
Ψ1, columns ``m`` of the tilted RBF×linear sums) with any sum over ``n`` done serially inside,
so every entry is computed in a fixed order; backward passes parallelise over fixed-size blocks
of ``PSI_BLOCK`` rows, write per-row adjoints directly and reduce the rest into per-block partials
that are summed serially. Results are therefore bit-identical for any thread count. No ``fastmath``.

Everything is evaluated in log space: a Ψ entry is ``exp(constant + per-row term + per-pair term
- quadratic form)``, never a product of separately rounded factors that could underflow.

The two-RBF Ψ2 matrices (Ψ2 of one RBF and the RBF×RBF cross term) are assembled in
:mod:`._two_rbf`: their entries and column sums come from :func:`two_rbf_block`, the sums of
their backward pass from :func:`two_rbf_backward_sums` (serially, every row block of a call in
one call: :func:`two_rbf_colsums`, :func:`two_rbf_backward_blocks`). The backward pass of the
RBF Ψ1 is BLAS products between a serial jitted pass that forms their operands and one that
turns the sums into adjoints (``rbf_psi1_factors`` and ``rbf_psi1_assemble``; the two-RBF
backward ends in ``two_rbf_assemble`` the same way), which beats a fused row-block loop
(``doc/developers.rst``, "Where a product beats a loop"). With BLAS at one thread (as inside
the estimators) these results do not depend on ``n_jobs`` either.
``exp`` is :func:`~sklearn_lvgp._vexp_numba.vexp` throughout, so the loops over ``m`` (pairs)
vectorise.
"""

import numba as nb
import numpy as np

from .._jit import twin_jit
from .._vexp_numba import vexp, vlog1p, wide_vectors

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
    :func:`~sklearn_lvgp._vexp_numba.vlog1p` over all ``N Q`` ratios in one vectorised loop (the C
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


# ------------------------------------------------------------------------- two-RBF Ψ2 block

@nb.njit(cache=True, nogil=True)
def two_rbf_pair_terms(lam_a, lam_b, log_c, Z, S, I, J, sym):
    """Per-pair and per-row constants of the two-RBF matrix (formula in :mod:`._two_rbf`).

    For pairs ``p = (I[p], J[p])``: ``cmidT[q, p] = wa_q Z[I, q] + wb_q Z[J, q]``,
    ``DuT[q, p] = (Z[I, q] - Z[J, q]) / u_q`` and
    ``pconst[p] = log_c - 0.5 sum_q (Z[I, q] - Z[J, q])^2 / u_q``; for rows ``n``:
    ``E[n, q] = 1 / (tau_q + S[n, q])`` and ``logk2[n] = -0.5 sum_q log1p(S[n, q] / tau_q)``,
    with ``u = lam_a + lam_b``, ``tau = lam_a lam_b / u``, ``wa = lam_b / u``, ``wb = lam_a / u``
    (``sym``: one kernel, ``lam_b = lam_a``, so ``tau = lam_a / 2`` and ``wa = wb = 1 / 2``).
    One pass instead of some twenty small numpy operations.
    """
    Q = Z.shape[1]
    P = I.shape[0]
    u = np.empty(Q)
    tau = np.empty(Q)
    wa = np.empty(Q)
    wb = np.empty(Q)
    for q in range(Q):
        if sym:
            u[q] = 2.0 * lam_a[q]
            tau[q] = 0.5 * lam_a[q]
            wa[q] = 0.5
            wb[q] = 0.5
        else:
            u[q] = lam_a[q] + lam_b[q]
            tau[q] = lam_a[q] * lam_b[q] / u[q]
            wa[q] = lam_b[q] / u[q]
            wb[q] = lam_a[q] / u[q]
    cmidT = np.empty((Q, P))
    DuT = np.empty((Q, P))
    quad = np.zeros(P)
    for q in range(Q):
        for p in range(P):
            za = Z[I[p], q]
            zb = Z[J[p], q]
            d = za - zb
            du = d / u[q]
            cmidT[q, p] = wa[q] * za + wb[q] * zb
            DuT[q, p] = du
            quad[p] += d * du
    pconst = np.empty(P)
    for p in range(P):
        pconst[p] = log_c - 0.5 * quad[p]
    E, logk2 = _precision_rows(S, tau, 0.0, -0.5)
    return E, logk2, cmidT, DuT, pconst, tau, wa, wb


@nb.njit(inline="always")
def _two_rbf_row(mu, E, logk2, pconst, cmidT, n, row):
    """``row[p]``: the two-RBF entry of row ``n`` and pair ``p`` (formula in :mod:`._two_rbf`)."""
    _half_weighted_sq_dist_row(mu, E, n, cmidT, row)
    base = logk2[n]
    for p in range(row.shape[0]):
        row[p] = vexp(pconst[p] + base + row[p])


@nb.njit(inline="always")
def _two_rbf_rows(mu, E, logk2, pconst, cmidT, lo, buf):
    """The entries of rows ``lo:lo + len(buf)`` (fewer at the end of ``mu``), serially, in the
    leading rows of ``buf``; returns those rows."""
    out = buf[:min(buf.shape[0], mu.shape[0] - lo)]
    for r in range(out.shape[0]):
        _two_rbf_row(mu, E, logk2, pconst, cmidT, lo + r, out[r])
    return out


@twin_jit(work=lambda mu, E, logk2, pconst, cmidT, lo, out, colsum: out.size * mu.shape[1])
def two_rbf_block(mu, E, logk2, pconst, cmidT, lo, out, colsum):
    """Entries of the two-RBF matrix for rows ``lo:lo + len(out)``, written into ``out``; their
    column sums are added to ``colsum`` (P,).

    ``out[r, p] = exp(pconst[p] + logk2[n] - 0.5 sum_q E[n, q] (mu[n, q] - cmidT[q, p])^2)``
    with ``n = lo + r`` (formula in :mod:`._two_rbf`); one parallel task per row, the innermost
    loops run over the pairs ``p`` so they vectorise, ``exp`` included. The column sums run
    serially over the rows afterwards (the same order for any thread count).
    """
    R = out.shape[0]
    for r in nb.prange(R):
        wide_vectors()
        _two_rbf_row(mu, E, logk2, pconst, cmidT, lo + r, out[r])
    _add_rows(out, colsum)


@nb.njit(cache=True, nogil=True)
def two_rbf_colsums(mu, E, logk2, pconst, cmidT, buf, colsum):
    """Column sums of the entries of all rows, added to ``colsum``: :func:`two_rbf_block` on
    consecutive blocks of ``len(buf)`` rows in one serial call (same values, same order),
    ``buf`` holding each block's entries in turn."""
    wide_vectors()
    rows = buf.shape[0]
    for lo in range(0, mu.shape[0], rows):
        _add_rows(_two_rbf_rows(mu, E, logk2, pconst, cmidT, lo, buf), colsum)


@nb.njit(cache=True, nogil=True)
def two_rbf_backward_blocks(mu, E, logk2, pconst, cmidT, buf, F, CT, sums_n, sums_p):
    """The backward sums of all rows with the entries recomputed block by block: for each block
    of ``len(buf)`` rows, the entries as :func:`two_rbf_block` writes them, then
    :func:`two_rbf_backward_sums` on them, in one serial call."""
    wide_vectors()
    rows = buf.shape[0]
    for lo in range(0, mu.shape[0], rows):
        two_rbf_backward_sums(_two_rbf_rows(mu, E, logk2, pconst, cmidT, lo, buf), F, CT, lo,
                              sums_n, sums_p)


@nb.njit(cache=True, nogil=True)
def _add_rows(A, total):
    """``total += A.sum(axis=0)``, rows in order (a function of its own: 512-bit vectors)."""
    wide_vectors()
    for r in range(A.shape[0]):
        row = A[r]
        for p in range(row.shape[0]):
            total[p] += row[p]


@nb.njit(cache=True, nogil=True)
def pairs_to_matrix(vals, I, J, M, sym):
    """``(M, M)`` matrix with ``vals[p]`` at ``(I[p], J[p])`` (and at ``(J[p], I[p])`` when
    ``sym``), zeros elsewhere: one call in place of two fancy-index assignments."""
    out = np.zeros((M, M))
    for p in range(I.shape[0]):
        out[I[p], J[p]] = vals[p]
        if sym:
            out[J[p], I[p]] = vals[p]
    return out


@nb.njit(cache=True, nogil=True)
def two_rbf_row_factors(mu, E, ctr):
    """``F = [1, E, E (mu - ctr)]`` (N, 1 + 2Q): the per-row factors of the sums over ``n`` in
    the two-RBF backward pass (:func:`._two_rbf.two_rbf_backward`; ``ctr`` from
    :func:`two_rbf_pair_factors`)."""
    N, Q = mu.shape
    F = np.empty((N, 1 + 2 * Q))
    for n in range(N):
        F[n, 0] = 1.0
        for q in range(Q):
            e = E[n, q]
            F[n, 1 + q] = e
            F[n, 1 + Q + q] = e * (mu[n, q] - ctr[q])
    return F


@nb.njit(cache=True, nogil=True)
def two_rbf_pair_factors(cmidT, gp):
    """``CT = gp [1, c, c²]ᵀ`` (1 + 2Q, P): the per-pair factors of the sums over ``p``.

    ``c = cmidT - ctr`` with ``ctr`` (Q,) the pairs' mean, also returned: the adjoints depend
    on ``mu - c`` only, and centring both keeps the expanded squares of the sums from cancelling
    far from the origin. ``gp`` holds the column weights of a summed adjoint (ones for a
    per-point adjoint, whose weights are applied to the entries instead).
    """
    Q, P = cmidT.shape
    ctr = _column_means(cmidT.T)
    CT = np.empty((1 + 2 * Q, P))
    for p in range(P):
        CT[0, p] = gp[p]
    for q in range(Q):
        for p in range(P):
            c = cmidT[q, p] - ctr[q]
            CT[1 + q, p] = gp[p] * c
            CT[1 + Q + q, p] = gp[p] * (c * c)
    return CT, ctr


@nb.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def two_rbf_backward_sums(w, F, CT, lo, sums_n, sums_p):
    """Both sums of the two-RBF backward pass for the rows ``lo:lo + len(w)`` in one read of ``w``.

    ``sums_n += F[lo:hi]ᵀ w`` (1 + 2Q, P) and ``sums_p[lo:hi] = w CTᵀ`` (rows, 1 + 2Q). Four rows at
    a time, so each load of ``sums_n`` and ``CT`` serves four rows. In place of two BLAS products
    per chunk, whose inner dimension 1 + 2Q is too small for them. Summation order is fixed by the
    compiled code (``reassoc`` lets the row sums vectorise); one call is serial, so the result does
    not depend on the thread count.
    """
    wide_vectors()
    R, P = w.shape
    K = CT.shape[0]
    r = 0
    while r + 4 <= R:
        w0 = w[r]
        w1 = w[r + 1]
        w2 = w[r + 2]
        w3 = w[r + 3]
        n = lo + r
        for k in range(K):
            f0 = F[n, k]
            f1 = F[n + 1, k]
            f2 = F[n + 2, k]
            f3 = F[n + 3, k]
            c = CT[k]
            acc = sums_n[k]
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            a3 = 0.0
            for p in range(P):
                x0 = w0[p]
                x1 = w1[p]
                x2 = w2[p]
                x3 = w3[p]
                acc[p] += (f0 * x0 + f1 * x1) + (f2 * x2 + f3 * x3)
                cp = c[p]
                a0 += x0 * cp
                a1 += x1 * cp
                a2 += x2 * cp
                a3 += x3 * cp
            sums_p[n, k] = a0
            sums_p[n + 1, k] = a1
            sums_p[n + 2, k] = a2
            sums_p[n + 3, k] = a3
        r += 4
    while r < R:
        wr = w[r]
        n = lo + r
        for k in range(K):
            f = F[n, k]
            c = CT[k]
            acc = sums_n[k]
            a = 0.0
            for p in range(P):
                x = wr[p]
                acc[p] += f * x
                a += x * c[p]
            sums_p[n, k] = a
        r += 1


@nb.njit(cache=True, nogil=True)
def two_rbf_summed_adjoint_weights(G, I, J, mult):
    """``gp[p] = mult[p] G[I[p], J[p]]``: the pair weights of a summed (M, M) adjoint."""
    P = I.shape[0]
    gp = np.empty(P)
    for p in range(P):
        gp[p] = mult[p] * G[I[p], J[p]]
    return gp


@nb.njit(cache=True, nogil=True)
def two_rbf_assemble(sums_n, sums_p, gp, mu, E, cmidT, ctr, DuT, wa, wb, I, J, M):
    """Adjoints of the two-RBF matrix from the two sums of the adjoint-weighted entries ``w``.

    ``sums_n = Fᵀ w`` (1 + 2Q, P) over rows, not yet scaled by ``gp`` (pass ones when it already
    is), and ``sums_p = w CTᵀ`` (N, 1 + 2Q) over pairs; ``F`` and ``CT`` are
    :func:`two_rbf_row_factors` and :func:`two_rbf_pair_factors`. Returns ``dmu``, ``dS``
    (N, Q), ``dZ`` (M, Q), ``dlam_rest``, ``drho_rest`` (Q,) and ``total`` (formulas in
    :mod:`._two_rbf`).
    """
    N, Q = mu.shape
    P = I.shape[0]
    dmu = np.empty((N, Q))
    dS = np.empty((N, Q))
    W2 = np.zeros(Q)  # sum_p sum_n w ((mu - c)^2 E^2 - E) / 2 = sum_n dS[n]
    for n in range(N):
        r = sums_p[n, 0]
        for q in range(Q):
            e = E[n, q]
            x = mu[n, q] - ctr[q]
            wc = sums_p[n, 1 + q]
            wc2 = sums_p[n, 1 + Q + q]
            dmu[n, q] = -e * (x * r - wc)
            v = 0.5 * (e * e) * (x * x * r - 2.0 * x * wc + wc2) - 0.5 * e * r
            dS[n, q] = v
            W2[q] += v
    dZ = np.zeros((M, Q))
    dla = np.zeros(Q)
    dlb = np.zeros(Q)
    total = 0.0
    for p in range(P):
        g = gp[p]
        W0 = g * sums_n[0, p]
        total += W0
        i = I[p]
        j = J[p]
        for q in range(Q):
            c = cmidT[q, p] - ctr[q]
            W1 = g * (sums_n[1 + Q + q, p] - c * sums_n[1 + q, p])  # sum_n w (mu - c) E
            du = DuT[q, p]
            h = 0.5 * du * du * W0
            dZ[i, q] += wa[q] * W1 - du * W0
            dZ[j, q] += wb[q] * W1 + du * W0
            dla[q] += h - wa[q] * du * W1
            dlb[q] += h + wb[q] * du * W1
    for q in range(Q):
        dla[q] += wa[q] * wa[q] * W2[q]
        dlb[q] += wb[q] * wb[q] * W2[q]
    return dmu, dS, dZ, dla, dlb, total


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
