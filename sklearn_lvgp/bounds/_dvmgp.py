"""The DVMGP bound as a map-reduce over row chunks.

Given the global parameters — the W-layer's inducing inputs Ξ, q(V) = N(μ_q, Σ_q) and kernels,
the output layer's ζ and σ_f, the noise — a row's q(W) marginals, its latent point
``N(h_i, diag η_i)`` and its Ψ-statistics depend on that row only (de Souza 2020, ch. 4), and the
collapsed bound sees the rows through ψ0, Ψ1ᵀY, Ψ2 and Σy² (Titsias & Lawrence 2010, eq. 14).
So an evaluation is: the W-layer's factors chol(K_v,q) and KL once; a forward map (projection,
latent moments, output Ψ-statistics per chunk); the global collapsed step; a backward map that
returns, per q, the chunk's share of ``αᵀda`` (the μ adjoint), ``Ā = (α ∘ db) αᵀ`` and the
kernel adjoints of K_vw and k(x, x); and a final step that turns the reduced ``Σ αᵀda`` and
``Σ Ā`` into the adjoints of K_v, μ and Σ_q, as :func:`~sklearn_lvgp.variational._projection.
projection_vjp` does for the whole data at once. On problems of :data:`JITTED_MIN_WORK` or more,
a chunk's projection passes are one jitted call each
(:mod:`~sklearn_lvgp.variational._projection_numba`), which releases the GIL; as numpy
products per row (kept for smaller problems, where they need no compilation) they hold it for
most of their time, so those run on one thread.
"""

from typing import NamedTuple

import numpy as np

from .._core.linalg import solve_lower
from .._core.workspace import chunk_workspace
from ..engine._executor import ChunkExecutor, plan_chunks, serial_global_steps
from ..variational._projection import (
    RowFactors,
    chol_factors,
    latent_moments,
    latent_moments_vjp,
    output_kernel,
    output_psi,
    output_psi_vjp,
    projection_kernels,
    row_global_vjp,
    row_local_vjp,
    row_marginals,
)
from ..variational._projection_numba import chunk_latent_backward, chunk_latent_forward
from ._collapsed import KEEP_TOTAL
from ._collapsed_global import collapsed_bound_from_stats, collapsed_stats_vjp

__all__ = ["dvmgp_elbo_and_grads", "JITTED_MIN_WORK"]

#: Evaluations of less estimated work (rows × work per row) run the numpy passes, one chunk
#: after another on the calling thread: the jitted passes cost about 2 s of compilation on a
#: machine's first fit, which a fit this small does not earn back, and the numpy passes hold
#: the GIL, so threads would only slow them (200 rows, ten features: 8.3 ms per evaluation on
#: one thread, 12.8 ms on two; jitted 6.5 and 5.9 ms).
JITTED_MIN_WORK = 2 ** 23


def _row_factors(kernel, Xi, mu_q, Lsig, jitter):
    Kv = kernel.K(Xi)
    Kv[np.diag_indices(Kv.shape[0])] += jitter * float(np.mean(np.diag(Kv)))
    return RowFactors(Kv, mu_q, Lsig)


class _Layer(NamedTuple):
    """The W-layer's global arrays: its kernels and row factors, and (``jitted``: when the
    jitted chunk passes run, else ``None``) the same in their layout."""

    kernels: list
    rows: list
    jitted: bool
    Xi: np.ndarray
    inv_ls: np.ndarray
    variance: np.ndarray
    Lv_inv: np.ndarray
    Ls: np.ndarray
    mu: np.ndarray


def _layer(kernels, rows, wtheta, Xi, mu, jitted):
    Xi = np.ascontiguousarray(Xi, dtype=np.float64)
    if not jitted:
        return _Layer(kernels, rows, False, Xi, None, None, None, None, np.asarray(mu))
    wtheta = np.asarray(wtheta, dtype=np.float64)
    # C-contiguous throughout, as the jitted passes' ``np.dot`` calls expect
    return _Layer(kernels, rows, True, Xi, 1.0 / np.exp(wtheta[:, 1:]), np.exp(wtheta[:, 0]),
                  _stacked([solve_lower(f.Lv, np.eye(f.Lv.shape[0])) for f in rows]),
                  _stacked([f.Lsig for f in rows]), np.ascontiguousarray(mu))


def _stacked(mats):
    return np.ascontiguousarray(np.stack(mats))


def _latent(layer, X):
    """A chunk's latent moments ``h``, ``η`` and what the backward pass needs."""
    if layer.jitted:
        h, eta, b, Kvw, alpha = chunk_latent_forward(
            X, layer.Xi, layer.inv_ls, layer.variance, layer.Lv_inv, layer.Ls, layer.mu)
        return h, eta, (b, Kvw, alpha)
    n, D = X.shape
    Q = len(layer.rows)
    a = np.empty((n, Q, D))
    b = np.empty((n, Q))
    alphas = []
    for q, (k, f) in enumerate(zip(layer.kernels, layer.rows, strict=True)):
        a[:, q, :], b[:, q], alpha, _ = row_marginals(f, k.K(layer.Xi, X), k.Kdiag(X))
        alphas.append(alpha)
    h, eta = latent_moments(a, b, X)
    return h, eta, (b, alphas)


def _latent_vjp(layer, back, dh, deta, X, cache):
    """The chunk's ``(αᵀda, Ā, dΞ, dθ)`` of the W-layer from the adjoints of ``h`` and ``η``."""
    if layer.jitted:
        return chunk_latent_backward(np.ascontiguousarray(dh), np.ascontiguousarray(deta), X,
                                     layer.Xi, layer.inv_ls, layer.variance, *cache, *back)
    b, alphas = cache
    da, db = latent_moments_vjp(dh, deta, b, X)
    Q, m_v, D = layer.mu.shape
    dmu = np.empty((Q, m_v, D))
    Abar = np.empty((Q, m_v, m_v))
    dXi = np.zeros((m_v, D))
    dtheta = np.empty((Q, 1 + D))
    for q, (k, f, alpha) in enumerate(zip(layer.kernels, layer.rows, alphas, strict=True)):
        dmu[q], Abar[q], dKvw, dkdiag = row_local_vjp(f, alpha, da[:, q, :], db[:, q])
        v2 = k.vjp(dKvw, layer.Xi, X)
        dXi += v2.X
        dtheta[q] = v2.theta + k.vjp_diag(dkdiag, X).theta
    return dmu, Abar, dXi, dtheta


def _forward(layer, zeta, sf, X, workspace=None):
    h, eta, lcache = _latent(layer, X)
    stats, ocache = output_psi(zeta, h, eta, sf, workspace=workspace)
    return stats, (lcache, ocache)


def _backward(layer, back, adj, X, Y, cache):
    """A chunk's partial adjoints: ``dζ``, ``dσ_f`` and the W-layer's ``(αᵀda, Ā, dΞ, dθ)``."""
    lcache, ocache = cache
    dh, deta, dzeta, dsf = output_psi_vjp(adj.psi0, Y @ adj.PY.T, adj.Psi2, ocache)
    return dzeta, dsf, _latent_vjp(layer, back, dh, deta, X, lcache)


def _finish_row(kernel, f, dmu, Abar, dtheta, Xi, jitter):
    """The row's ``(dΞ, dμ, dL_q, dθ)`` from its reduced partials and the KL (adjoint −1)."""
    dKv, dmu, dL = row_global_vjp(f, dmu, Abar, -1.0)
    v1 = kernel.vjp(dKv, Xi)
    th = v1.theta + dtheta
    # the jitter is relative to κ_q², so it moves with log κ_q²
    th[0] += jitter * float(kernel.variance) * float(np.trace(dKv))
    return v1.X, dmu, dL, th


@serial_global_steps
def dvmgp_elbo_and_grads(X, Y, p, chol, jitter, *, max_tries=0, chunk_rows=None,
                         n_threads=None, workspaces=None, jitted=None):
    """DVMGP ELBO, its gradient wrt ``zeta``, ``Xi``, ``mu``, ``chol``, ``wtheta``,
    ``signal_std`` and ``noise``, and the collapsed q(u) posterior, chunk by chunk.

    ``chol`` is the (Q, m_v) diagonal or (Q, m_v, m_v) lower factor of the Σ_q; ``grads["chol"]``
    has its shape. The other arguments are those of
    ``sklearn_lvgp.models._dvmgp_parts._elbo_and_grads``;
    ``chunk_rows`` (``None``: from the problem size, never from the thread count) and
    ``n_threads`` (``None``: the enclosing ``threads`` context) are the engine's.
    ``workspaces`` is a list the caller keeps across evaluations (an optimiser's objective):
    when the chunks' caches are kept from the forward to the backward map, chunk ``i`` writes
    its output-layer Ψ-statistics into ``workspaces[i]`` (grown on demand), else into this
    thread's workspace; ``None`` allocates fresh arrays. ``jitted`` chooses the chunk passes:
    ``None`` the jitted ones from :data:`JITTED_MIN_WORK` of work and several chunks, else the
    numpy ones on the calling thread (the choice depends on the problem size only, so every
    ``n_jobs`` gives the same bits).
    """
    zeta, sf, s2, Xi = p["zeta"], float(p["signal_std"]), float(p["noise"]), p["Xi"]
    mu = np.asarray(p["mu"], dtype=np.float64)
    Q, m_v, D = mu.shape
    N, Dy = Y.shape
    m_u = zeta.shape[0]
    Ls = chol_factors(chol, m_v)
    kernels = projection_kernels(p["wtheta"])
    rows = [_row_factors(k, Xi, mu[q], Ls[q], jitter) for q, k in enumerate(kernels)]
    kl = 0.0
    for f in rows:
        kl += f.kl
    work = Q * m_v * (m_v + D) + Q * m_u * (m_u + 1) // 2
    chunks = plan_chunks(N, work, chunk_rows=chunk_rows)
    keep = N * (Q * m_v + m_u) <= KEEP_TOTAL
    kept = [None] * len(chunks)
    if jitted is None:
        jitted = len(chunks) > 1 and N * work >= JITTED_MIN_WORK
    executor = ChunkExecutor(n_threads if jitted else 1)

    def workspace(i):
        return None if workspaces is None else chunk_workspace(workspaces, i, keep, "dvmgp")

    layer = _layer(kernels, rows, p["wtheta"], Xi, mu, bool(jitted))

    def forward(i, a, b):
        stats, cache = _forward(layer, zeta, sf, np.ascontiguousarray(X[a:b]), workspace(i))
        kept[i] = cache if keep else None
        Yc = Y[a:b]
        yc = Yc.reshape(-1)
        return float(stats.psi0), np.asarray(stats.Psi1.T @ Yc), stats.Psi2, float(yc @ yc)

    psi0, PY, Psi2, YY = executor.map_reduce(forward, chunks)
    kern = output_kernel(sf, Q)
    F, post = collapsed_bound_from_stats(N, Dy, psi0, PY, Psi2, YY, kern.K(zeta), s2,
                                         jitter=jitter, max_tries=max_tries)
    adj = collapsed_stats_vjp(post)
    for f in rows:
        f.backward_factors()
    back = ((_stacked([f.Kinv_mu for f in rows]), _stacked([f.Sig @ f.Kinv for f in rows]))
            if layer.jitted else ())

    def backward(i, a, b):
        cache = (kept[i] if kept[i] is not None
                 else _forward(layer, zeta, sf, np.ascontiguousarray(X[a:b]), workspace(i))[1])
        kept[i] = None
        return _backward(layer, back, adj, np.ascontiguousarray(X[a:b]), Y[a:b], cache)

    dzeta, dsf, (dmu_data, Abar, dXi, dtheta_data) = executor.map_reduce(backward, chunks)
    dmu = np.empty_like(mu)
    dchol = np.empty((Q, m_v)) if np.ndim(chol) == 2 else np.empty((Q, m_v, m_v))
    dtheta = np.empty((Q, 1 + D))
    for q, (k, f) in enumerate(zip(kernels, rows, strict=True)):
        dXi_q, dmu[q], dL, dtheta[q] = _finish_row(k, f, dmu_data[q], Abar[q],
                                                   dtheta_data[q], Xi, jitter)
        dXi = dXi + dXi_q
        dchol[q] = np.diag(dL) if np.ndim(chol) == 2 else dL
    kv = kern.vjp(adj.Kuu, zeta)
    grads = {"zeta": dzeta + kv.X, "Xi": dXi, "mu": dmu, "wtheta": dtheta, "chol": dchol,
             "signal_std": dsf + 2.0 * float(kv.theta[0]) / sf, "noise": adj.noise_variance}
    return F - kl, grads, post
