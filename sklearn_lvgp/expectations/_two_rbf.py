"""Two-RBF Ψ2-type matrices: one jitted pass for the entries, BLAS for the sums.

These matrices cover both Ψ2 of one RBF kernel and the cross term of two RBF kernels. For one
dimension, ``x ~ N(mu, S)`` and kernels with squared length scales ``lam`` and ``rho``::

    E[exp(-(x - z)^2 / (2 lam) - (x - z')^2 / (2 rho))]
        = sqrt(tau / (tau + S)) exp(-(z - z')^2 / (2 u) - (mu - c)^2 / (2 (tau + S))),

with ``u = lam + rho``, ``tau = lam rho / u`` and ``c = wa z + wb z'``, ``wa = rho / u``,
``wb = lam / u``. With ``lam = rho`` this is the RBF Ψ2 formula (Titsias & Lawrence 2010).

For pair ``p = (I[p], J[p])`` and row ``n`` the log-entry is therefore::

    pconst[p] + logk2[n] - 0.5 * sum_q E[n, q] (mu[n, q] - c[p, q])^2.

Rows are processed in chunks of at most 1 MiB. When ``N · P`` fits ``KEEP_ENTRIES`` the
forward pass keeps every chunk's entries (in the setup's ``kept`` list) for the backward pass;
otherwise one ``(rows, P)`` buffer is reused by every chunk, memory stays ``O(chunk · P)`` and
the backward pass recomputes the entries. The entries are kept chunk by chunk because small
arrays come from malloc's heap, where one large block would be page-faulted in afresh. With a
workspace in the setup (:class:`sklearn_lvgp._core.workspace.Workspace`, which ``UnscentedGPLVM``
keeps for a whole fit) the kept chunks are the workspace's, the same memory at every evaluation,
so they are not faulted in again either (``doc/developers.rst``, "Fresh pages").
Per chunk, one jitted pass (:func:`._two_rbf_numba.two_rbf_block`) writes the entries, vectorised
over the pairs with :func:`~sklearn_lvgp._compile.vexp_numba.vexp` (a scalar ``exp`` call per entry
would keep the loop from vectorising), and sums their columns. Where those passes run serially
(always in the objective engine's chunk threads) and the entries are not kept, one jitted call
runs every chunk of a call in turn (:func:`._two_rbf_numba.two_rbf_colsums`, and
:func:`._two_rbf_numba.two_rbf_backward_blocks` for the backward pass), with the same values in the
same order: a thread then takes the GIL once per call instead of once or twice per chunk.
The backward pass needs only weighted sums of the adjoint-weighted entries ``w[n, p]``: over
``n`` with the per-row factors ``1, E, E mu`` (``Fᵀ w``; they give ``dZ``) and over ``p`` with
``1, c, c²`` (``w Cᵀ``; they give ``dmu`` and ``dS``). One jitted pass per chunk forms both
(:func:`._two_rbf_numba.two_rbf_backward_sums`) instead of two BLAS products per chunk, whose inner
dimension ``1 + 2Q`` is too small for BLAS.
The length-scale adjoint's term ``sum_p sum_n w ((mu - c)² E² - E) / 2`` is ``sum_n dS[n]``, so it
needs no sums over ``n`` with ``E²`` factors (``F`` has ``1 + 2Q`` columns, not ``1 + 5Q``). One
jitted pass (:func:`._two_rbf_numba.two_rbf_assemble`) turns the sums into the adjoints. The
result does not depend on the thread count (rows are independent in the jitted passes, and the
sums run serially chunk by chunk).
"""

import math

import numpy as np

from . import _two_rbf_numba as _nb

__all__ = ["two_rbf_forward", "two_rbf_backward"]

#: Budget (float64 entries) of the ``(rows, pairs)`` chunk buffer: 1 MiB. On the chunk-by-chunk
#: path each chunk costs a few Python calls, which hold the GIL; the single-thread cost is the
#: same as with 256 KiB (``doc/developers.rst``, "Chunk sizes").
CHUNK_ENTRIES = 2 ** 17
#: Largest ``N * P`` whose entries the forward pass keeps (chunk by chunk) for the backward pass.
KEEP_ENTRIES = 2 ** 21


def _block_rows(P):
    """Rows per chunk of the entries."""
    return max(1, CHUNK_ENTRIES // max(1, P))


def _blocks(N, P):
    """Row ranges of the chunks."""
    rows = _block_rows(P)
    return [(a, min(N, a + rows)) for a in range(0, N, rows)]


def _serial_blocks(s, buf, colsum):
    """Whether :func:`._two_rbf_numba.two_rbf_block` would run serially on blocks of ``buf``'s size,
    so that one serial call over all blocks gives the same values."""
    return _nb.two_rbf_block.runs_serial(s.mu, s.E, s.logk2, s.pconst, s.cmidT, 0, buf, colsum)


def _entries(s, a, b, buf, colsum):
    """``(b - a, P)`` view of ``buf`` holding the entries of rows ``a:b`` (their column sums
    are added to ``colsum``)."""
    T = buf[: b - a]
    _nb.two_rbf_block(s.mu, s.E, s.logk2, s.pconst, s.cmidT, a, T, colsum)
    return T


def two_rbf_forward(s, per_point=False, keep=None):
    """Summed ``(M, M)`` or per-point ``(N, M, M)`` matrix of a two-RBF setup.

    Parameters
    ----------
    s : TwoRBFSetup
        From :func:`sklearn_lvgp.expectations._rbf.two_rbf_setup`.
    per_point : bool, default=False
        Return the per-row summands instead of their sum.
    keep : bool, default=None
        Keep the entries for :func:`two_rbf_backward`; ``None``: when ``N · P`` fits
        ``KEEP_ENTRIES``.

    Returns
    -------
    C : ndarray of shape (M, M) or (N, M, M)
        The matrix (mirrored when ``s.sym``).
    """
    N = s.mu.shape[0]
    P = s.I.shape[0]
    keep = N * P <= KEEP_ENTRIES if keep is None else bool(keep)
    buf = None if keep else np.empty((min(N, _block_rows(P)), P))
    s.kept.clear()  # a repeated forward pass on the same setup replaces, not adds
    if per_point:
        out = np.zeros((N, s.M, s.M))
    colsum = np.zeros(P)
    if not (keep or per_point) and _serial_blocks(s, buf, colsum):
        # one jitted call for all blocks: a thread of the objective engine holds the GIL once
        # per chunk instead of once per block
        _nb.two_rbf_colsums(s.mu, s.E, s.logk2, s.pconst, s.cmidT, buf, colsum)
        return _nb.pairs_to_matrix(colsum, s.I, s.J, s.M, s.sym)
    for i, (a, b) in enumerate(_blocks(N, P)):
        if not keep:
            chunk = buf
        elif s.workspace is not None:
            chunk = s.workspace.array(f"two_rbf_entries/{i}", (b - a, P))
        else:
            chunk = np.empty((b - a, P))
        T = _entries(s, a, b, chunk, colsum)
        if keep:
            s.kept.append(T)
        if per_point:
            out[a:b, s.I, s.J] = T
            if s.sym:
                out[a:b, s.J, s.I] = T
    if per_point:
        return out
    return _nb.pairs_to_matrix(colsum, s.I, s.J, s.M, s.sym)


def two_rbf_backward(G, s):
    """Backward pass of :func:`two_rbf_forward`.

    Parameters
    ----------
    G : ndarray of shape (1, M, M) or (N, M, M)
        Upstream adjoint (symmetric in its last two axes when ``s.sym``).
    s : TwoRBFSetup
        The forward pass's setup.

    Returns
    -------
    dmu, dS : ndarray of shape (N, Q)
        Adjoints of the means and variances.
    dZ : ndarray of shape (M, Q)
        Adjoint of the inducing inputs.
    dlam_rest, drho_rest : ndarray of shape (Q,)
        Length-scale terms other than those through ``tau`` (the caller adds those:
        :func:`sklearn_lvgp.expectations._rbf.two_rbf_psi2_vjp`).
    total : float
        ``sum_n sum_p w[n, p]``, the adjoint of ``log(var_a var_b)``.
    """
    P = s.I.shape[0]
    per_point = G.shape[0] > 1
    if per_point:
        gp = np.ones(P)
    else:  # w = T diag(gp): the column weights are applied to the sums instead
        gp = _nb.two_rbf_summed_adjoint_weights(G[0], s.I, s.J, s.mult)
    CT, ctr = _nb.two_rbf_pair_factors(s.cmidT, gp)
    F = _nb.two_rbf_row_factors(s.mu, s.E, ctr)
    sums_n = np.zeros((F.shape[1], P))
    sums_p = np.empty((s.mu.shape[0], F.shape[1]))
    N = s.mu.shape[0]
    kept = bool(s.kept) and len(s.kept) == math.ceil(N / _block_rows(P))
    buf = None if kept else np.empty((min(N, _block_rows(P)), P))
    scratch = np.zeros(P)  # the recomputed entries' column sums (not needed)
    if not (kept or per_point) and _serial_blocks(s, buf, scratch):
        # one jitted call for all blocks (as in the forward pass)
        _nb.two_rbf_backward_blocks(s.mu, s.E, s.logk2, s.pconst, s.cmidT, buf, F, CT, sums_n,
                                    sums_p)
    else:
        for i, (a, b) in enumerate(_blocks(N, P)):
            w = s.kept[i] if kept else _entries(s, a, b, buf, scratch)
            if per_point:
                w = w * (s.mult[None, :] * G[a:b][:, s.I, s.J])
            _nb.two_rbf_backward_sums(w, F, CT, a, sums_n, sums_p)
    return _nb.two_rbf_assemble(sums_n, sums_p, gp, s.mu, s.E, s.cmidT, ctr, s.DuT, s.wa,
                                s.wb, s.I, s.J, s.M)
