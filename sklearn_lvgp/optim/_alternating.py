"""Alternating local and global steps for the collapsed GPLVM bound (Gal et al. 2014, §3.2).

With the global parameters (Z, θ, σ²) and the collapsed q(u) fixed, the bound is a sum over rows
of per-row terms (the held-out bound of Titsias & Lawrence 2010, eq. 27, minus the row's KL), so
the **local step** — improving every row's q(x_n) — splits into independent problems, one per
chunk, each solved by a small L-BFGS-B that can run where the chunk lives. The **global step**
maximises the collapsed bound over (Z, θ, σ²) with the q(x_n) fixed: each evaluation is one
forward and one backward map of :class:`~sklearn_lvgp.engine.CollapsedPsiBound` with only
M × M-sized messages. Each round cannot lower the bound: the local step raises the uncollapsed
bound at the old q(u), which is at most the collapsed bound at the new q(x_n), and the global
step raises that.

Memory: no optimiser state over N·Q parameters exists, so a fit holds the data, the q(x_n), one
chunk's L-BFGS-B state per thread and the chunks' working arrays.
"""

from typing import NamedTuple

import numpy as np

from .._core.params import ParamPacker
from .._core.progress import progress
from ..bounds._collapsed import CollapsedPsi, PsiParams, rule_rows
from ..bounds._collapsed_global import heldout_bound
from ..engine._executor import ChunkExecutor
from ..engine._protocol import evaluate_bound
from ..expectations import psi_statistics, psi_vjp
from ..variational._kl import gaussian_kl, gaussian_kl_vjp, standard_normal_kl_and_vjp
from ._lbfgsb import minimize_lbfgsb

__all__ = ["AlternatingResult", "InMemoryLocals", "DaskLocals", "fit_alternating",
           "heldout_objective", "local_step"]

#: L-BFGS-B iterations of a chunk's local step and of the global step in one round.
LOCAL_ITER = 20
GLOBAL_ITER = 20


class AlternatingResult(NamedTuple):
    """Outcome of :func:`fit_alternating`."""

    mu: np.ndarray
    S: np.ndarray
    globals_x: np.ndarray
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


def local_step(kernel, Z, rule, post, mu, S, Y, *, max_iter=LOCAL_ITER, tol=None, verbose=0,
               name="local step", warn_unconverged=False):
    """Improve the rows' q(x_n) of one chunk with the model and q(u) fixed.

    Pure (it can run on any thread or worker). Maximises ``Σ_n ℓ_n(μ_n, S_n) − KL_n`` with
    ``ℓ`` the held-out bound of :func:`~sklearn_lvgp.bounds._collapsed_global.heldout_bound`.

    ``max_iter``, ``tol``, ``verbose``, ``name`` and ``warn_unconverged`` go to the
    L-BFGS-B run (:func:`sklearn_lvgp.optim._lbfgsb.minimize_lbfgsb`).

    Returns
    -------
    mu, S : ndarray of shape (rows, Q)
        The improved means and variances.
    """
    n, Q = mu.shape
    packer = ParamPacker([("mu", (n, Q)), ("S", (n, Q), "log")])

    def objective(flat):
        p = packer.unpack(flat)
        value, adj, cache = heldout_objective(kernel, Z, rule, post, Y, p["mu"], p["S"])
        pv = psi_vjp(adj.psi0, adj.Psi1, adj.Psi2, cache)
        dkl_mu, dkl_S = gaussian_kl_vjp(p["mu"], p["S"])
        grads = {"mu": pv.mu - dkl_mu, "S": pv.S - dkl_S}
        return -value, -packer.pack_grad(grads, p)

    res = minimize_lbfgsb(objective, packer.pack({"mu": mu, "S": S}), max_iter=max_iter,
                          tol=tol, verbose=verbose, name=name,
                          warn_unconverged=warn_unconverged)
    p = packer.unpack(res.x)
    return p["mu"], p["S"]


class InMemoryLocals:
    """The q(x_n) of an in-memory fit next to its :class:`CollapsedPsiBound`.

    :class:`DaskLocals` offers the same four methods with the q(x_n) partitioned on Dask
    workers.
    """

    def __init__(self, bound, mu, S):
        self.bound = bound
        self.mu = mu
        self.S = S

    def evaluate(self, kernel, Z, noise_variance, rule, *, jitter=1e-6, max_tries=0):
        """Bound, global gradients and q(u) with the q(x_n) fixed."""
        return self.bound.evaluate(kernel, Z, self.mu, self.S, noise_variance, rule,
                                   jitter=jitter, max_tries=max_tries, need_local=False)

    def local_step(self, kernel, Z, rule, post):
        """One local step on every chunk, chunks in parallel (rows written in place)."""
        chunks, _ = self.bound.plan(rule, Z.shape[0], Z.shape[1])
        mu, S, Y = self.mu, self.S, self.bound.Y

        def local(i, a, b):
            mu[a:b], S[a:b] = local_step(kernel, Z, rule_rows(rule, a, b), post, mu[a:b],
                                         S[a:b], Y[a:b])
            return 0.0

        ChunkExecutor(self.bound.n_threads).map_reduce(local, chunks)

    def kl(self):
        """Σ_n KL(q(x_n) ‖ N(0, I))."""
        return standard_normal_kl_and_vjp(self.mu, self.S)[0]

    def locals(self):
        """``(mu, S)``."""
        return self.mu, self.S


def _local_task(Y, mu, S, kernel, Z, rule, post):
    return np.stack(local_step(kernel, Z, rule, post, mu, S, Y))


def _kl_task(mu, S):
    return standard_normal_kl_and_vjp(mu, S)[0]


class DaskLocals:
    """The collapsed GPLVM bound over the partitions of ``rows`` (a
    :class:`~sklearn_lvgp.engine._dask.DaskRows` with the array ``"Y"``), with the q(x_n)
    partitioned alongside as its row arrays ``"mu"`` and ``"S"`` (set by :meth:`set_locals`,
    updated where they live by :meth:`local_step`)."""

    bound = CollapsedPsi()

    def __init__(self, rows):
        self.rows = rows

    def set_locals(self, mu, S):
        """Partition the q(x_n) (``(N, Q)`` numpy or dask arrays) like the data; persist."""
        import dask
        import dask.array as da

        chunks = (self.rows.row_chunks, (mu.shape[1],))
        mu_d, S_d = dask.persist(da.asarray(mu).rechunk(chunks), da.asarray(S).rechunk(chunks))
        self.rows.replace("mu", list(mu_d.to_delayed().ravel()), mu_d)
        self.rows.replace("S", list(S_d.to_delayed().ravel()), S_d)

    def locals(self):
        """The q(x_n) gathered to the driver: ``(mu, S)``."""
        import dask

        mu, S = dask.compute(self.rows.parts["mu"], self.rows.parts["S"])
        return np.vstack(mu), np.vstack(S)

    def evaluate(self, kernel, Z, noise_variance, rule, *, jitter=1e-6, max_tries=0):
        """Bound F, gradients of the globals (Z, θ, σ²) and q(u), the q(x_n) held fixed."""
        params = PsiParams(kernel, Z, noise_variance, rule, self.rows.n_rows,
                           self.rows.shapes["Y"][1], jitter, max_tries)
        F, grads, _, _, step = evaluate_bound(self.bound, params, self.rows, need_local=False)
        return F, grads, step.post

    def kl(self):
        """Σ_n KL(q(x_n) ‖ N(0, I)), summed over the partitions."""
        return self.rows.reduce_blocks(_kl_task, ("mu", "S"), ())

    def local_step(self, kernel, Z, rule, post):
        """Improve every partition's q(x_n) on its worker; the results stay there."""
        import dask

        tasks = self.rows.map_blocks(_local_task, ("Y", "mu", "S"), (kernel, Z, rule, post))
        stacked = dask.persist(*tasks)
        self.rows.replace("mu", [s[0] for s in stacked], stacked)
        self.rows.replace("S", [s[1] for s in stacked], stacked)


def fit_alternating(state, kernel, rule, globals_packer, globals_x, set_globals, bounds=None, *,
                    jitter, max_rounds, tol, verbose=0, name="objective"):
    """Alternate local steps (all chunks in parallel) with global L-BFGS-B steps.

    Parameters
    ----------
    state : InMemoryLocals or DaskLocals
        The data's bound together with the q(x_n) it holds.
    kernel : Kernel
        Working kernel; ``set_globals`` writes θ into it.
    rule : "analytic" or PointRule
        A deterministic expectation rule.
    globals_packer : ParamPacker
        Layout of the flat global vector (blocks ``Z``, ``theta``, ``noise``).
    globals_x : ndarray
        Initial flat global vector.
    set_globals : callable
        ``set_globals(p)`` puts the unpacked globals into ``kernel``; returns ``(Z, noise)``.
    bounds : list of (low, high) or None
        L-BFGS-B bounds of the global vector.
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
    history = []
    converged = False

    def global_objective(flat):
        p = globals_packer.unpack(flat)
        Z, noise = set_globals(p)
        F, grads, _ = state.evaluate(kernel, Z, noise, rule, jitter=jitter)
        return -F, -globals_packer.pack_grad({k: grads[k] for k in p}, p)

    for r in range(max_rounds):
        Z, noise = set_globals(globals_packer.unpack(globals_x))
        _, _, post = state.evaluate(kernel, Z, noise, rule, jitter=jitter)
        state.local_step(kernel, Z, rule, post)
        res = minimize_lbfgsb(global_objective, globals_x, bounds=bounds, max_iter=GLOBAL_ITER,
                              name=name, warn_unconverged=False)
        globals_x = res.x
        history.append(-res.fun - state.kl())
        if verbose:
            progress(f"[{name}] round {r + 1:4d}  ELBO {history[-1]: .6e}")
        if r > 0 and abs(history[-1] - history[-2]) <= tol * abs(history[-2]):
            converged = True
            break
    mu, S = state.locals()
    return AlternatingResult(mu, S, globals_x, len(history), converged, np.asarray(history))
