"""The collapsed bound as a map-reduce over row chunks (uncertain and deterministic inputs).

The collapsed bound of Titsias & Lawrence (2010) sees the data only through sums over rows —
ψ0, Ψ1ᵀY, Ψ2 and Σy² (Gal, van der Wilk & Rasmussen 2014, :cite:`gal2014distributed`, eq. 3.3)
— so one evaluation is

1. a **forward map**: each chunk of rows returns its partial statistics (O(M² + M·D) numbers);
2. the **global step**: the reduced statistics give F and the adjoints dF/dψ0, dF/dΨ1ᵀY,
   dF/dΨ2, dF/dK_uu, dF/dσ²
   (:func:`sklearn_lvgp.bounds._collapsed_global.collapsed_bound_from_stats`);
3. a **backward map**: each chunk turns those global adjoints into the gradients of its own rows
   (μ_n, S_n, written in place) and partial gradients of the globals (Z, θ), reduced in chunk
   order. The adjoint of a row's Ψ1 is ``y_n (dF/dΨ1ᵀY)ᵀ``, so no N×M array is ever formed.

When the per-chunk caches of the whole data set are small they are kept from the forward map to
the backward map; otherwise the backward map recomputes its chunk's forward pass, so memory is
the data, the local parameters and one chunk's working arrays per thread.
"""

import math
from typing import NamedTuple

import numpy as np

from .._core.blas_numba import DTRSM, triangular_inplace
from .._core.linalg import cholesky_jitter, logdet_from_chol, solve_lower, solve_upper, symmetrise
from .._core.workspace import thread_workspace
from ..engine._protocol import ChunkedBound, evaluate_bound
from ..engine._rows import KEEP_TOTAL, InMemoryRows
from ..expectations import PointRule, psi_statistics, psi_vjp
from ..expectations._ut_stationary import (
    axis_point_chunk_grads,
    axis_point_chunk_stats,
    uses_axis_points,
)
from ..kernels._stationary import K_cached_into
from ..variational._kl import standard_normal_kl_and_vjp
from ._collapsed_global import CollapsedPosterior, collapsed_bound_from_stats, collapsed_stats_vjp

__all__ = ["CollapsedPsi", "CollapsedKernel", "CollapsedPsiBound", "CollapsedKernelBound",
           "PsiParams", "KernelParams", "KEEP_TOTAL", "psi_chunk_stats", "psi_chunk_grads",
           "rule_rows"]

#: Largest ``rows · M`` (Ψ1-sized arrays) and ``rows · K · M`` (point-kernel arrays) of one chunk:
#: a thread's working set is a few such arrays (2–4 MiB each) whatever N is, so peak memory grows
#: with N only through the data and the local parameters.
CHUNK_ELEMENTS = 2 ** 18
CHUNK_POINT_ELEMENTS = 2 ** 19


def rule_rows(rule, a, b):
    """The rule of rows ``a:b`` (per-point Monte Carlo nodes are sliced; shared rules pass)."""
    if isinstance(rule, PointRule) and rule.nodes.ndim == 3:
        return rule._replace(nodes=rule.nodes[a:b])
    return rule


def psi_row_cost(rule, M, Q):
    """Per-row work and kept entries of the Ψ-statistics under ``rule``, and the chunk cap."""
    if isinstance(rule, PointRule):
        per_row = rule.weights.shape[0] * M
        return per_row * Q, per_row, CHUNK_POINT_ELEMENTS // max(1, per_row)
    # the two-RBF entries are never kept across a chunk (the backward map recomputes them
    # block by block), so a chunk's memory is its Ψ1 and Ψ1 adjoint
    pairs = M * (M + 1) // 2
    return pairs * Q + M * Q, pairs + M, CHUNK_ELEMENTS // max(1, M)


def psi_chunk_stats(kernel, Z, rule, mu, S, Y, *, need_cache=False, workspace=None,
                    one_call=False):
    """Forward map of one chunk: its (ψ0, Ψ1ᵀY, Ψ2, Σy²) and, if asked, the backward cache.

    Pure: it reads its arguments only, so it can run on any thread or on a Dask worker.
    ``one_call`` (the unscented rule with a stationary kernel only, :func:`uses_one_call`)
    computes the statistics in one jitted call instead of the point-set path's numpy calls.
    """
    Y = np.ascontiguousarray(Y)
    y = Y.reshape(-1)
    if one_call:
        Ks, scratch = _axis_point_buffers(workspace, mu.shape[0], rule, Z)
        psi0, PY, Psi2 = axis_point_chunk_stats(kernel, Z, rule, mu, S, Y, Ks, scratch)
        return (psi0, PY, Psi2, float(y @ y)), (Ks if need_cache else None)
    stats, cache = psi_statistics(kernel, Z, mu, S, rule, workspace=workspace,
                                  need_cache=need_cache)
    return (float(stats.psi0), stats.Psi1.T @ Y, stats.Psi2, float(y @ y)), cache


def psi_chunk_grads(kernel, Z, rule, mu, S, Y, adj, dPY_T, *, cache=None, need_local=True,
                    need_S=True, workspace=None, one_call=False):
    """Backward map of one chunk: local adjoints ``(dmu, dS)`` and partial ``(dZ, dθ)``.

    ``adj`` is the global step's :class:`~sklearn_lvgp.bounds._collapsed_global.StatsVJP` and
    ``dPY_T`` its ``PY`` adjoint transposed; the chunk's Ψ1 adjoint is ``Y dPY_T``. Without a
    ``cache`` the chunk's forward pass is recomputed, all but its Ψ2. ``one_call`` as in
    :func:`psi_chunk_stats` (whose cache it then takes).
    """
    if one_call:
        Ks, scratch = _axis_point_buffers(workspace, mu.shape[0], rule, Z)
        dmu, dS, dZ, dtheta = axis_point_chunk_grads(
            kernel, Z, rule, mu, S, np.ascontiguousarray(Y), float(adj.psi0), dPY_T, adj.Psi2,
            Ks if cache is None else cache, cache is not None, scratch)
        local = (dmu, dS if need_S else None) if need_local else None
        return local, (dZ, dtheta)
    if cache is None:
        _, cache = psi_statistics(kernel, Z, mu, S, rule, workspace=workspace, need_psi2=False)
    with np.errstate(divide="ignore", invalid="ignore"):  # dS of S = 0 rows (S as data)
        pv = psi_vjp(adj.psi0, Y @ dPY_T, adj.Psi2, cache)
    local = (pv.mu, pv.S if need_S else None) if need_local else None
    return local, (pv.Z, pv.theta)


def uses_one_call(kernel, rule, n_chunks):
    """Whether the chunks of a pass take the one-call path of :func:`psi_chunk_stats`: the
    unscented rule with a stationary kernel, on more than one chunk (a problem large enough to
    share between threads; the choice depends on the problem size only)."""
    return n_chunks > 1 and isinstance(rule, PointRule) and uses_axis_points(kernel, rule)


def _axis_point_buffers(workspace, n, rule, Z):
    """The one-call path's kernel rows (in ``workspace``: the chunk's own when its cache is
    kept) and their scratch twin (this thread's)."""
    shape = (n, rule.weights.shape[0], Z.shape[0])
    if workspace is None:
        return np.empty(shape), np.empty(shape)
    return (workspace.array("axis-points/Ks", shape),
            thread_workspace().child("axis-points").array("scratch", shape))


class PsiParams(NamedTuple):
    """Parameters of one evaluation of :class:`CollapsedPsi`."""

    kernel: object
    Z: np.ndarray
    noise_variance: float
    rule: object
    n_rows: int
    n_outputs: int
    jitter: float = 1e-6
    max_tries: int = 0
    need_S: bool = True


class CollapsedPsi(ChunkedBound):
    """The collapsed bound with Gaussian inputs q(x_n) = N(μ_n, diag S_n), as a protocol bound.

    Rows: ``Y`` (targets, centred data for a GPLVM), ``mu`` and ``S`` (the inputs' means and
    variances). Forward pass: a chunk's (ψ0, Ψ1ᵀY, Ψ2, Σy²); global step: F and the adjoints of
    those statistics; backward pass: the chunk's ``mu`` and ``S`` gradients and its share of
    ``(dZ, dθ)``. :meth:`prepare` takes a :class:`PsiParams`.
    """

    row_names = ("Y", "mu", "S")

    def prepare(self, params):
        return params

    def chunk_cost(self, G):
        M, Q = G.Z.shape
        work, kept, cap = psi_row_cost(G.rule, M, Q)
        return work, max(1, cap), kept

    def plan_key(self, G):
        rule = G.rule
        return (isinstance(rule, PointRule) and rule.weights.shape[0],) + G.Z.shape

    def chunk_stats(self, G, rows, ctx):
        one_call = uses_one_call(G.kernel, G.rule, ctx.n_chunks)
        mu, S = rows["mu"], rows["S"]
        if one_call:
            mu, S = np.ascontiguousarray(mu), np.ascontiguousarray(S)
        stats, cache = psi_chunk_stats(G.kernel, G.Z, rule_rows(G.rule, ctx.start, ctx.stop),
                                       mu, S, rows["Y"], need_cache=ctx.keep,
                                       workspace=ctx.workspace, one_call=one_call)
        if ctx.cache is not None:
            ctx.cache[ctx.index] = cache
        return stats

    def finish(self, G, stats):
        return psi_global_step(G.kernel, G.Z, G.n_rows, G.n_outputs, stats, G.noise_variance,
                               jitter=G.jitter, max_tries=G.max_tries)

    def chunk_backward(self, G, step, rows, ctx, need_local=True):
        one_call = uses_one_call(G.kernel, G.rule, ctx.n_chunks)
        mu, S = rows["mu"], rows["S"]
        if one_call:
            mu, S = np.ascontiguousarray(mu), np.ascontiguousarray(S)
        local, partial = psi_chunk_grads(
            G.kernel, G.Z, rule_rows(G.rule, ctx.start, ctx.stop), mu, S, rows["Y"], step.adj,
            step.dPY_T, cache=None if ctx.cache is None else ctx.cache[ctx.index],
            need_local=need_local, need_S=G.need_S, workspace=ctx.workspace,
            one_call=one_call)
        return (None if local is None else {"mu": local[0], "S": local[1]}), partial

    def gradient(self, G, step, partials):
        F, grads, _ = psi_finish(G.kernel, step, partials)
        return F, grads


class CollapsedPsiBound:
    """Chunked collapsed bound with Gaussian inputs q(x_n) = N(μ_n, diag S_n), in memory.

    :class:`CollapsedPsi` over the rows ``Y`` held for the whole fit (and the ``mu``, ``S`` of
    each evaluation), run on the thread executor.

    Parameters
    ----------
    Y : ndarray of shape (N, D)
        Targets (centred data for a GPLVM), held for the whole fit.
    chunk_rows : int, default=None
        Rows per chunk; ``None`` chooses from the problem size (never from the thread count).
    n_threads : int, default=None
        Threads; ``None`` takes the enclosing :func:`sklearn_lvgp._core.parallel.threads` context.
    """

    bound = CollapsedPsi()

    def __init__(self, Y, *, chunk_rows=None, n_threads=None):
        self.Y = np.ascontiguousarray(Y, dtype=np.float64)
        self.rows = InMemoryRows({"Y": self.Y}, chunk_rows=chunk_rows, n_threads=n_threads,
                                 prefix="collapsed")

    @property
    def n_threads(self):
        return self.rows.n_threads

    @property
    def _chunk_ws(self):
        return self.rows.chunk_workspaces

    def plan(self, rule, M, Q):
        """Chunks and keep decision for ``M`` inducing inputs and this rule's shape."""
        G = PsiParams(None, np.empty((M, Q)), 0.0, rule, *self.Y.shape)
        return self.rows.chunks(self.bound, G)

    def evaluate(self, kernel, Z, mu, S, noise_variance, rule, *, jitter=1e-6, max_tries=0,
                 need_S=True, need_local=True):
        """Bound F (without any KL term), its gradients and the collapsed posterior.

        Parameters
        ----------
        kernel : Kernel
            Kernel at its current hyperparameters.
        Z : ndarray of shape (M, Q)
            Inducing inputs.
        mu, S : ndarray of shape (N, Q)
            Means and variances of the inputs.
        noise_variance : float
            σ².
        rule : "analytic" or PointRule
            Expectation rule (per-point Monte Carlo nodes allowed).
        jitter, max_tries
            As in :func:`~sklearn_lvgp.bounds._collapsed_global.collapsed_bound`.
        need_S : bool, default=True
            Whether the adjoint of ``S`` is wanted (``False`` when ``S`` is data: it may then
            contain zeros, whose adjoint is undefined).
        need_local : bool, default=True
            Whether the adjoints of ``mu`` and ``S`` are wanted (``False`` in a step over the
            global parameters only).

        Returns
        -------
        F : float
        grads : dict
            ``"mu"``, ``"S"`` (N, Q; ``None`` unless asked for), ``"Z"`` and ``"theta"`` (the
            K_uu adjoint already chained in) and ``"noise"``.
        post : CollapsedPosterior
        """
        self.rows.update(mu=mu, S=S)
        params = PsiParams(kernel, Z, noise_variance, rule, *self.Y.shape, jitter, max_tries,
                           need_S)
        F, grads, local, _, step = evaluate_bound(self.bound, params, self.rows,
                                                  need_local=need_local)
        grads.update(mu=None if local is None else local["mu"],
                     S=None if local is None else local["S"])
        return F, grads, step.post

    def elbo(self, kernel, Z, mu, S, noise_variance, rule, *, jitter=1e-6, max_tries=0):
        """The Bayesian GPLVM's ELBO: :meth:`evaluate` minus KL(q(X) ‖ N(0, I)) (Titsias &
        Lawrence 2010), the KL's gradients included in ``grads["mu"]`` and ``grads["S"]``."""
        F, grads, post = self.evaluate(kernel, Z, mu, S, noise_variance, rule, jitter=jitter,
                                       max_tries=max_tries)
        kl, dkl_mu, dkl_S = standard_normal_kl_and_vjp(mu, S)
        grads["mu"] -= dkl_mu
        grads["S"] -= dkl_S
        return F - kl, grads, post


class PsiStep(NamedTuple):
    """The global step of the Ψ-statistics bound: value, posterior and adjoints."""

    F: float
    post: object
    adj: object
    dPY_T: np.ndarray
    Kuu_cache: object


def psi_global_step(kernel, Z, N, D, stats, noise_variance, *, jitter=1e-6, max_tries=0):
    """F, q(u) and the adjoints of the reduced statistics ``(ψ0, Ψ1ᵀY, Ψ2, Σy²)``."""
    psi0, PY, Psi2, YY = stats
    Kuu, kcache = kernel.K_cached(Z)
    F, post = collapsed_bound_from_stats(N, D, psi0, PY, Psi2, YY, Kuu, noise_variance,
                                         jitter=jitter, max_tries=max_tries)
    adj = collapsed_stats_vjp(post)
    return PsiStep(F, post, adj, np.ascontiguousarray(adj.PY.T), kcache)


def psi_finish(kernel, step, partials):
    """Chain the K_uu adjoint into the reduced ``(dZ, dθ)``: ``(F, grads, post)``."""
    dZ, dtheta = partials
    kv = kernel.vjp_cached(step.adj.Kuu, step.Kuu_cache, overwrite_dK=True)
    grads = {"mu": None, "S": None, "Z": dZ + kv.X, "theta": dtheta + kv.theta,
             "noise": step.adj.noise_variance}
    return step.F, grads, step.post


class KernelParams(NamedTuple):
    """Parameters of one evaluation of :class:`CollapsedKernel`."""

    kernel: object
    Z: np.ndarray
    noise_variance: float
    n_rows: int
    n_outputs: int
    jitter: float = 1e-6
    max_tries: int = 0
    need_Z: bool = True


class CollapsedKernel(ChunkedBound):
    """The collapsed bound of sparse GP regression with deterministic inputs (Titsias 2009), as
    a protocol bound.

    The statistics are formed from ``A = L⁻¹K_uf/σ`` (the factor of Ψ2/σ²) rather than from
    Ψ2 = K_fuᵀK_fu, so B = I + AAᵀ and the trace term keep their accuracy near crowded inducing
    inputs. Rows: ``X`` and ``y``. Per chunk: ``AAᵀ``, ``AY``, Σk(x, x), Σ‖a_n‖² and Σy² in the
    forward pass; in the backward pass ``dK_fu = (D Aᵀ(I − B⁻¹) + (Y − Aᵀv) vᵀ/σ²) L⁻¹/σ`` with
    ``v = B⁻¹AY`` for the chunk's rows, handed to the kernel's VJP. :meth:`prepare` takes a
    :class:`KernelParams` and factors ``K_uu``.
    """

    row_names = ("X", "y")

    def prepare(self, params):
        prior = kernel_prior(params.kernel, params.Z, params.noise_variance,
                             jitter=params.jitter, max_tries=params.max_tries)
        return params, prior

    def chunk_cost(self, G):
        params, _ = G
        M, Q = params.Z.shape
        return M * (Q + M + params.n_outputs), CHUNK_ELEMENTS // max(1, M), 2 * M

    def plan_key(self, G):
        return G[0].Z.shape[0]

    @staticmethod
    def _scratch(ctx):
        return None if ctx.workspace is None else thread_workspace().child("kernel-bound-scratch")

    def chunk_stats(self, G, rows, ctx):
        params, prior = G
        stats, cache = kernel_chunk_stats(params.kernel, params.Z, prior, rows["X"], rows["y"],
                                          workspace=ctx.workspace, scratch=self._scratch(ctx))
        if ctx.cache is not None:
            ctx.cache[ctx.index] = cache if ctx.keep else None
        return stats

    def finish(self, G, stats):
        params, prior = G
        return kernel_global_step(params.n_rows, params.n_outputs, prior, stats,
                                  max_tries=params.max_tries)

    def chunk_backward(self, G, step, rows, ctx, need_local=True):
        params, prior = G
        cache = None if ctx.cache is None else ctx.cache[ctx.index]
        return None, kernel_chunk_grads(params.kernel, params.Z, prior, step, rows["X"],
                                        rows["y"], cache, workspace=ctx.workspace,
                                        scratch=self._scratch(ctx))

    def gradient(self, G, step, partials):
        params, prior = G
        F, grads, _ = kernel_finish(params.kernel, prior, step, partials, need_Z=params.need_Z)
        return F, grads


class CollapsedKernelBound:
    """:class:`CollapsedKernel` over rows ``X`` and ``y``, in memory or on Dask.

    Parameters
    ----------
    X : ndarray of shape (N, Q)
        Inputs.
    Y : ndarray of shape (N, D)
        Targets.
    chunk_rows, n_threads
        As in :class:`CollapsedPsiBound`.
    rows : row source, default=None
        The rows ``"X"`` and ``"y"`` already in a row source (e.g.
        :class:`~sklearn_lvgp.engine._dask.DaskRows`); ``X`` and ``Y`` are then ``None``.
    """

    bound = CollapsedKernel()

    def __init__(self, X=None, Y=None, *, chunk_rows=None, n_threads=None, rows=None):
        if rows is None:
            rows = InMemoryRows({"X": np.ascontiguousarray(X, dtype=np.float64),
                                 "y": np.ascontiguousarray(Y, dtype=np.float64)},
                                chunk_rows=chunk_rows, n_threads=n_threads,
                                prefix="kernel-bound")
        self.rows = rows

    @property
    def _chunk_ws(self):
        return self.rows.chunk_workspaces

    def plan(self, M):
        """Chunks and keep decision for ``M`` inducing inputs (in memory)."""
        N, Q = self.rows.arrays["X"].shape
        G = (KernelParams(None, np.empty((M, Q)), 1.0, N, self.rows.arrays["y"].shape[1]), None)
        return self.rows.chunks(self.bound, G)

    def evaluate(self, kernel, Z, noise_variance, *, jitter=1e-6, max_tries=0, need_Z=True):
        """Bound F, gradients wrt Z (if ``need_Z``), θ and σ², and the collapsed posterior.

        Parameters
        ----------
        kernel : Kernel
            Kernel at its current hyperparameters.
        Z : ndarray of shape (M, Q)
            Inducing inputs.
        noise_variance : float
            σ².
        jitter, max_tries
            As in :func:`~sklearn_lvgp.bounds._collapsed_global.collapsed_bound`.
        need_Z : bool, default=True
            Whether the adjoint of ``Z`` is wanted.

        Returns
        -------
        F : float
            The bound (the exact log marginal likelihood when Z = X, up to the jitter).
        grads : dict
            ``"Z"`` (M, Q) or ``None``, ``"theta"``, ``"noise"``.
        post : CollapsedPosterior
            The optimal q(u); its ``Psi1`` and ``Y`` are ``None``.
        """
        params = KernelParams(kernel, Z, noise_variance, self.rows.n_rows,
                              self.rows.shapes["y"][1], jitter, max_tries, need_Z)
        F, grads, _, (_, prior), step = evaluate_bound(self.bound, params, self.rows,
                                                       need_local=False)
        return F, grads, kernel_posterior(prior, step)


class KernelPrior(NamedTuple):
    """Global factors of the deterministic-input bound computed before the forward map."""

    Kuu_cache: object
    L: np.ndarray
    rel_jitter: float
    noise_variance: float
    sigma: float


class KernelStep(NamedTuple):
    """The global step's results that the backward map and the final assembly need."""

    F: float
    B: np.ndarray
    LB: np.ndarray
    Binv: np.ndarray
    c: np.ndarray
    v: np.ndarray
    G: np.ndarray
    W: np.ndarray
    GT: np.ndarray
    dnoise: float
    ddiag: float
    aa_sum: float
    kd_sum: float
    YY: float
    N: int
    D: int


def kernel_prior(kernel, Z, noise_variance, *, jitter=1e-6, max_tries=0):
    """``K_uu`` and its factor (with jitter), before any chunk is seen."""
    Kuu, kucache = kernel.K_cached(Z)
    L, abs_jit = cholesky_jitter(Kuu, jitter, max_tries=max_tries, name="K_uu",
                                 warn=max_tries > 0)
    scale = float(np.mean(np.diag(Kuu)))
    s2 = float(noise_variance)
    return KernelPrior(kucache, np.asfortranarray(L), abs_jit / scale if scale > 0 else 0.0,
                       s2, math.sqrt(s2))


def kernel_chunk_stats(kernel, Z, prior, X, Y, *, workspace=None, scratch=None):
    """Forward map of one chunk: ``(AAᵀ, AY, Σk(x, x), Σ‖a‖², Σy²)`` with ``A = L⁻¹K_uf/σ``,
    and the cache ``(K_fu, kernel cache)`` of its backward map (pure).

    ``K_fu`` is written into ``workspace`` and ``A`` into ``scratch`` when they are given
    (:class:`~sklearn_lvgp._core.workspace.Workspace`; the cache then lives in ``workspace``).
    """
    Kfu, kcache = K_cached_into(kernel, X, Z, workspace, "Kfu")
    # Aᵀ = K_fu L⁻ᵀ/σ, solved in place from the right on an F-ordered (rows, M) copy (faster in
    # BLAS than the left-side solve on (M, rows): doc/developers.rst, "Measured")
    if scratch is None:
        At = np.array(Kfu, order="F")
    else:
        At = scratch.array("A", Kfu.shape[::-1]).T
        np.copyto(At, Kfu)
    triangular_inplace(DTRSM, prior.L, At, True, True, 1.0 / prior.sigma)
    Y = np.ascontiguousarray(Y)
    y = Y.reshape(-1)
    aa = float(np.einsum("nm,nm->", At, At))
    kd = float(np.sum(kernel.Kdiag(X)))
    return (At.T @ At, At.T @ Y, kd, aa, float(y @ y)), (Kfu, kcache)


def kernel_global_step(N, D, prior, stats, *, max_tries=0):
    """F and the global adjoint factors from the reduced statistics (Titsias 2009, eq. 9)."""
    AAt, AY, kd_sum, aa_sum, YY = stats
    L, s2, sigma = prior.L, prior.noise_variance, prior.sigma
    M = L.shape[0]
    eye = np.eye(M)
    B = symmetrise(eye + AAt)
    LB, _ = cholesky_jitter(B, 0.0, max_tries=max_tries,
                            name="B = I + L^-1 Psi2 L^-T / noise", warn=max_tries > 0)
    c = solve_lower(LB, AY) / sigma
    cc = float(np.sum(c * c))
    resid = kd_sum / s2 - aa_sum  # (ψ0 − tr Kuu⁻¹Ψ2) / σ²
    F = (-0.5 * N * D * math.log(2.0 * math.pi * s2) - 0.5 * D * logdet_from_chol(LB)
         - 0.5 * YY / s2 + 0.5 * cc - 0.5 * D * resid)
    v = solve_upper(LB, c) * sigma  # B⁻¹AY
    LBinv = solve_lower(LB, eye)
    Binv = LBinv.T @ LBinv
    G = solve_upper(L, v) / sigma  # Kuu⁻¹-weighted posterior mean weights
    # dK_fu = Aᵀ W + (Y − Aᵀv) Gᵀ/σ² with Aᵀ = K_fu L⁻ᵀ/σ: the L⁻ᵀ goes on the M × M side
    W = np.ascontiguousarray(solve_upper(L, solve_upper(L, D * (eye - Binv)).T) / s2)
    GT = np.ascontiguousarray(G.T / s2)
    dnoise = (-0.5 * N * D / s2 + 0.5 * YY / s2 ** 2 + 0.5 * D * resid / s2
              + 0.5 * D * (M - float(np.trace(Binv))) / s2 - 0.5 * cc / s2
              - 0.5 * float(np.sum(v * v)) / s2 ** 2)
    return KernelStep(float(F), B, LB, Binv, c, v, G, W, GT, float(dnoise), -0.5 * D / s2,
                      float(aa_sum), float(kd_sum), float(YY), N, D)


def kernel_chunk_grads(kernel, Z, prior, step, X, Y, cache=None, *, workspace=None,
                       scratch=None):
    """Backward map of one chunk: partial ``(dZ, dθ)`` (pure; recomputes ``K_fu`` if needed).

    ``dK_fu = (D Aᵀ(I − B⁻¹) + (Y − Aᵀv) vᵀ/σ²) L⁻¹/σ`` for the chunk's rows, written as
    ``K_fu W + (Y − K_fu G) Gᵀ/σ²`` with ``W = D L⁻ᵀ(I − B⁻¹)L⁻¹/σ²`` and ``G = L⁻ᵀv/σ``, so
    the map needs no triangular solve. A recomputed ``K_fu`` goes to ``workspace`` and the
    ``(rows, M)`` products to ``scratch`` when they are given.
    """
    Kfu, kcache = cache if cache is not None else K_cached_into(kernel, X, Z, workspace, "Kfu")
    R = Y - Kfu @ step.G
    if scratch is None:
        dKfu = Kfu @ step.W + R @ step.GT
    else:
        dKfu = np.matmul(Kfu, step.W, out=scratch.array("dKfu", Kfu.shape))
        dKfu += np.matmul(R, step.GT, out=scratch.array("dKfu_residual", Kfu.shape))
    kv = kernel.vjp_cached(np.ascontiguousarray(dKfu), kcache, overwrite_dK=True)
    kd = kernel.vjp_diag(np.full(X.shape[0], step.ddiag), X)
    return kv.Z, kv.theta + kd.theta


def kernel_finish(kernel, prior, step, partials, *, need_Z=True):
    """Chain the K_uu adjoint and assemble ``(F, grads, post)`` from the reduced partials."""
    dZ, dtheta = partials
    L, rel = prior.L, prior.rel_jitter
    M = L.shape[0]
    eye = np.eye(M)
    # dK_uu = −½ L⁻ᵀ (D (B − 2I + B⁻¹) + vvᵀ/σ²) L⁻¹
    dKuu = -0.5 * symmetrise(_sandwich(L, step.D * (step.B - 2.0 * eye + step.Binv))
                             + (step.G @ step.G.T))
    if rel:
        dKuu = dKuu + rel * np.trace(dKuu) / M * eye
    kvu = kernel.vjp_cached(dKuu, prior.Kuu_cache, overwrite_dK=True)
    grads = {"Z": dZ + kvu.X if need_Z else None, "theta": dtheta + kvu.theta,
             "noise": step.dnoise}
    return step.F, grads, kernel_posterior(prior, step)


def kernel_posterior(prior, step):
    """The optimal q(u) of the deterministic-input bound (its ``Psi1`` and ``Y`` are ``None``)."""
    return CollapsedPosterior(prior.L, step.LB, step.c, step.G, step.Binv, step.aa_sum,
                              prior.noise_variance, prior.rel_jitter, step.N, step.D, step.YY,
                              step.kd_sum, None, None)


def _sandwich(L, X):
    """``L^-T X L^-1`` for lower-triangular ``L``."""
    return solve_upper(L, solve_upper(L, X).T).T
