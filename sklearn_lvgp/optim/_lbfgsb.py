"""Optimiser drivers: L-BFGS-B for deterministic objectives, Adam for stochastic ones.

Both minimise ``fun(x) -> (value, grad)``. A :class:`~sklearn_lvgp._core.linalg.CholeskyError`, a
Python floating-point exception (``ArithmeticError``: a scalar overflow or division by zero) or a
non-finite value inside the objective is turned into a large *finite* penalty (far above the best
value seen) so the line search backs off: scipy's L-BFGS-B treats ``+inf`` or ``nan`` as converged
or abnormal and stops at once. The best finite iterate is always the one returned. Non-convergence
emits sklearn's ``ConvergenceWarning``.
"""

import time
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from .._core.linalg import CholeskyError
from .._core.progress import IterationDisplay, progress, report
from .._core.warn import warn
from ._adam import run_adam, warn_budget_spent

__all__ = ["OptimizeResult", "minimize_lbfgsb", "minimize_adam"]


class OptimizeResult(NamedTuple):
    """Outcome of an optimiser run."""

    x: np.ndarray
    fun: float
    n_iter: int
    converged: bool
    history: np.ndarray
    message: str
    validation_history: np.ndarray = None


class _GuardedObjective:
    """Wrap ``fun`` so failures give a large finite penalty and the best point is remembered."""

    def __init__(self, fun):
        self.fun = fun
        self.best_x = None
        self.best_f = np.inf
        self.n_failed = 0
        self.last_error = None

    def __call__(self, x):
        try:
            f, g = self.fun(x)
        except (CholeskyError, ArithmeticError) as exc:
            self.n_failed += 1
            self.last_error = exc
            return self._penalty(), np.zeros_like(x)
        f = float(f)
        if not (np.isfinite(f) and np.all(np.isfinite(g))):
            self.n_failed += 1
            return self._penalty(), np.zeros_like(x)
        if f < self.best_f:
            self.best_f = f
            self.best_x = np.array(x, copy=True)
        return f, g

    def _penalty(self):
        if not np.isfinite(self.best_f):
            return 1e300
        return self.best_f + 1e8 * (1.0 + abs(self.best_f))


def _no_finite_point(guard, name):
    msg = f"{name}: the objective was not finite at any evaluated point"
    if guard.last_error is not None:
        msg += f" ({type(guard.last_error).__name__}: {guard.last_error})"
    return FloatingPointError(
        msg + ". Check the scale of the data (standardise it; normalize_y=True for the targets "
        "of a regressor) or increase jitter.")


def _flat(history, stop_tol, window):
    """Whether ``history`` improved by less than ``stop_tol`` (relative) over ``window``."""
    if stop_tol is None or len(history) <= window:
        return False
    before = history[-window - 1]
    return before - history[-1] <= stop_tol * max(1.0, abs(before))


def minimize_lbfgsb(fun, x0, *, bounds=None, max_iter=1000, tol=None, verbose=0, name="objective",
                    warn_unconverged=True, stop_tol=None, window=100):
    """Minimise a deterministic objective with scipy's L-BFGS-B (``jac=True``).

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, grad)``.
    x0 : ndarray of shape (P,)
        Starting point (not modified).
    bounds : array-like of shape (P, 2) or None
        Box bounds per coordinate; ``±inf`` or ``None`` for no bound.
    max_iter : int
        Maximum number of L-BFGS iterations.
    tol : float or None
        Passed as ``ftol`` and ``gtol``; ``None`` keeps scipy's defaults.
    verbose : int
        ``> 0`` shows the bound (``-fun``, higher is better) in a progress bar or, without
        one, every ``max(1, 50 // verbose)`` iterations
        (:class:`~sklearn_lvgp._core.progress.IterationDisplay`).
    name : str
        Used in messages.
    warn_unconverged : bool, default=True
        Emit ``ConvergenceWarning`` when ``max_iter`` is reached (``False`` for the bounded
        inner steps of an outer loop, which judges convergence itself).
    stop_tol : float or None, default=None
        Also stop (as converged) when the objective has decreased by less than ``stop_tol``
        (relative to ``max(1, |f|)``) over the last ``window`` iterations: the rule the Adam
        fits use (:func:`sklearn_lvgp.optim._adam.run_adam`), for a bound that creeps on
        long after it stopped mattering. ``None`` keeps scipy's tests only.
    window : int, default=100
        Iterations of the ``stop_tol`` rule.

    Returns
    -------
    OptimizeResult
    """
    guard = _GuardedObjective(fun)
    if bounds is not None:  # scipy takes None for "no bound"; an array may hold ±inf
        bounds = [tuple(None if v is None or not np.isfinite(v) else float(v) for v in row)
                  for row in bounds]
    history = []
    t0 = time.perf_counter()
    display = IterationDisplay(name, max_iter, verbose, 50 // max(int(verbose), 1))

    stopped = []

    def callback(xk):
        history.append(guard.best_f)
        display.update(len(history), -guard.best_f)
        if report("lbfgs", -guard.best_f) or _flat(history, stop_tol, window):
            stopped.append(True)
            raise StopIteration  # scipy ends the run and returns the current iterate

    options = {"maxiter": int(max_iter)}
    if tol is not None:
        options.update(ftol=float(tol), gtol=float(tol))
    with display:
        res = minimize(guard, np.array(x0, dtype=np.float64), jac=True, method="L-BFGS-B",
                       bounds=bounds, callback=callback, options=options)
    if guard.best_x is None:
        raise _no_finite_point(guard, name)
    converged = bool(res.status == 0) or bool(stopped)
    if not converged and warn_unconverged:
        warn(
            f"{name}: L-BFGS-B did not converge after {res.nit} iterations ({res.message}). "
            "Increase max_iter or loosen tol.",
            ConvergenceWarning,
        )
    if verbose > 0:
        progress(f"[{name}] done: {res.nit} iterations, bound {-guard.best_f:.6e}, "
                 f"{time.perf_counter() - t0:.2f}s ({res.message})")
    return OptimizeResult(guard.best_x, guard.best_f, int(res.nit), converged,
                          np.asarray(history), str(res.message))


def minimize_adam(fun, x0, *, learning_rate=0.01, max_iter=1000, tol=None, beta1=0.9,
                  beta2=0.999, eps=1e-8, window=50, verbose=0, name="objective",
                  validation=None, n_iter_no_change=5, validation_tol=1e-4):
    """Minimise a stochastic objective with Adam.

    Convergence is declared when the mean objective over the last ``window`` iterations improves
    by less than ``tol`` (relative) on the window before it. Reaching ``max_iter`` without that
    emits ``ConvergenceWarning``; with ``tol=None`` the run always takes ``max_iter`` steps and does
    not warn (fixed-budget stochastic optimisation, as in the papers).

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, grad)``; may draw fresh random numbers at each call.
    x0 : ndarray of shape (P,)
        Starting point (not modified).
    learning_rate, beta1, beta2, eps : float
        Adam hyperparameters (Kingma & Ba 2015).
    max_iter : int
        Number of steps.
    tol : float or None
        Relative tolerance of the windowed-mean stopping rule.
    window : int
        Window length of the stopping rule.
    verbose : int
        ``> 0`` prints progress.
    name : str
        Used in messages.
    validation, n_iter_no_change, validation_tol
        Early stopping on ``validation(x) -> score`` (see
        :func:`sklearn_lvgp.optim._adam.run_adam`); the checks are returned as
        ``validation_history``.

    Returns
    -------
    OptimizeResult
        ``x`` is the final iterate (the stochastic objective makes "best" meaningless), or the
        best checked one with ``validation``.
    """
    res = run_adam(lambda x, idx: fun(x), x0, n_data=1, batch_size=1, max_iter=max_iter,
                   learning_rate=learning_rate, random_state=np.random.RandomState(0),
                   beta1=beta1, beta2=beta2, eps=eps, verbose=verbose, name=name,
                   stop_tol=tol, window=window, on_nonfinite="retry", validation=validation,
                   n_iter_no_change=n_iter_no_change, tol=validation_tol)
    history = res.history
    if tol is not None:
        warn_budget_spent(name, res, max_iter, tol)
    final = history[np.isfinite(history)]
    return OptimizeResult(res.x, float(final[-1]) if final.size else np.nan, res.n_iter,
                          res.converged or tol is None, history, "adam",
                          res.validation_history if validation is not None else None)
