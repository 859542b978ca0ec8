"""The DVMGP bound as a map-reduce over row chunks.

Given the global parameters — the W-layer's inducing inputs Ξ, q(V) = N(μ_q, Σ_q) and kernels,
the output layer's ζ and σ_f, the noise — a row's q(W) marginals, its latent point
``N(h_i, diag η_i)`` and its Ψ-statistics depend on that row only (de Souza 2020, ch. 4), and the
collapsed bound sees the rows through ψ0, Ψ1ᵀY, Ψ2 and Σy² (Titsias & Lawrence 2010, eq. 14).
So an evaluation of :class:`DVMGPBound`, a two-pass bound of the protocol
(:mod:`sklearn_lvgp.engine._protocol`), is: the W-layer's factors chol(K_v,q) and KL once
(:meth:`~DVMGPBound.prepare`); a forward map (projection, latent moments, output Ψ-statistics
per chunk); the global collapsed step (:meth:`~DVMGPBound.finish`); a backward map that
returns, per q, the chunk's share of ``αᵀda`` (the μ adjoint), ``Ā = (α ∘ db) αᵀ`` and the
kernel adjoints of K_vw and k(x, x); and a final step (:meth:`~DVMGPBound.gradient`) that
turns the reduced ``Σ αᵀda`` and ``Σ Ā`` into the adjoints of K_v, μ and Σ_q, as
:func:`~sklearn_lvgp.variational._projection.projection_vjp` does for the whole data at once.
The rows (``X`` and ``Y``) live in a row source: in memory
(:class:`~sklearn_lvgp.engine._rows.InMemoryRows`, :func:`dvmgp_elbo_and_grads`) or partitioned
on Dask (:class:`~sklearn_lvgp.engine._dask.DaskRows`); the bound has no local parameters.

What :class:`~sklearn_lvgp.DVMGP` assembles from it works on the model's named blocks (ζ, Ξ,
μ, the q(V) Cholesky entries, the kernels' θ, σ_f, σ²): their packer (:func:`dvmgp_packer`),
their start (:func:`dvmgp_initial_blocks`, de Souza 2020, §4.4), the ELBO with its gradient
per block (:func:`dvmgp_objective`); the predictive distribution of a fitted model is
:class:`~sklearn_lvgp.bounds._dvmgp_predictive.DVMGPPredictive` (§4.3.1).

On problems of :data:`JITTED_MIN_WORK` or more, a chunk's projection passes are one jitted
call each (:mod:`~sklearn_lvgp.variational._projection_numba`), which releases the GIL; as
numpy products per row (kept for smaller problems, where they need no compilation) they hold
it for most of their time, so those run on one thread.
"""

from typing import NamedTuple

import numpy as np

from .._core.init import kmeans_centres, pca_components
from .._core.linalg import solve_lower
from .._core.params import ParamPacker
from ..engine._executor import serial_global_steps
from ..engine._protocol import ChunkedBound, evaluate_bound
from ..engine._rows import InMemoryRows
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
from ._collapsed_global import (
    collapsed_bound_from_stats,
    collapsed_stats_vjp,
)

__all__ = ["DVMGPBound", "DVMGPParams", "DVMGPStep", "RowData",
           "dvmgp_elbo_and_grads", "dvmgp_evaluate", "dvmgp_initial_blocks", "dvmgp_objective",
           "dvmgp_packer", "qv_cholesky", "row_work", "JITTED_MIN_WORK"]

#: Evaluations of less estimated work (rows × work per row) run the numpy passes, one chunk
#: after another on the calling thread: the jitted passes cost about 2 s of compilation on a
#: machine's first fit, which a fit this small does not earn back, and the numpy passes hold
#: the GIL, so threads would only slow them (200 rows, ten features: 8.3 ms per evaluation on
#: one thread, 12.8 ms on two; jitted 6.5 and 5.9 ms).
JITTED_MIN_WORK = 2 ** 23
#: Least estimated work of a chunk of its own (the engine's ``min_work``, in the units of
#: :func:`row_work`): about 10 ms of one thread's work (2-core VM), so 5·10⁴ rows are cut into
#: 32 chunks (16 at the engine's default). With 64 the two-thread step took 11 % longer
#: (96.7 against 87.0 ms for 16 and 87.3 for 32 chunks; one thread 89.2, 89.7, 85.9 ms).
CHUNK_MIN_WORK = 3 * 2 ** 19


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


def row_work(Q, m_v, D, m_u):
    """Estimated inner-loop work of one row: the W-layer's Q·m_v·(m_v + D) and the output
    layer's Q·m_u(m_u + 1)/2 Ψ2 pairs (the engine's chunk-plan estimate)."""
    return Q * m_v * (m_v + D) + Q * m_u * (m_u + 1) // 2


class DVMGPParams(NamedTuple):
    """Parameters of one evaluation of :class:`DVMGPBound`.

    ``chol`` is the (Q, m_v) diagonal or (Q, m_v, m_v) lower factor of the Σ_q; ``n_rows`` and
    ``n_outputs`` are the shape of the targets the row source holds; ``jitted`` chooses the
    chunk passes (``None``: the jitted ones from :data:`JITTED_MIN_WORK` of work and several
    chunks, else the numpy ones; ``True``/``False`` force them).
    """

    zeta: np.ndarray
    Xi: np.ndarray
    mu: np.ndarray
    chol: np.ndarray
    wtheta: np.ndarray
    signal_std: float
    noise: float
    jitter: float
    n_rows: int
    n_outputs: int
    max_tries: int = 0
    jitted: object = None


class _Globals(NamedTuple):
    """What :meth:`DVMGPBound.prepare` returns: the parameters, the W-layer's kernels and row
    factors, its KL, the numpy layer and (when the jitted passes may run) the jitted one."""

    params: DVMGPParams
    kernels: list
    rows: list
    kl: float
    layer: _Layer
    jitted_layer: object
    work: int


class DVMGPStep(NamedTuple):
    """The global step of :class:`DVMGPBound`: the collapsed bound F, the q(u) posterior, the
    adjoints of the reduced statistics, the jitted backward pass's factors and the output
    kernel."""

    F: float
    post: object
    adj: object
    back: tuple
    kern: object


class DVMGPBound(ChunkedBound):
    """The DVMGP bound (de Souza 2020, ch. 4) as a two-pass protocol bound.

    Rows: ``X`` (standardised inputs) and ``Y`` (standardised targets); no local parameters.
    Forward pass: a chunk's (ψ0, Ψ1ᵀY, Ψ2, Σy²) at its latent Gaussians; global step: the
    collapsed bound and the adjoints of those statistics; backward pass: the chunk's share of
    ``(dζ, dσ_f, (αᵀda, Ā, dΞ, dθ))``; :meth:`gradient`: the ELBO (bound − KL) and the
    gradients ``zeta``, ``Xi``, ``mu``, ``wtheta``, ``chol``, ``signal_std``, ``noise``.
    :meth:`prepare` takes a :class:`DVMGPParams`.
    """

    row_names = ("X", "Y")

    def prepare(self, params):
        Xi = params.Xi
        mu = np.asarray(params.mu, dtype=np.float64)
        Q, m_v, D = mu.shape
        Ls = chol_factors(params.chol, m_v)
        kernels = projection_kernels(params.wtheta)
        rows = [_row_factors(k, Xi, mu[q], Ls[q], params.jitter) for q, k in enumerate(kernels)]
        kl = 0.0
        for f in rows:
            kl += f.kl
        work = row_work(Q, m_v, D, params.zeta.shape[0])
        may_jit = (params.n_rows * work >= JITTED_MIN_WORK if params.jitted is None
                   else bool(params.jitted))
        return _Globals(params, kernels, rows, kl,
                        _layer(kernels, rows, params.wtheta, Xi, mu, False),
                        _layer(kernels, rows, params.wtheta, Xi, mu, True) if may_jit else None,
                        work)

    def chunk_cost(self, G):
        Q, m_v, _ = np.shape(G.params.mu)
        return G.work, None, Q * m_v + G.params.zeta.shape[0], CHUNK_MIN_WORK

    def plan_key(self, G):
        return np.shape(G.params.mu) + (G.params.zeta.shape[0],)

    @staticmethod
    def _jitted(G, ctx):
        """Whether this chunk takes the jitted passes (from the problem size and the number of
        chunks only, so every thread count gives the same bits)."""
        P = G.params
        if P.jitted is not None:
            return bool(P.jitted)
        return ctx.n_chunks > 1 and P.n_rows * G.work >= JITTED_MIN_WORK

    def chunk_stats(self, G, rows, ctx):
        P = G.params
        layer = G.jitted_layer if self._jitted(G, ctx) else G.layer
        stats, cache = _forward(layer, P.zeta, float(P.signal_std),
                                np.ascontiguousarray(rows["X"]), ctx.workspace)
        if ctx.cache is not None:
            ctx.cache[ctx.index] = cache if ctx.keep else None
        Yc = rows["Y"]
        yc = Yc.reshape(-1)
        return float(stats.psi0), np.asarray(stats.Psi1.T @ Yc), stats.Psi2, float(yc @ yc)

    def finish(self, G, stats):
        P = G.params
        psi0, PY, Psi2, YY = stats
        kern = output_kernel(float(P.signal_std), np.shape(P.mu)[0])
        F, post = collapsed_bound_from_stats(P.n_rows, P.n_outputs, psi0, PY, Psi2, YY,
                                             kern.K(P.zeta), float(P.noise), jitter=P.jitter,
                                             max_tries=P.max_tries)
        adj = collapsed_stats_vjp(post)
        for f in G.rows:
            f.backward_factors()
        back = ((_stacked([f.Kinv_mu for f in G.rows]), _stacked([f.Sig @ f.Kinv for f in G.rows]))
                if G.jitted_layer is not None else ())
        return DVMGPStep(F, post, adj, back, kern)

    def chunk_backward(self, G, step, rows, ctx, need_local=True):
        P = G.params
        jitted = self._jitted(G, ctx)
        layer, back = (G.jitted_layer, step.back) if jitted else (G.layer, ())
        X = np.ascontiguousarray(rows["X"])
        cache = None if ctx.cache is None else ctx.cache[ctx.index]
        if cache is None:
            cache = _forward(layer, P.zeta, float(P.signal_std), X, ctx.workspace)[1]
        return None, _backward(layer, back, step.adj, X, rows["Y"], cache)

    def gradient(self, G, step, partials):
        P = G.params
        dzeta, dsf, (dmu_data, Abar, dXi, dtheta_data) = partials
        mu = G.layer.mu
        Q, m_v, D = mu.shape
        diag = np.ndim(P.chol) == 2
        dmu = np.empty_like(mu)
        dchol = np.empty((Q, m_v)) if diag else np.empty((Q, m_v, m_v))
        dtheta = np.empty((Q, 1 + D))
        for q, (k, f) in enumerate(zip(G.kernels, G.rows, strict=True)):
            dXi_q, dmu[q], dL, dtheta[q] = _finish_row(k, f, dmu_data[q], Abar[q],
                                                       dtheta_data[q], P.Xi, P.jitter)
            dXi = dXi + dXi_q
            dchol[q] = np.diag(dL) if diag else dL
        sf = float(P.signal_std)
        kv = step.kern.vjp(step.adj.Kuu, P.zeta)
        grads = {"zeta": dzeta + kv.X, "Xi": dXi, "mu": dmu, "wtheta": dtheta, "chol": dchol,
                 "signal_std": dsf + 2.0 * float(kv.theta[0]) / sf,
                 "noise": step.adj.noise_variance}
        return step.F - G.kl, grads


#: The bound object the entry points run (it holds no data).
BOUND = DVMGPBound()


def dvmgp_evaluate(rows, p, chol, jitter, n_rows, n_outputs, *, max_tries=0, jitted=None):
    """``(elbo, grads, post)`` of :class:`DVMGPBound` over the row source ``rows``.

    Parameters
    ----------
    rows : row source
        :class:`~sklearn_lvgp.engine._rows.InMemoryRows`,
        :class:`~sklearn_lvgp.engine._dask.DaskRows` or a minibatch of one, holding ``"X"``
        (standardised inputs) and ``"Y"`` (standardised targets).
    p : dict
        Blocks ``zeta``, ``Xi``, ``mu``, ``wtheta``, ``signal_std``, ``noise``.
    chol : ndarray of shape (Q, m_v) or (Q, m_v, m_v)
        Cholesky diagonals or lower factors of the Σ_q; ``grads["chol"]`` has its shape.
    jitter : float
        Relative jitter on ``K_u`` and each ``K_v``.
    n_rows, n_outputs : int
        Shape of the targets ``rows`` holds.
    max_tries : int, default=0
        Jitter escalations of ``K_u`` allowed.
    jitted : bool or None, default=None
        As in :class:`DVMGPParams`.

    Returns
    -------
    elbo : float
    grads : dict
    post : CollapsedPosterior
    """
    params = DVMGPParams(p["zeta"], p["Xi"], p["mu"], chol, p["wtheta"], p["signal_std"],
                         p["noise"], jitter, int(n_rows), int(n_outputs), max_tries, jitted)
    out = evaluate_bound(BOUND, params, rows, need_local=False)
    return out.value, out.grads, out.step.post


@serial_global_steps
def dvmgp_elbo_and_grads(X, Y, p, chol, jitter, *, max_tries=0, chunk_rows=None,
                         n_threads=None, workspaces=None, jitted=None):
    """DVMGP ELBO, its gradient wrt ``zeta``, ``Xi``, ``mu``, ``chol``, ``wtheta``,
    ``signal_std`` and ``noise``, and the collapsed q(u) posterior, chunk by chunk in memory.

    :class:`DVMGPBound` over an :class:`~sklearn_lvgp.engine._rows.InMemoryRows` of ``X`` and
    ``Y``. ``chol`` is the (Q, m_v) diagonal or (Q, m_v, m_v) lower factor of the Σ_q;
    ``grads["chol"]`` has its shape. The other arguments are those of
    :func:`dvmgp_objective`;
    ``chunk_rows`` (``None``: from the problem size, never from the thread count) and
    ``n_threads`` (``None``: the enclosing ``threads`` context) are the engine's.
    ``workspaces`` is a list the caller keeps across evaluations (an optimiser's objective):
    when the chunks' caches are kept from the forward to the backward map, chunk ``i`` writes
    its output-layer Ψ-statistics into ``workspaces[i]`` (grown on demand), else into this
    thread's workspace; ``None`` uses a fresh list. ``jitted`` chooses the chunk passes:
    ``None`` the jitted ones from :data:`JITTED_MIN_WORK` of work and several chunks, else the
    numpy ones on the calling thread (the choice depends on the problem size only, so every
    ``n_jobs`` gives the same bits).
    """
    N, Dy = Y.shape
    Q, m_v, D = np.shape(p["mu"])
    if jitted is None:
        threaded = N * row_work(Q, m_v, D, p["zeta"].shape[0]) >= JITTED_MIN_WORK
    else:
        threaded = bool(jitted)
    # the numpy passes hold the GIL: they run on the calling thread
    rows = InMemoryRows({"X": X, "Y": Y}, chunk_rows=chunk_rows,
                        n_threads=n_threads if threaded else 1, prefix="dvmgp")
    if workspaces is not None:
        rows.chunk_workspaces = workspaces
    return dvmgp_evaluate(rows, p, chol, jitter, N, Dy, max_tries=max_tries, jitted=jitted)


# ------------------------------------------------------------------ the estimator's blocks

def qv_cholesky(p, qv_covariance):
    """The Cholesky factors of the Σ_q from the blocks ``c_diag`` (and ``c_off``).

    Parameters
    ----------
    p : dict
        Blocks ``c_diag`` of shape (Q, m_v) and, for a full covariance, ``c_off`` of shape
        (Q, m_v(m_v − 1)/2) (the strict lower triangle, row by row).
    qv_covariance : {"diag", "full"}
        Shape of Σ_q.

    Returns
    -------
    chol : ndarray of shape (Q, m_v) or (Q, m_v, m_v)
        Diagonals, or lower factors.
    """
    c = p["c_diag"]
    if qv_covariance == "diag":
        return c
    Q, m_v = c.shape
    L = np.zeros((Q, m_v, m_v))
    i, j = np.tril_indices(m_v, -1)
    L[:, i, j] = p["c_off"]
    L[:, np.arange(m_v), np.arange(m_v)] = c
    return L


def dvmgp_packer(qv_covariance, Q, D, m_u, m_v):
    """The :class:`~sklearn_lvgp._core.params.ParamPacker` of the free blocks: ζ (m_u, Q),
    Ξ (m_v, D), μ (Q, m_v, D), log c_diag, [c_off], θ_q = (log κ_q², log ℓ_q) (Q, 1 + D),
    log σ_f and log σ²."""
    blocks = [("zeta", (m_u, Q)), ("Xi", (m_v, D)), ("mu", (Q, m_v, D)),
              ("c_diag", (Q, m_v), "log")]
    if qv_covariance == "full":
        blocks.append(("c_off", (Q, m_v * (m_v - 1) // 2)))
    blocks += [("wtheta", (Q, 1 + D)), ("signal_std", (), "log"), ("noise", (), "log")]
    return ParamPacker(blocks)


def dvmgp_initial_blocks(Xs, Q, m_u, m_v, seed, length_scale, noise_variance_init, var_y,
                         P=None):
    """The initial blocks of de Souza (2020, §4.4).

    PCA directions for every ``μ_q``, k-means centres of the inputs for Ξ and of their PCA
    projections for ζ, unit κ_q, the given length scale, c = 1.001 / D, σ_f² = ``var_y`` and
    σ² = ``noise_variance_init · var_y``.

    Parameters
    ----------
    Xs : ndarray of shape (n, D)
        Standardised training inputs (or the rows the k-means start from).
    Q, m_u, m_v : int
        Latent dimension and numbers of inducing inputs of the two layers.
    seed : int
        Seed of the k-means.
    length_scale : float
        Initial length scale of the W-layer kernels.
    noise_variance_init : float
        Initial noise variance as a fraction of ``var_y``.
    var_y : float
        Variance of the standardised targets.
    P : ndarray of shape (Q, D), default=None
        The PCA directions when they come from elsewhere; ``None``: from ``Xs``.

    Returns
    -------
    p : dict
        The blocks of :func:`dvmgp_packer` (``c_off`` zero).
    """
    D = Xs.shape[1]
    P = pca_components(Xs, Q) if P is None else P
    Xi0 = kmeans_centres(Xs, m_v, seed)
    zeta0 = kmeans_centres(Xs @ P.T, m_u, seed)
    mu0 = np.broadcast_to(P[:, None, :], (Q, m_v, D)).copy()
    wtheta0 = np.zeros((Q, 1 + D))
    wtheta0[:, 1:] = np.log(length_scale)
    return {"zeta": zeta0, "Xi": Xi0, "mu": mu0, "c_diag": np.full((Q, m_v), 1.001 / D),
            "c_off": np.zeros((Q, m_v * (m_v - 1) // 2)),
            "wtheta": wtheta0, "signal_std": np.sqrt(var_y),
            "noise": float(noise_variance_init) * var_y}


class RowData(NamedTuple):
    """Standardised training rows held by a row source (a fit on Dask), in place of the
    ``(X, Y)`` arrays of :func:`dvmgp_objective`: ``rows`` holds ``"X"`` and ``"Y"`` (a
    :class:`~sklearn_lvgp.engine._dask.DaskRows` or a subset of its rows)."""

    rows: object
    n_rows: int
    n_outputs: int


def dvmgp_objective(X, Y, p, jitter, qv_covariance, *, max_tries=0, workspaces=None):
    """DVMGP ELBO, its gradient wrt each block of :func:`dvmgp_packer`, and the q(u) posterior.

    The bound is that of de Souza (2020, app. A.1.3), with its log-determinant terms
    corrected to ``+½ log|K_u| − ½ log|σ²K_u + Ψ2|``.

    Parameters
    ----------
    X : ndarray of shape (n, D) or RowData
        Standardised inputs, or the rows of a fit on Dask (with ``Y=None``).
    Y : ndarray of shape (n, D_y) or None
        Standardised targets.
    p : dict
        Blocks ``zeta``, ``Xi``, ``mu`` (Q, m_v, D), ``c_diag`` (and ``c_off`` for a full
        covariance), ``wtheta``, ``signal_std``, ``noise``.
    jitter : float
        Relative jitter on ``K_u`` and ``K_v``.
    qv_covariance : {"diag", "full"}
        Shape of Σ_q.
    max_tries : int, default=0
        Jitter escalations of ``K_u`` allowed (0 inside the optimiser).
    workspaces : list, default=None
        Buffers reused across evaluations (an optimiser's objective keeps one list); see
        :func:`dvmgp_elbo_and_grads`.

    Returns
    -------
    elbo : float
    grads : dict
        Gradient of the ELBO wrt every block of ``p`` (natural space).
    post : CollapsedPosterior
    """
    chol = qv_cholesky(p, qv_covariance)
    if isinstance(X, RowData):
        elbo, grads, post = dvmgp_evaluate(X.rows, p, chol, jitter, X.n_rows, X.n_outputs,
                                           max_tries=max_tries)
    else:
        elbo, grads, post = dvmgp_elbo_and_grads(X, Y, p, chol, jitter, max_tries=max_tries,
                                                 workspaces=workspaces)
    dchol = grads.pop("chol")
    if qv_covariance == "diag":
        grads["c_diag"] = dchol
    else:
        m_v = dchol.shape[1]
        i, j = np.tril_indices(m_v, -1)
        grads["c_diag"] = dchol[:, np.arange(m_v), np.arange(m_v)]
        grads["c_off"] = dchol[:, i, j]
    return elbo, grads, post
