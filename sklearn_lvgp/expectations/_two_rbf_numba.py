"""Jitted loops of the two-RBF Ψ2-type matrices (:mod:`._two_rbf`) and their backward pass.

The matrices cover Ψ2 of one RBF kernel and the RBF×RBF cross term (formulas in
:mod:`._two_rbf`; Titsias & Lawrence 2010). :func:`two_rbf_pair_terms` sets up the per-pair and
per-row terms, :func:`two_rbf_block` writes the entries of a block of rows and sums their
columns, :func:`two_rbf_backward_sums` forms both weighted sums of the backward pass in one read
of a block, and :func:`two_rbf_assemble` turns the sums into the adjoints. Serially, every row
block of a call runs in one call (:func:`two_rbf_colsums`, :func:`two_rbf_backward_blocks`), so
a thread of the objective engine takes the GIL once per call. Rows are independent and every
sum over rows runs serially in row order, so the results do not depend on the thread count.
No ``fastmath`` apart from ``reassoc`` and ``contract`` in the backward sums (the compiled code
fixes their order).
"""

import numba as nb
import numpy as np

from .._compile.jit import twin_jit
from .._compile.vexp_numba import vexp, wide_vectors
from ._psi_numba import _column_means, _half_weighted_sq_dist_row, _precision_rows


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
