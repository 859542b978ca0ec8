"""Many small independent problems, each solved by its own L-BFGS (Nocedal 1980).

:func:`minimize_rowwise` minimises ``f_n(x_n)`` for every row ``n`` of a batch, where each
``f_n`` depends on its own parameters ``x_n`` only (the q(x_n) of the GPLVM's local steps and of
``transform``). Each row has its own L-BFGS state (its last few curvature pairs ``(s, y)``), its
own backtracking line search with the Armijo condition (Nocedal & Wright 2006, Algorithm 3.1,
with the safeguarded quadratic step of their §3.5), its own convergence test (scipy's L-BFGS-B
tests, row by row: relative decrease below ``ftol`` or largest gradient entry below ``gtol``)
and its own iteration budget. All rows still running advance together: each pass evaluates the
objective once at the trial points of those rows (one vectorised call), and a row that has
converged is left out of later passes.

A row's trajectory depends on its own values and gradients only: every operation on the state
is elementwise in the rows or a reduction within a row. So a row gives the same result whether it
is optimised alone or with others, and a partition of the rows into chunks, threads or Dask
partitions does not change the result (up to the rounding of the objective's own BLAS calls).
"""

from typing import NamedTuple

import numpy as np

__all__ = ["RowwiseResult", "minimize_rowwise", "FTOL", "GTOL"]

#: scipy's L-BFGS-B defaults: ``factr = 1e7`` times the machine epsilon, and ``pgtol``.
FTOL = 1e7 * np.finfo(np.float64).eps
GTOL = 1e-5
#: Curvature pairs kept per row (scipy's ``maxcor``).
MEMORY = 10
#: Armijo constant (sufficient decrease).
ARMIJO = 1e-4
#: Trial steps of one line search before the row restarts from steepest descent (or stops).
MAX_BACKTRACKS = 20

#: Row states: still running, converged, out of iterations, line search found no decrease.
RUNNING, CONVERGED, MAX_ITER, STALLED = -1, 0, 1, 2


class RowwiseResult(NamedTuple):
    """Outcome of :func:`minimize_rowwise`, one entry per row.

    ``status`` is 0 (converged), 1 (``max_iter`` reached) or 2 (the line search found no
    decrease from a steepest-descent direction; the row stopped at its best point).
    """

    x: np.ndarray
    fun: np.ndarray
    n_iter: np.ndarray
    status: np.ndarray
    n_passes: int

    @property
    def converged(self):
        """Boolean mask of the rows that met a convergence test."""
        return self.status == CONVERGED


def _dot(a, b):
    """Row-wise inner products of two ``(n, P)`` arrays (a reduction within each row)."""
    return np.sum(a * b, axis=-1)


class _State:
    """The per-row L-BFGS state of a batch (every array has the rows on its first axis)."""

    def __init__(self, x, f, g, memory):
        n, P = x.shape
        self.x, self.f, self.g = x, f, g
        self.S = np.zeros((n, memory, P))  # slot 0 is the newest pair
        self.Y = np.zeros((n, memory, P))
        self.rho = np.zeros((n, memory))  # 0 marks an empty slot (a no-op in the recursion)
        self.pairs = np.zeros(n, dtype=np.intp)
        self.d = np.zeros((n, P))
        self.gd = np.zeros(n)
        self.t = np.zeros(n)
        self.backtracks = np.zeros(n, dtype=np.intp)
        self.n_iter = np.zeros(n, dtype=np.intp)
        self.status = np.full(n, RUNNING, dtype=np.intp)

    def forget(self, rows):
        self.S[rows] = 0.0
        self.Y[rows] = 0.0
        self.rho[rows] = 0.0
        self.pairs[rows] = 0

    def push(self, rows, s, y, sy):
        """Store the pair ``(s, y)`` as the newest of ``rows`` (the oldest drops out)."""
        self.S[rows, 1:] = self.S[rows, :-1]
        self.Y[rows, 1:] = self.Y[rows, :-1]
        self.rho[rows, 1:] = self.rho[rows, :-1]
        self.S[rows, 0] = s
        self.Y[rows, 0] = y
        self.rho[rows, 0] = 1.0 / sy
        self.pairs[rows] = np.minimum(self.pairs[rows] + 1, self.S.shape[1])

    def direction(self, rows):
        """Set the search direction and first trial step of ``rows``.

        The two-loop recursion (Nocedal & Wright 2006, Algorithm 7.4) with the initial scaling
        ``sᵀy / yᵀy`` of the newest pair (their eq. 7.20); a row without pairs, or whose
        direction is not one of descent, takes ``-g`` with the step ``min(1, 1 / ‖g‖)`` (as
        scipy's L-BFGS-B does at its first iteration).
        """
        if rows.size == 0:
            return
        g = self.g[rows]
        S, Y, rho = self.S[rows], self.Y[rows], self.rho[rows]
        m = S.shape[1]
        q = g.copy()
        alpha = np.zeros((rows.size, m))
        for j in range(m):
            alpha[:, j] = rho[:, j] * _dot(S[:, j], q)
            q -= alpha[:, j, None] * Y[:, j]
        yy = _dot(Y[:, 0], Y[:, 0])
        has = self.pairs[rows] > 0
        gamma = np.where(has, _dot(S[:, 0], Y[:, 0]) / np.where(has, yy, 1.0), 1.0)
        r = gamma[:, None] * q
        for j in range(m - 1, -1, -1):
            beta = rho[:, j] * _dot(Y[:, j], r)
            r += S[:, j] * (alpha[:, j] - beta)[:, None]
        d = -r
        gd = _dot(g, d)
        steepest = ~has | ~(gd < 0.0) | ~np.all(np.isfinite(d), axis=1)
        if np.any(steepest):
            self.forget(rows[steepest])
            d[steepest] = -g[steepest]
            gd[steepest] = _dot(g[steepest], d[steepest])
        t = np.ones(rows.size)
        t[steepest] = np.minimum(1.0, 1.0 / np.sqrt(-gd[steepest]))  # ‖g‖ = sqrt(-gᵀd)
        self.d[rows], self.gd[rows], self.t[rows] = d, gd, t
        self.backtracks[rows] = 0


def minimize_rowwise(fun, x0, *, max_iter, ftol=FTOL, gtol=GTOL, memory=MEMORY):
    """Minimise independent per-row objectives, each row by its own L-BFGS.

    Parameters
    ----------
    fun : callable
        ``fun(rows, X) -> (f, G)``: the values ``f`` (k,) and gradients ``G`` (k, P) of the
        objectives of the rows ``rows`` (indices into ``x0``, k of them) at their parameters
        ``X`` (k, P). The row ``rows[i]``'s value and gradient must depend on ``X[i]`` only.
        A non-finite value or gradient rejects that row's trial point.
    x0 : ndarray of shape (n, P)
        Starting points (not modified).
    max_iter : int
        Iterations (accepted steps) per row.
    ftol : float, default=FTOL
        A row converges when a step lowers its value by at most ``ftol · max(|f|, |f_new|, 1)``.
    gtol : float, default=GTOL
        A row converges when its largest absolute gradient entry is at most ``gtol``.
    memory : int, default=MEMORY
        Curvature pairs kept per row.

    Returns
    -------
    RowwiseResult

    Raises
    ------
    FloatingPointError
        When the objective of some row is not finite at its starting point.
    """
    x0 = np.array(x0, dtype=np.float64, copy=True)
    n = x0.shape[0]
    all_rows = np.arange(n)
    f, g = fun(all_rows, x0)
    f = np.array(f, dtype=np.float64)
    g = np.array(g, dtype=np.float64)
    bad = ~(np.isfinite(f) & np.all(np.isfinite(g), axis=1))
    if np.any(bad):
        raise FloatingPointError(
            f"the objective of {int(np.sum(bad))} of {n} rows is not finite at the starting "
            "point. Check the scale of the data (standardise it) or increase jitter.")
    st = _State(x0, f, g, int(memory))
    st.status[np.max(np.abs(g), axis=1, initial=0.0) <= gtol] = CONVERGED
    active = np.flatnonzero(st.status == RUNNING)
    st.direction(active)
    passes = 1
    while active.size:
        x = st.x[active]
        t = st.t[active]
        xt = x + t[:, None] * st.d[active]
        ft, gt = fun(active, xt)
        passes += 1
        ft = np.asarray(ft, dtype=np.float64)
        gt = np.asarray(gt, dtype=np.float64)
        f_old = st.f[active]
        ok = (np.isfinite(ft) & np.all(np.isfinite(gt), axis=1)
              & (ft <= f_old + ARMIJO * t * st.gd[active]))

        # accepted steps: new pair (if its curvature is positive), convergence tests
        acc = active[ok]
        s = xt[ok] - x[ok]
        y = gt[ok] - st.g[acc]
        sy = _dot(s, y)
        curved = sy > np.finfo(np.float64).eps * _dot(y, y)
        st.push(acc[curved], s[curved], y[curved], sy[curved])
        f_new = ft[ok]
        st.x[acc], st.f[acc], st.g[acc] = xt[ok], f_new, gt[ok]
        st.n_iter[acc] += 1
        scale = np.maximum(np.maximum(np.abs(f_old[ok]), np.abs(f_new)), 1.0)
        done = ((f_old[ok] - f_new <= ftol * scale)
                | (np.max(np.abs(gt[ok]), axis=1, initial=0.0) <= gtol))
        st.status[acc[done]] = CONVERGED
        st.status[acc[~done & (st.n_iter[acc] >= max_iter)]] = MAX_ITER
        st.direction(acc[st.status[acc] == RUNNING])

        # rejected steps: a shorter step, or a restart from steepest descent, or stop
        rej = active[~ok]
        st.backtracks[rej] += 1
        failed = st.backtracks[rej] > MAX_BACKTRACKS
        stuck = rej[failed & (st.pairs[rej] == 0)]
        st.status[stuck] = STALLED
        restart = rej[failed & (st.pairs[rej] > 0)]
        st.forget(restart)
        st.direction(restart)
        shrink = ~failed
        rows = rej[shrink]
        t_r = t[~ok][shrink]
        gd_r = st.gd[rows]
        excess = ft[~ok][shrink] - f_old[~ok][shrink] - gd_r * t_r
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            quad = -gd_r * t_r * t_r / (2.0 * excess)  # minimiser of the quadratic model
        quad = np.where(np.isfinite(quad), quad, 0.1 * t_r)
        st.t[rows] = np.clip(quad, 0.1 * t_r, 0.5 * t_r)

        active = np.flatnonzero(st.status == RUNNING)
    return RowwiseResult(st.x, st.f, st.n_iter, st.status, passes)
