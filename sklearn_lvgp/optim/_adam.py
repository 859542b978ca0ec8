"""Minibatch stochastic optimisation for uncollapsed (SVGP-layer) bounds.

The minibatch estimator is that of Salimbeni (2020, eq. 2.19); natural-gradient steps on ``q(u)``
alternate with Adam steps as in §3.4.3 and §3.4.6.

Adam on a flat parameter vector with shuffled-epoch minibatches, an optional learning-rate
schedule, optional natural-gradient steps interleaved with the Adam steps (one each per
iteration, each with its own minibatch), optional early stopping on a held-out score, and a state
object so ``warm_start`` / ``partial_fit`` continue where the previous run stopped. Randomness
comes from one ``RandomState``, so runs are reproducible.

Unlike :func:`~sklearn_lvgp.optim._lbfgsb.minimize_adam`, a non-finite objective, a failed
factorisation or a Python floating-point exception (``ArithmeticError``) is never retried: it
raises :class:`DivergenceError` naming the step, so a broken model is never returned silently.
"""

import time
from typing import NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.linalg import CholeskyError
from .._core.progress import IterationDisplay, progress, report
from .._core.warn import warn

__all__ = ["AdamState", "DivergenceError", "StochasticResult", "run_adam", "minibatches",
           "learning_rate_at", "gamma_at", "warn_budget_spent"]


class DivergenceError(FloatingPointError):
    """The stochastic objective or its gradient became non-finite (or a factorisation failed)."""


class AdamState:
    """Adam moment estimates and step counter, kept between runs.

    Parameters
    ----------
    size : int
        Number of parameters.
    """

    def __init__(self, size):
        self.m = np.zeros(size)
        self.v = np.zeros(size)
        self.t = 0
        self.order = None
        self.position = 0


class StochasticResult(NamedTuple):
    """Outcome of :func:`run_adam`.

    Attributes
    ----------
    x : ndarray
        Final parameters; with ``validation``, the best held-out state of the checks (and of
        the last iterate), whether early stopping fired or ``max_iter`` was reached.
    n_iter : int
        Iterations run in this call.
    history : ndarray
        Objective estimate (the minimised ``-ELBO``) at every iteration.
    stopped_early : bool
        Whether early stopping ended the run.
    validation_history : ndarray
        Held-out scores at each check (empty without early stopping).
    converged : bool
        Whether the ``stop_tol`` rule (or the fit's callback) ended the run.
    """

    x: np.ndarray
    n_iter: int
    history: np.ndarray
    stopped_early: bool
    validation_history: np.ndarray
    converged: bool = False


def learning_rate_at(base, step, schedule, decay_rate=0.98, decay_steps=1000, horizon=None,
                     floor=0.01):
    """Learning rate at (1-based) ``step``.

    Parameters
    ----------
    base : float
        Initial rate.
    step : int
        Global step count.
    schedule : {"constant", "staircase", "cosine"}
        ``"staircase"`` multiplies by ``decay_rate`` every ``decay_steps`` steps (as in the
        authors' IWVI code).
        ``"cosine"`` anneals from ``base`` at step 1 to ``floor * base`` at step ``horizon``
        along half a cosine (Loshchilov & Hutter 2017, without restarts) and stays there.
    decay_rate : float, default=0.98
    decay_steps : int, default=1000
        Staircase parameters.
    horizon : int or None, default=None
        Steps of the cosine annealing (required for ``"cosine"``).
    floor : float, default=0.01
        Final fraction of ``base`` for ``"cosine"``.

    Returns
    -------
    rate : float
    """
    if schedule == "constant":
        return float(base)
    if schedule == "cosine":
        if horizon is None:
            raise ValueError("the cosine schedule needs its horizon (number of steps).")
        frac = min(step - 1, horizon - 1) / max(horizon - 1, 1)
        return float(base) * (floor + (1.0 - floor) * 0.5 * (1.0 + np.cos(np.pi * frac)))
    return float(base) * decay_rate ** ((step - 1) // decay_steps)


def gamma_at(gamma, step, schedule="constant", decay_rate=0.98, decay_steps=1000,
             horizon=None):
    """Natural-gradient step size at (1-based) ``step``.

    Parameters
    ----------
    gamma : float or tuple (gamma0, gamma1, K)
        Fixed step, or a log-linear warm-up ``gamma0 (gamma1/gamma0)^(t/K)`` for ``t < K``, then
        ``gamma1`` (Salimbeni 2020, §3.4.2).
    step : int
        Global step count.
    schedule : {"constant", "staircase", "cosine"}
        Applied on top, as for the learning rate.
    decay_rate, decay_steps : float, int
        Staircase parameters.
    horizon : int or None
        Cosine horizon, see :func:`learning_rate_at`.

    Returns
    -------
    gamma : float
    """
    if np.ndim(gamma) == 0:
        g = float(gamma)
    else:
        g0, g1, K = float(gamma[0]), float(gamma[1]), float(gamma[2])
        t = step - 1
        g = g0 * (g1 / g0) ** (t / K) if t < K else g1
    return learning_rate_at(g, step, schedule, decay_rate, decay_steps, horizon)


def minibatches(state, n_data, batch_size, random_state):
    """Next minibatch of row indices: shuffled epochs without replacement.

    Either this or sampling with replacement keeps the estimator of Salimbeni (2020, eq. 2.19)
    unbiased.

    Parameters
    ----------
    state : AdamState
        Holds the current permutation and position (updated).
    n_data : int
        Number of rows.
    batch_size : int
        Rows per batch (``>= n_data`` means full batch, in row order).
    random_state : numpy.random.RandomState
        Source of the permutations.

    Returns
    -------
    idx : ndarray of int
        Row indices of the batch.
    """
    if batch_size >= n_data:
        return np.arange(n_data)
    if state.order is None or state.order.size != n_data or (
            state.position + batch_size > n_data):
        state.order = random_state.permutation(n_data)
        state.position = 0
    idx = state.order[state.position:state.position + batch_size]
    state.position += batch_size
    return idx


def _diverged(name, step, what, detail=""):
    return DivergenceError(
        f"{name}: {what} at optimisation step {step}{detail}. The optimisation diverged; "
        "lower learning_rate (or natgrad_gamma), increase jitter, or standardise the data.")


def warn_budget_spent(name, result, max_iter, tol, budget="max_iter", validation=False):
    """``ConvergenceWarning`` when a :func:`run_adam` run used its whole budget before its
    stopping rule (``tol``, or early stopping on the held-out score) ended it.

    Parameters
    ----------
    name : str
        Used in the message.
    result : StochasticResult
        The run.
    max_iter : int
        Its budget of iterations.
    tol : float
        The tolerance of its stopping rule.
    budget : str, default="max_iter"
        The caller's name of ``max_iter``.
    validation : bool, default=False
        Whether the rule was early stopping on a held-out score.
    """
    if result.converged or result.stopped_early or max_iter <= 0 or result.n_iter < max_iter:
        return
    rule = (f"early stopping (tol={tol:g} on the held-out score)" if validation
            else f"tol={tol:g}")
    warn(f"{name}: Adam did not converge within {budget}={int(max_iter)} iterations: "
         f"{rule} was not met. Increase {budget} or loosen tol.", ConvergenceWarning)


def run_adam(objective, x0, *, n_data, batch_size, max_iter, learning_rate, random_state,
             schedule="constant", decay_rate=0.98, decay_steps=1000, horizon=None, natgrad=None,
             gamma=None, frozen=None, bounds=None, validation=None, validation_every=100,
             n_iter_no_change=5, tol=1e-4, state=None, beta1=0.9, beta2=0.999, eps=1e-8,
             verbose=0, name="objective", stop_tol=None, window=100, on_nonfinite="raise"):
    """Minimise a minibatch objective with Adam, optionally interleaving natural-gradient steps.

    The one Adam loop of the package (Kingma & Ba 2015). It stops at ``max_iter``, when the
    held-out score stops improving (``validation``), when the windowed mean of the objective
    stops improving (``stop_tol``), or when the fit's ``callback`` asks it to
    (:func:`sklearn_lvgp._core.progress.report`).

    Parameters
    ----------
    objective : callable
        ``objective(x, idx) -> (value, grad)``: the minimised estimate (``-ELBO``) on rows
        ``idx``; may draw fresh random numbers (from the same ``random_state``).
    x0 : ndarray of shape (n_params,)
        Starting point (not modified).
    n_data : int
        Number of training rows.
    batch_size : int
        Rows per Adam (and natural-gradient) step.
    max_iter : int
        Number of iterations.
    learning_rate : float
        Adam step size.
    random_state : numpy.random.RandomState
        Source of minibatch permutations.
    schedule : {"constant", "staircase", "cosine"}, default="constant"
        Learning-rate (and γ) schedule, see :func:`learning_rate_at`.
    decay_rate, decay_steps : float, int
        Staircase parameters.
    horizon : int or None, default=None
        Global steps over which ``"cosine"`` anneals; ``None`` means ``max_iter``. Steps are
        counted from the start of ``state``, so a warm start continues at the annealed rate.
    natgrad : callable or None
        ``natgrad(x, idx, gamma) -> x_new`` run before each Adam step on its own minibatch.
    gamma : float or tuple or None
        Natural-gradient step size (see :func:`gamma_at`).
    frozen : ndarray of bool or None
        Parameters Adam must not move (those updated by ``natgrad``): their gradient and their
        momentum are zeroed, so a warm start after Adam-only steps leaves them alone too.
    bounds : ndarray of shape (n_params, 2) or None
        Box constraints applied by clipping after each step.
    validation : callable or None
        ``validation(x) -> score`` (higher is better) for early stopping; the run returns the
        best checked state.
    validation_every : int, default=100
        Iterations between held-out checks.
    n_iter_no_change : int, default=5
        Checks without an improvement of more than ``tol`` before stopping.
    tol : float, default=1e-4
        Improvement threshold of early stopping.
    state : AdamState or None
        Continue from this state (updated in place); ``None`` starts fresh.
    beta1, beta2, eps : float
        Adam hyperparameters (Kingma & Ba 2015).
    verbose : int, default=0
        ``> 0`` shows the bound estimate (``-value``, higher is better) in a progress bar or,
        without one, every ``max(1, 100 // verbose)`` iterations
        (:class:`~sklearn_lvgp._core.progress.IterationDisplay`).
    name : str
        Used in messages.
    stop_tol : float or None, default=None
        Without ``validation``: stop when the mean objective over the last ``window``
        iterations improves by less than ``stop_tol`` (relative to ``max(1, |mean|)``) on the
        window before it. ``None`` runs the fixed budget of ``max_iter`` steps.
    window : int, default=100
        Window of the ``stop_tol`` rule.
    on_nonfinite : {"raise", "retry"}, default="raise"
        A non-finite objective or gradient (or a failed factorisation): ``"raise"`` a
        :class:`DivergenceError` at once; ``"retry"`` the step from the last finite point with
        the next random draw, and raise after 10 consecutive failures.

    Returns
    -------
    StochasticResult

    Raises
    ------
    DivergenceError
        If the objective or gradient is non-finite, or a factorisation fails, at some step.
    """
    x = np.array(x0, dtype=np.float64)
    if state is None:
        state = AdamState(x.size)
    if horizon is None:
        horizon = int(max_iter)
    lower = upper = None
    if bounds is not None:
        lower, upper = bounds[:, 0], bounds[:, 1]
    history = np.empty(int(max_iter))
    val_hist = []
    best_val, best_x, n_bad = -np.inf, None, 0
    stopped = converged = False
    n_failed, x_last = 0, x.copy()
    t0 = time.perf_counter()
    display = IterationDisplay(name, max_iter, verbose, 100 // max(int(verbose), 1))
    with display:
        it = 0
        for it in range(1, int(max_iter) + 1):
            step = state.t + 1
            if natgrad is not None:
                idx = minibatches(state, n_data, batch_size, random_state)
                try:
                    g_step = gamma_at(gamma, step, schedule, decay_rate, decay_steps, horizon)
                    x = natgrad(x, idx, g_step)
                except CholeskyError as exc:
                    raise _diverged(name, step, "the natural-gradient step failed", f" ({exc})") \
                        from exc
                if not np.all(np.isfinite(x)):
                    raise _diverged(name, step, "the natural-gradient step gave non-finite values")
            idx = minibatches(state, n_data, batch_size, random_state)
            failure = None
            try:
                f, g = objective(x, idx)
            except CholeskyError as exc:
                failure = ("a Cholesky factorisation failed", f" ({exc})", exc)
            except ArithmeticError as exc:
                failure = ("a floating-point operation failed", f" ({type(exc).__name__}: {exc})",
                           exc)
            else:
                if not np.isfinite(f):
                    failure = (f"the ELBO estimate is {-f}", "", None)
                elif not np.all(np.isfinite(g)):
                    failure = ("the ELBO gradient is not finite", "", None)
            if failure is not None:
                n_failed += 1
                if on_nonfinite == "raise" or n_failed > 10:
                    what = failure[0] + (" (10 consecutive failures)" if n_failed > 10 else "")
                    raise _diverged(name, step if on_nonfinite == "raise" else it, what,
                                    failure[1]) from failure[2]
                x = x_last.copy()  # undo the step that led here; the next draw differs
                history[it - 1] = np.nan
                continue
            n_failed = 0
            x_last = x.copy()
            if frozen is not None:
                g = np.where(frozen, 0.0, g)
            history[it - 1] = f
            state.t = step
            state.m = beta1 * state.m + (1.0 - beta1) * g
            state.v = beta2 * state.v + (1.0 - beta2) * g * g
            if frozen is not None:
                # momentum left from earlier Adam steps (warm start) must not move what natgrad owns
                state.m[frozen] = 0.0
            mhat = state.m / (1.0 - beta1 ** step)
            vhat = state.v / (1.0 - beta2 ** step)
            lr = learning_rate_at(learning_rate, step, schedule, decay_rate, decay_steps, horizon)
            x = x - lr * mhat / (np.sqrt(vhat) + eps)
            if lower is not None:
                x = np.clip(x, lower, upper)
            display.update(it, -f)
            extra = {}
            if validation is not None and it % validation_every == 0:
                score = float(validation(x))
                val_hist.append(score)
                extra["validation_score"] = score
                display.held_out(it, score)
                if score > best_val + tol * max(1.0, abs(best_val)) or best_x is None:
                    best_val, best_x, n_bad = score, x.copy(), 0
                else:
                    n_bad += 1
                    if n_bad >= n_iter_no_change:
                        stopped = True
                        x = best_x
                        break
            if report("adam", -f, **extra):
                converged = True
                break
            if (validation is None and stop_tol is not None and it >= 2 * window
                    and it % window == 0):
                prev = np.nanmean(history[it - 2 * window: it - window])
                last = np.nanmean(history[it - window: it])
                if prev - last <= stop_tol * max(1.0, abs(prev)):
                    converged = True
                    break
    restored = False
    if best_x is not None and not stopped:
        # max_iter reached: keep the best checked state, as sklearn's MLP early stopping does;
        # the last iterate is scored too when the last step was not a check
        final = val_hist[-1] if it % validation_every == 0 else float(validation(x))
        if best_val > final:
            x, restored = best_x, True
    if verbose > 0:
        progress(f"[{name}] done: {it} iterations in {time.perf_counter() - t0:.2f}s"
                 + (" (early stopping)" if stopped else "")
                 + (" (best held-out state restored)" if restored else ""))
    return StochasticResult(x, it, history[:it], stopped, np.asarray(val_hist), converged)
