"""Ψ-statistics of any kernel under a point-set rule, and their backward pass.

The unscented rule is that of de Souza et al. (2021, §2.3 and eqs. 2–4); Gauss–Hermite and Monte
Carlo are the alternatives the paper compares it with (§4).

With ``Ks[n, k, :] = k(x_nk, Z)``: ``Psi1[n] = sum_k w_k Ks[n, k]``,
``Psi2 = Ksᵀ diag(w) Ks`` (one symmetric GEMM per chunk of rows) and
``psi0 = sum_nk w_k k(x_nk, x_nk)``. The backward pass forms
``dKs[n, k] = w_k (dPsi1[n] + Ks[n, k] (dPsi2 + dPsi2ᵀ))`` and hands it to the kernel's own VJP.

Rows are processed in chunks of fixed size so memory is ``O(chunk · K · M)`` beyond what is kept:
the point matrices (and the kernels' caches) of all chunks are kept for the backward pass when
``N · K · M`` fits ``KEEP_ELEMENTS``, and recomputed chunk by chunk otherwise. The chunks are
small (256 KiB per point matrix, at least 32 rows) so that their arrays come from malloc's heap
instead of fresh ``mmap`` pages faulted in at every call; the larger chunks of large calls (the
objective engine's) keep their point matrices and the two ``(rows · K, M)`` temporaries in
workspace buffers instead, when the caller passes a workspace (``doc/developers.rst``, "Small
chunks for point-set Ψ-statistics").

For the unscented rule and a stationary kernel the point array is not formed: each point differs
from its centre in one coordinate, and :mod:`._ut_stationary` builds the ``2Q`` kernel rows of a
data point from the centre's distances in ``O(M Q)`` instead of ``O(M Q²)`` through the points.
"""

from typing import NamedTuple

import numpy as np

from .._core.workspace import thread_workspace
from ..kernels._stationary import K_cached_into
from ._rules import expand_points, expand_points_vjp, variance_adjoint
from ._types import PsiStats, PsiVJP
from ._ut_stationary import axis_point_rows, axis_point_rows_vjp, uses_axis_points

__all__ = ["pointset_psi", "pointset_psi_vjp", "chunk_rows"]

#: Budget (number of float64 entries) of one chunk's point-kernel matrix.
CHUNK_ELEMENTS = 2 ** 15
#: Budget of one chunk's point-kernel matrix in calls of more than ``LARGE_CALL_CHUNKS`` chunks:
#: the objective engine's chunk (``bounds._collapsed.CHUNK_POINT_ELEMENTS``) is then one block.
#: The larger chunk divides better between threads on large fits than 2¹⁷ does.
LARGE_CHUNK_ELEMENTS = 2 ** 19
#: Calls with more chunks than this use ``LARGE_CHUNK_ELEMENTS``.
LARGE_CALL_CHUNKS = 8
#: Fewest rows per chunk (bounds the per-chunk overhead when ``K · M`` is large).
MIN_CHUNK_ROWS = 32
#: Largest ``N · K · M`` whose point matrices are kept for the backward pass.
KEEP_ELEMENTS = 2 ** 21


class _PointsetCache(NamedTuple):
    kernel: object
    Z: np.ndarray
    mu: np.ndarray
    sqrtS: np.ndarray
    rule: object
    per_point: bool
    chunks: list
    Ks: list
    delta: object  # half-widths of the unscented points (stationary kernels), else None
    workspace: object  # the caller's Workspace (point matrices), or None


def chunk_rows(K, M, N=0):
    """Rows per chunk for ``K`` points per row and ``M`` inducing points (``N`` rows in all).

    A call of more than ``LARGE_CALL_CHUNKS`` chunks (a chunk of the objective engine) uses
    chunks of ``LARGE_CHUNK_ELEMENTS``: each chunk costs about fifteen numpy calls of Python
    glue, which holds the GIL and so limits how many engine threads can run at once.
    """
    budget = CHUNK_ELEMENTS
    if N * K * M > LARGE_CALL_CHUNKS * CHUNK_ELEMENTS:
        budget = LARGE_CHUNK_ELEMENTS
    return max(MIN_CHUNK_ROWS, budget // max(1, K * M))


def _chunks(N, K, M):
    size = chunk_rows(K, M, N)
    return [(a, min(N, a + size)) for a in range(0, N, size)]


def _points(mu, sqrtS, nodes, a, b):
    """Evaluation points of rows ``a:b`` as an ``((b-a)·K, Q)`` matrix, and their nodes."""
    xi = nodes if nodes.ndim == 2 else nodes[a:b]
    X = expand_points(mu[a:b], sqrtS[a:b], xi)
    return X.reshape(-1, mu.shape[1]), xi


def _chunk_rows(kernel, Z, mu, sqrtS, rule, delta, a, b, kept=None, workspace=None,
                name="Ks"):
    """Kernel rows ``Ks`` (b-a, K, M) of the points of rows ``a:b`` and their backward cache,
    plus the point array and nodes (``None`` on the axis-point path, which needs neither).
    ``kept`` is the forward pass's ``(Ks, cache)`` of the chunk when it was kept; a stationary
    kernel writes its matrix into the buffer ``name`` of ``workspace`` (when given)."""
    if delta is not None:  # unscented + stationary: no point array, O(M Q) per row
        Ks, kcache = kept if kept else axis_point_rows(kernel, mu[a:b], delta[a:b], Z)
        return Ks, kcache, None, None
    X, xi = _points(mu, sqrtS, rule.nodes, a, b)
    if kept:
        return (*kept, X, xi)
    Kflat, kcache = K_cached_into(kernel, X, Z, workspace, name)
    return Kflat.reshape(b - a, rule.n_points, Z.shape[0]), kcache, X, xi


def _buffer(workspace, name, shape):
    """``workspace``'s array ``name`` of ``shape``, or ``None`` without a workspace."""
    return None if workspace is None else workspace.array(name, shape)


def _scratch(workspace):
    """Where a call's ``(rows · K, M)`` temporaries go: this thread's workspace when the caller
    reuses buffers across evaluations (passes a workspace), else fresh arrays (``None``)."""
    return None if workspace is None else thread_workspace().child("pointset")


def pointset_psi(kernel, Z, mu, S, rule, per_point=False, keep=None, need_psi2=True,
                 workspace=None):
    """Ψ-statistics by a point-set rule.

    Parameters
    ----------
    kernel : Kernel
        Any kernel of :mod:`sklearn_lvgp.kernels`.
    Z : ndarray of shape (M, Q)
        Inducing inputs.
    mu, S : ndarray of shape (N, Q)
        Means and variances (``S >= 0``) of the diagonal Gaussians.
    rule : PointRule
        Nodes and weights (:mod:`sklearn_lvgp.expectations._rules`).
    per_point : bool, default=False
        Return ``psi0`` of shape ``(N,)`` and ``Psi2`` of shape ``(N, M, M)`` instead of sums.
    keep : bool, default=None
        Keep the point-kernel matrices for the backward pass; ``None``: when
        ``N · K · M`` fits ``KEEP_ELEMENTS``.
    need_psi2 : bool, default=True
        ``False``: skip Ψ2 (returned as ``None``; only the backward pass is wanted). With
        ``keep=False`` too nothing is computed: the backward pass recomputes each chunk.
    workspace : Workspace, default=None
        Buffers an optimiser's objective reuses from one evaluation to the next
        (:class:`sklearn_lvgp._core.workspace.Workspace`): stationary kernels write the point
        matrices there, and each chunk's two temporaries of that size go to this thread's
        workspace (:func:`sklearn_lvgp._core.workspace.thread_workspace`). The cache is valid until
        the next call with the same workspace.

    Returns
    -------
    stats : PsiStats
        ``psi0``, ``Psi1`` (N, M), ``Psi2``.
    cache : object
        Opaque input of :func:`pointset_psi_vjp`.
    """
    mu = np.ascontiguousarray(mu, dtype=np.float64)
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    sqrtS = np.sqrt(np.asarray(S, dtype=np.float64))
    N, _ = mu.shape
    M = Z.shape[0]
    w = rule.weights
    K = w.shape[0]
    sqrt_w = np.sqrt(w)
    chunks = _chunks(N, K, M)
    keep = N * K * M <= KEEP_ELEMENTS if keep is None else bool(keep)
    Psi1 = np.empty((N, M))
    psi0 = np.empty(N) if per_point else 0.0
    if not need_psi2:
        Psi2 = None
    else:
        Psi2 = np.empty((N, M, M)) if per_point else np.zeros((M, M))
    kept = []
    const_diag = kernel.diag_is_constant
    if const_diag:
        diag_value = float(kernel.Kdiag(mu[:1])[0])
    delta = rule.nodes[0, 0] * sqrtS if uses_axis_points(kernel, rule) else None
    ws = None if workspace is None else workspace.child("pointset")
    scratch = _scratch(ws)
    if not (need_psi2 or keep):
        # only the backward pass is wanted and it recomputes every chunk's point matrix: no
        # forward work at all (Ψ1 is not needed by the backward pass of a point-set rule)
        cache = _PointsetCache(kernel, Z, mu, sqrtS, rule, per_point, chunks, kept, delta, ws)
        return PsiStats(None, None, None), cache
    for i, (a, b) in enumerate(chunks):
        Ks, kcache, X, _ = _chunk_rows(kernel, Z, mu, sqrtS, rule, delta, a, b,
                                       workspace=ws, name=f"Ks/{i}" if keep else "Ks")
        if keep:
            kept.append((Ks, kcache))
        Psi1[a:b] = np.einsum("nkm,k->nm", Ks, w)
        if const_diag:
            kd = np.full(b - a, diag_value * float(np.sum(w)))
        else:
            kd = kernel.Kdiag(X).reshape(b - a, K) @ w
        if per_point:
            psi0[a:b] = kd
        else:
            psi0 += float(np.sum(kd))
        if not need_psi2:
            continue
        Kw = np.multiply(Ks, sqrt_w[None, :, None], out=_buffer(scratch, "Kw", Ks.shape))
        if per_point:
            Psi2[a:b] = np.matmul(Kw.transpose(0, 2, 1), Kw)
        else:
            flat = Kw.reshape(-1, M)
            Psi2 += flat.T @ flat
    cache = _PointsetCache(kernel, Z, mu, sqrtS, rule, per_point, chunks, kept, delta, ws)
    return PsiStats(psi0, Psi1, Psi2), cache


def pointset_psi_vjp(dL_dpsi0, dL_dPsi1, dL_dPsi2, cache):
    """Backward pass of :func:`pointset_psi`.

    Parameters
    ----------
    dL_dpsi0 : float or ndarray of shape (N,)
        Adjoint of ``psi0`` (an array when the forward was ``per_point``).
    dL_dPsi1 : ndarray of shape (N, M)
        Adjoint of ``Psi1``.
    dL_dPsi2 : ndarray of shape (M, M) or (N, M, M)
        Adjoint of ``Psi2``; need not be symmetric.
    cache : object
        From :func:`pointset_psi`.

    Returns
    -------
    PsiVJP
        Adjoints of ``mu``, ``S`` (natural space; requires ``S > 0``), ``Z`` and kernel ``theta``.
    """
    kernel, Z, mu, sqrtS = cache.kernel, cache.Z, cache.mu, cache.sqrtS
    rule = cache.rule
    w = rule.weights
    K = w.shape[0]
    N, Q = mu.shape
    M = Z.shape[0]
    dL_dPsi1 = np.asarray(dL_dPsi1, dtype=np.float64)
    dL_dPsi2 = np.asarray(dL_dPsi2, dtype=np.float64)
    if cache.per_point:
        G2 = dL_dPsi2 + dL_dPsi2.transpose(0, 2, 1)
        d0 = np.broadcast_to(np.asarray(dL_dpsi0, dtype=np.float64), (N,))
    else:
        G2 = dL_dPsi2 + dL_dPsi2.T
    dmu = np.empty((N, Q))
    dS = np.empty((N, Q))
    dZ = np.zeros((M, Q))
    dtheta = np.zeros(kernel.n_theta)
    const_diag = kernel.diag_is_constant
    delta = cache.delta
    scratch = _scratch(cache.workspace)
    for i, (a, b) in enumerate(cache.chunks):
        kept = cache.Ks[i] if cache.Ks else None
        Ks, kcache, X, xi = _chunk_rows(kernel, Z, mu, sqrtS, rule, delta, a, b, kept,
                                        cache.workspace)
        if cache.per_point:
            KG = np.matmul(Ks, G2[a:b])
            ddiag = np.outer(d0[a:b], w).reshape(-1)
        else:
            KG = np.matmul(Ks.reshape(-1, M), G2,
                           out=_buffer(scratch, "KG", ((b - a) * K, M))).reshape(b - a, K, M)
            ddiag = np.tile(w * float(dL_dpsi0), b - a)
        dKs = KG  # a temporary of this chunk: the adjoint of K is formed in it, then scratch
        dKs += dL_dPsi1[a:b, None, :]
        dKs *= w[None, :, None]
        if delta is not None:
            dmu_c, ddelta, dZ_c, dth_c = axis_point_rows_vjp(kernel, dKs, Ks, kcache, mu[a:b],
                                                             delta[a:b])
            dxi = ddelta * rule.nodes[0, 0]  # delta = node * sqrt(S)
        else:
            v = kernel.vjp_cached(dKs.reshape(-1, M), kcache, overwrite_dK=True)
            dX = v.X.reshape(b - a, K, Q)
            if not const_diag:
                vd = kernel.vjp_diag(ddiag, X)
                dX = dX + vd.X.reshape(b - a, K, Q)
                dtheta += vd.theta
            (dmu_c, dxi), dZ_c, dth_c = expand_points_vjp(dX, xi), v.Z, v.theta
        if const_diag:
            # Kdiag does not depend on x: only its hyperparameters receive the adjoint
            dtheta += kernel.vjp_diag(np.array([np.sum(ddiag)]), mu[:1]).theta
        dmu[a:b] = dmu_c
        dS[a:b] = variance_adjoint(dxi, sqrtS[a:b])
        dZ += dZ_c
        dtheta += dth_c
    return PsiVJP(dmu, dS, dZ, dtheta)
