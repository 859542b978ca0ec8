"""Alternating local and global steps for the collapsed GPLVM bound (Gal et al. 2014, §3.2).

With the global parameters (Z, θ, σ²) and the collapsed q(u) fixed, the bound is a sum over rows
of per-row terms (the held-out bound of Titsias & Lawrence 2010, eq. 27, minus the row's KL), so
the **local step** — improving every row's q(x_n) — splits into independent problems, one per
row, each solved by its own L-BFGS (:mod:`sklearn_lvgp.optim._rowwise`) wherever the row lives:
the result does not depend on how the rows are grouped into chunks, threads or Dask partitions.
The **global step** maximises the collapsed bound over (Z, θ, σ²) with the q(x_n) fixed: each
evaluation is one forward and one backward map of :class:`~sklearn_lvgp.engine.CollapsedPsiBound`
with only M × M-sized messages. Each round cannot lower the bound: the local step raises the
uncollapsed bound at the old q(u), which is at most the collapsed bound at the new q(x_n), and
the global step raises that.

Memory: the optimiser state of the local step is a few curvature pairs of 2Q numbers per row
(``MEMORY · 4Q`` floats), and each evaluation works on blocks of rows of bounded size.
"""

from typing import NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.params import ParamPacker
from .._core.progress import progress
from .._core.warn import warn
from ..bounds._collapsed import CollapsedPsi, PsiParams, psi_row_cost, rule_rows
from ..bounds._collapsed_global import heldout_bound
from ..bounds._collapsed_masked import MaskedPosterior, as_masked, masked_heldout_bound
from ..engine._executor import ChunkExecutor, plan_chunks
from ..engine._protocol import evaluate_bound
from ..expectations import PointRule, psi_statistics, psi_vjp
from ..variational._kl import gaussian_kl, gaussian_kl_vjp, standard_normal_kl_and_vjp
from ._lbfgsb import minimize_lbfgsb
from ._rowwise import minimize_rowwise

__all__ = ["AlternatingResult", "InMemoryLocals", "DaskLocals", "LocalStepResult",
           "fit_alternating", "heldout_latents", "heldout_objective", "heldout_rows_objective",
           "local_step", "masked_rows_objective"]

#: L-BFGS iterations of each row in a local step, and L-BFGS-B iterations of the global step,
#: in one round.
LOCAL_ITER = 20
GLOBAL_ITER = 20


class AlternatingResult(NamedTuple):
    """Outcome of :func:`fit_alternating`."""

    mu: np.ndarray
    S: np.ndarray
    Z: np.ndarray
    theta: np.ndarray
    noise_variance: float
    n_rounds: int
    converged: bool
    history: np.ndarray


def heldout_objective(kernel, Z, rule, post, Y, mu, S):
    """Σ_n ℓ_n(μ_n, S_n) − KL_n of rows ``Y`` with the model and q(u) fixed.

    ``ℓ`` is the held-out bound (Titsias & Lawrence 2010, eq. 27). Returns the value, the
    adjoints of the rows' Ψ-statistics (the KL's adjoints are the caller's, by
    :func:`~sklearn_lvgp.variational._kl_diagonal.gaussian_kl_vjp`) and the Ψ cache.
    """
    stats, cache = psi_statistics(kernel, Z, mu, S, rule)
    value, adj = heldout_bound(Y, stats.psi0, stats.Psi1, stats.Psi2, post)
    return value - gaussian_kl(mu, S), adj, cache


#: Most entries of the per-point Ψ2 of one block of rows in a local step's objective.
_BLOCK_ENTRIES = 2 ** 18
#: Rows of every block of a local step's objective (fewer where ``M²`` is large), a multiple of
#: ``_BLOCK_ALIGN``.
_BLOCK_ROWS = 64
_BLOCK_ALIGN = 8
#: Smallest variance a trial point of a local step may have (``1 / S`` stays finite).
_TINY = np.finfo(np.float64).tiny


def _rule_of(rule, rows):
    """The rule of the rows ``rows`` (per-point Monte Carlo nodes are selected; shared rules
    pass)."""
    if isinstance(rule, PointRule) and rule.nodes.ndim == 3:
        return rule._replace(nodes=rule.nodes[rows])
    return rule


def block_rows(M):
    """Rows of every block of :func:`heldout_rows_objective` for ``M`` inducing inputs."""
    fit = min(_BLOCK_ROWS, _BLOCK_ENTRIES // (M * M)) // _BLOCK_ALIGN * _BLOCK_ALIGN
    return max(_BLOCK_ALIGN, fit)


def heldout_rows_objective(kernel, Z, rule, post, Y):
    """``fun(rows, X) -> (f, G)`` of :func:`~sklearn_lvgp.optim._rowwise.minimize_rowwise`:
    ``f_n = −(ℓ_n − KL_n)`` of each row ``n`` of ``Y`` and its gradient, at ``X = [μ, log S]``.

    ``ℓ_n`` is the row's held-out bound (Titsias & Lawrence 2010, eq. 27) with the model and
    q(u) fixed. The values come from per-point Ψ-statistics, the gradients from the backward
    pass of the summed ones: the bound is linear in the statistics, so its adjoints do not
    depend on them (they are computed once here), and the gradient of a sum of per-row terms wrt
    ``x_n`` is that of the row's own term. The rows are evaluated in blocks of
    :func:`block_rows` rows, the last block filled up with copies of one of its rows: every call
    of the Ψ-statistics and of BLAS has the same shape, so a row's value and gradient do not
    depend on the other rows of the call or on its place among them.
    """
    if isinstance(post, MaskedPosterior) or np.isnan(Y).any():
        return masked_rows_objective(kernel, Z, rule, as_masked(post), Y)
    M = Z.shape[0]
    block = block_rows(M)
    zeros1, zeros2 = np.zeros((block, M)), np.zeros((M, M))
    dPsi1 = np.empty((Y.shape[0], M))  # the adjoints, in blocks of the same shape as below
    adj = None
    for a in range(0, Y.shape[0], block):
        rows = np.arange(a, min(Y.shape[0], a + block))
        full = np.concatenate([rows, np.full(block - rows.size, a)])
        _, adj = heldout_bound(Y[full], 0.0, zeros1, zeros2, post)
        dPsi1[rows] = adj.Psi1[:rows.size]

    def row_terms(idx, mu, S):
        r = _rule_of(rule, idx)
        stats, _ = psi_statistics(kernel, Z, mu, S, r, per_point=True, need_cache=False)
        ell, _ = heldout_bound(Y[idx], stats.psi0, stats.Psi1, stats.Psi2, post)
        _, cache = psi_statistics(kernel, Z, mu, S, r, need_psi2=False)
        return ell, psi_vjp(adj.psi0, dPsi1[idx], adj.Psi2, cache)

    return _in_row_blocks(row_terms, block)


def masked_rows_objective(kernel, Z, rule, post, Y):
    """:func:`heldout_rows_objective` of rows ``Y`` with NaN at their missing entries.

    Row n's held-out bound is the sum over its observed columns
    (:func:`~sklearn_lvgp.bounds._collapsed_masked.masked_heldout_bound`, under the per-group
    q(u) of ``post``, a :class:`~sklearn_lvgp.bounds._collapsed_masked.MaskedPosterior`); its
    adjoints differ from row to row, so the gradients come from the per-point backward pass. A
    row with every entry missing has the KL term only (its optimum is the prior). Rows are
    evaluated in fixed-shape blocks as there.
    """
    observed = ~np.isnan(Y)
    Y0 = np.where(observed, Y, 0.0)
    block = block_rows(Z.shape[0])
    weights = post.column_weights()

    def row_terms(idx, mu, S):
        stats, cache = psi_statistics(kernel, Z, mu, S, _rule_of(rule, idx), per_point=True)
        ell, adj = masked_heldout_bound(Y0[idx], observed[idx], stats.psi0, stats.Psi1,
                                        stats.Psi2, post, weights)
        return ell, psi_vjp(*adj, cache)

    return _in_row_blocks(row_terms, block)


def _in_row_blocks(row_terms, block):
    """``fun(rows, X) -> (f, G)`` of the per-row objectives ``f_n = KL_n − ℓ_n`` at
    ``X = [μ, log S]``, from ``row_terms(idx, mu, S) -> (ℓ, Ψ-VJP)`` of ``block`` rows at a time.

    A trial point whose variance over- or underflows is rejected (``f = inf``); the last block
    is filled up with copies of its first row, so that every call has the same shape and a row's
    value and gradient do not depend on the other rows of the call or on its place among them.
    """
    def fun(rows, X):
        k, P = X.shape
        Q = P // 2
        f = np.full(k, np.inf)
        G = np.zeros((k, P))
        with np.errstate(over="ignore"):
            S_all = np.exp(X[:, Q:])
        ok = np.flatnonzero(np.all(np.isfinite(X[:, :Q]), axis=1)
                            & np.all(np.isfinite(S_all) & (S_all >= _TINY), axis=1))
        for a in range(0, ok.size, block):
            at = ok[a:a + block]
            n = at.size
            at_full = np.concatenate([at, np.full(block - n, at[0])])
            mu = np.ascontiguousarray(X[at_full, :Q])
            S = S_all[at_full]
            ell, pv = row_terms(rows[at_full], mu, S)
            f[at] = (gaussian_kl(mu, S, per_row=True) - ell)[:n]
            dkl_mu, dkl_S = gaussian_kl_vjp(mu, S)
            G[at, :Q] = (dkl_mu - pv.mu)[:n]
            G[at, Q:] = ((dkl_S - pv.S) * S)[:n]  # d/d log S
        return f, G

    return fun


class LocalStepResult(NamedTuple):
    """Outcome of :func:`local_step`: the rows' q(x_n) and their optimisers' ends."""

    mu: np.ndarray
    S: np.ndarray
    n_iter: np.ndarray
    status: np.ndarray


def local_step(kernel, Z, rule, post, mu, S, Y, *, max_iter=LOCAL_ITER, tol=None, verbose=0,
               name="local step"):
    """Improve the rows' q(x_n) with the model and q(u) fixed, each row on its own.

    Pure (it can run on any thread or worker). Maximises ``ℓ_n(μ_n, S_n) − KL_n`` of every
    row ``n``, with ``ℓ`` the held-out bound of
    :func:`~sklearn_lvgp.bounds._collapsed_global.heldout_bound`, by one L-BFGS per row
    (:func:`~sklearn_lvgp.optim._rowwise.minimize_rowwise`) over ``(μ_n, log S_n)``: the
    result of a row does not depend on the rows it is grouped with.

    Parameters
    ----------
    kernel, Z, rule, post
        The model (kernel, inducing inputs, expectation rule of these rows, collapsed q(u)).
    mu, S : ndarray of shape (rows, Q)
        Starting means and variances.
    Y : ndarray of shape (rows, D)
        The rows (in the model's centred space).
    max_iter : int, default=LOCAL_ITER
        Iterations per row.
    tol : float or None, default=None
        ``ftol`` and ``gtol`` of every row's convergence test; ``None`` keeps scipy's
        L-BFGS-B defaults.
    verbose : int, default=0
        ``> 0`` logs one line with the iterations and the rows that did not converge.
    name : str, default="local step"
        Used in messages.

    Returns
    -------
    LocalStepResult
        The improved means and variances (rows, Q), the iterations of each row and its status
        (0 converged, 1 ``max_iter`` reached, 2 stopped without a decrease).
    """
    Q = mu.shape[1]
    x0 = np.hstack([mu, np.log(S)])
    opts = {} if tol is None else {"ftol": float(tol), "gtol": float(tol)}
    res = minimize_rowwise(heldout_rows_objective(kernel, Z, rule, post, Y), x0,
                           max_iter=max_iter, **opts)
    if verbose > 0:
        progress(f"[{name}] {x0.shape[0]} rows: iterations median "
                 f"{np.median(res.n_iter) if res.n_iter.size else 0:g}, max "
                 f"{int(np.max(res.n_iter, initial=0))}; {int(np.sum(res.status != 0))} not "
                 f"converged; {res.n_passes} passes")
    return LocalStepResult(res.x[:, :Q].copy(), np.exp(res.x[:, Q:]), res.n_iter, res.status)


def heldout_latents(kernel, Z, rule, post, Y, mu, S, *, max_iter, tol=None, verbose=0,
                    name="local step", budget="max_iter"):
    """q(x*) of new rows with the model and q(u) fixed: :func:`local_step` on chunks of the
    rows, chunks on threads (each row is its own problem: the chunks only share work).

    Parameters
    ----------
    kernel, Z, rule, post
        The fitted model, as in :func:`local_step` (per-point Monte Carlo nodes are selected
        chunk by chunk).
    Y : ndarray of shape (n, D)
        The new rows (in the model's centred space).
    mu, S : ndarray of shape (n, Q)
        Starting means and variances.
    max_iter, tol, verbose, name
        As in :func:`local_step`.
    budget : str, default="max_iter"
        The caller's name of ``max_iter``, in the ``ConvergenceWarning`` that counts the rows
        that did not converge.

    Returns
    -------
    mu, S : ndarray of shape (n, Q)
        The rows' q(x*).
    """
    n, Q = mu.shape
    work, _, cap = psi_row_cost(rule, Z.shape[0], Q)
    mu_out, S_out = np.empty((n, Q)), np.empty((n, Q))
    status = np.empty(n, dtype=np.intp)

    def chunk(i, a, b):
        mu_out[a:b], S_out[a:b], _, status[a:b] = local_step(
            kernel, Z, rule_rows(rule, a, b), post, mu[a:b], S[a:b], Y[a:b], max_iter=max_iter,
            tol=tol, verbose=verbose, name=name)
        return 0.0

    ChunkExecutor().map_reduce(chunk, plan_chunks(n, work, max_rows=cap))
    if np.any(status != 0):
        stalled = int(np.sum(status == 2))
        detail = (f" ({stalled} of them stopped where their line search found no decrease)"
                  if stalled else "")
        warn(f"{name}: L-BFGS did not converge for {int(np.sum(status != 0))} of {n} rows "
             f"within {budget}={max_iter} iterations{detail}. Increase {budget} or loosen "
             "tol.", ConvergenceWarning)
    return mu_out, S_out


def _kl_block(G, rows, ctx):
    """Σ KL(q(x_n) ‖ N(0, I)) of one block's rows."""
    return standard_normal_kl_and_vjp(rows["mu"], rows["S"])[0]


def _kl_params(rule, Z, rows):
    """The parameters that fix the bound's blocks (the KL is summed over the same ones)."""
    return PsiParams(None, Z, 1.0, rule, rows.n_rows, 0)


class InMemoryLocals:
    """The q(x_n) of an in-memory fit next to its :class:`CollapsedPsiBound`.

    :class:`DaskLocals` offers the same four methods with the q(x_n) partitioned on Dask
    workers; both sum the KL over the bound's blocks, pairwise, so they give the same bits.
    """

    def __init__(self, bound, mu, S):
        self.bound = bound
        self.mu = mu
        self.S = S
        self._blocks_of = None

    def evaluate(self, kernel, Z, noise_variance, rule, *, jitter=1e-6, max_tries=0):
        """Bound, global gradients and q(u) with the q(x_n) fixed."""
        self._blocks_of = _kl_params(rule, Z, self.bound.rows)
        return self.bound.evaluate(kernel, Z, self.mu, self.S, noise_variance, rule,
                                   jitter=jitter, max_tries=max_tries, need_local=False)

    def local_step(self, kernel, Z, rule, post):
        """One local step on every chunk, chunks in parallel (rows written in place)."""
        chunks, _ = self.bound.plan(rule, Z.shape[0], Z.shape[1])
        mu, S, Y = self.mu, self.S, self.bound.Y

        def local(i, a, b):
            mu[a:b], S[a:b], _, _ = local_step(kernel, Z, rule_rows(rule, a, b), post,
                                               mu[a:b], S[a:b], Y[a:b])
            return 0.0

        ChunkExecutor(self.bound.n_threads).map_reduce(local, chunks)

    def kl(self):
        """Σ_n KL(q(x_n) ‖ N(0, I)), over the blocks of the last :meth:`evaluate`."""
        if self._blocks_of is None:
            return standard_normal_kl_and_vjp(self.mu, self.S)[0]
        rows = self.bound.rows
        rows.update(mu=self.mu, S=self.S)
        return rows.map_reduce(_kl_block, None, rows.plan(self.bound.bound, self._blocks_of),
                               ("mu", "S"))

    def locals(self):
        """``(mu, S)``."""
        return self.mu, self.S


def _kl_sum(mu, S):
    return standard_normal_kl_and_vjp(mu, S)[0]


def _local_task(Y, mu, S, kernel, Z, rule, post):
    return np.stack(local_step(kernel, Z, rule, post, mu, S, Y)[:2])


class DaskLocals:
    """The collapsed GPLVM bound over the partitions of ``rows`` (a
    :class:`~sklearn_lvgp.engine._dask.DaskRows` with the array ``"Y"``), with the q(x_n)
    partitioned alongside as its row arrays ``"mu"`` and ``"S"`` (set by :meth:`set_locals`,
    updated where they live by :meth:`local_step`)."""

    bound = CollapsedPsi()

    def __init__(self, rows):
        self.rows = rows
        self._blocks_of = None

    def set_locals(self, mu, S):
        """Partition the q(x_n) (``(N, Q)`` numpy or dask arrays) like the data; persist."""
        import dask
        import dask.array as da

        chunks = (self.rows.row_chunks, (mu.shape[1],))
        mu_d, S_d = dask.persist(da.asarray(mu).rechunk(chunks), da.asarray(S).rechunk(chunks))
        self.rows.replace("mu", list(mu_d.to_delayed().ravel()), mu_d, mu.shape[1])
        self.rows.replace("S", list(S_d.to_delayed().ravel()), S_d, mu.shape[1])

    def locals(self):
        """The q(x_n) gathered to the driver: ``(mu, S)``."""
        import dask

        mu, S = dask.compute(self.rows.parts["mu"], self.rows.parts["S"])
        return np.vstack(mu), np.vstack(S)

    def evaluate(self, kernel, Z, noise_variance, rule, *, jitter=1e-6, max_tries=0):
        """Bound F, gradients of the globals (Z, θ, σ²) and q(u), the q(x_n) held fixed."""
        params = PsiParams(kernel, Z, noise_variance, rule, self.rows.n_rows,
                           self.rows.shapes["Y"][1], jitter, max_tries)
        self._blocks_of = params
        F, grads, _, _, step = evaluate_bound(self.bound, params, self.rows, need_local=False)
        return F, grads, step.post

    def kl(self):
        """Σ_n KL(q(x_n) ‖ N(0, I)), over the blocks of the last :meth:`evaluate` (as in
        memory: the same bits), one task per partition."""
        if self._blocks_of is None:
            return self.rows.reduce_blocks(_kl_sum, ("mu", "S"), ())
        return self.rows.map_reduce(_kl_block, None, self.rows.plan(self.bound, self._blocks_of),
                                    ("mu", "S"))

    def local_step(self, kernel, Z, rule, post):
        """Improve every partition's q(x_n) on its worker; the results stay there."""
        import dask

        tasks = self.rows.map_blocks(_local_task, ("Y", "mu", "S"), (kernel, Z, rule, post))
        stacked = dask.persist(*tasks)
        self.rows.replace("mu", [s[0] for s in stacked], stacked)
        self.rows.replace("S", [s[1] for s in stacked], stacked)


def fit_alternating(state, kernel, Z, noise_variance, rule, *, noise_bounds, jitter, max_rounds,
                    tol, verbose=0, name="objective"):
    """Alternate local steps (all chunks in parallel) with global L-BFGS-B steps.

    Parameters
    ----------
    state : InMemoryLocals or DaskLocals
        The data's bound together with the q(x_n) it holds.
    kernel : Kernel
        Working kernel: the start of θ, and θ at the end.
    Z : ndarray of shape (M, Q)
        Initial inducing inputs.
    noise_variance : float
        Initial σ².
    rule : "analytic" or PointRule
        A deterministic expectation rule.
    noise_bounds : (float, float)
        L-BFGS-B bounds of log σ² (θ stays within ``kernel.bounds``, Z is free).
    jitter : float
        Relative jitter on ``K_uu``.
    max_rounds : int
        Rounds of (local step, global step).
    tol : float
        Stop when a round raises the bound by less than ``tol`` times its magnitude.
    verbose : int
        Print the bound after each round when > 0.
    name : str
        Used in messages.

    Returns
    -------
    AlternatingResult
    """
    packer = ParamPacker([("Z", Z.shape), ("theta", (kernel.n_theta,)), ("noise", (), "log")])
    globals_x = packer.pack({"Z": Z, "theta": kernel.theta, "noise": noise_variance})
    bounds = packer.box(theta=kernel.bounds, noise=noise_bounds)
    history = []
    converged = False

    def set_globals(flat):
        p = packer.unpack(flat)
        kernel.theta = p["theta"]
        return p, p["Z"], float(p["noise"])

    def global_objective(flat):
        p, Z, noise = set_globals(flat)
        F, grads, _ = state.evaluate(kernel, Z, noise, rule, jitter=jitter)
        return -F, -packer.pack_grad({k: grads[k] for k in p}, p)

    for r in range(max_rounds):
        _, Z, noise = set_globals(globals_x)
        _, _, post = state.evaluate(kernel, Z, noise, rule, jitter=jitter)
        state.local_step(kernel, Z, rule, post)
        res = minimize_lbfgsb(global_objective, globals_x, bounds=bounds, max_iter=GLOBAL_ITER,
                              name=name, warn_unconverged=False)
        globals_x = res.x
        history.append(-res.fun - state.kl())
        if verbose > 0:
            progress(f"[{name}] round {r + 1:4d}  bound {history[-1]: .6e}")
        if r > 0 and abs(history[-1] - history[-2]) <= tol * abs(history[-2]):
            converged = True
            break
    if not converged:
        warn(f"{name}: the alternating optimiser did not converge in {len(history)} rounds. "
             "Increase max_iter or loosen tol.", ConvergenceWarning)
    mu, S = state.locals()
    p, Z, noise = set_globals(globals_x)
    return AlternatingResult(mu, S, Z, p["theta"], noise, len(history), converged,
                             np.asarray(history))
