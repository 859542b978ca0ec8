"""The ``callback(estimator, info)`` hook of every fit, reached by every optimiser loop.

The estimator base class enters :func:`fit_progress` around ``_fit``; the optimisers
(:func:`sklearn_lvgp.optim._lbfgsb.minimize_lbfgsb`, :func:`sklearn_lvgp.optim._adam.run_adam`) call
:func:`report` once per iteration. The hook is held in a context variable, so no optimiser call
site passes it along, and a fit in another thread does not see it.
"""

import contextvars
import logging
import sys
import time
from contextlib import contextmanager

__all__ = ["fit_progress", "report", "check_callback", "progress", "iteration_line",
           "logger"]

#: The package's logger; ``verbose > 0`` messages go to it at INFO level.
logger = logging.getLogger("sklearn_lvgp")

_CURRENT = contextvars.ContextVar("sklearn_lvgp_fit_progress", default=None)


class _Progress:
    def __init__(self, estimator, callback):
        self.estimator = estimator
        self.callback = callback
        self.t0 = time.perf_counter()
        self.iteration = 0


def check_callback(callback):
    """``callback`` must be None or callable."""
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be None or a callable callback(estimator, info), got "
                        f"{type(callback).__name__}.")


@contextmanager
def fit_progress(estimator, callback):
    """Route the optimisers' per-iteration reports of this fit to ``callback``."""
    token = _CURRENT.set(_Progress(estimator, callback) if callback is not None else None)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def report(stage, objective, **extra):
    """Tell the fit's callback about one optimiser iteration; True when it asks to stop.

    Parameters
    ----------
    stage : str
        Which optimisation of the fit is running (e.g. ``"adam"``, ``"lbfgs"``).
    objective : float
        The value the optimiser maximises at this iteration (the bound, or its minibatch
        estimate).
    **extra
        More entries for ``info`` (e.g. ``validation_score``).

    Returns
    -------
    stop : bool
        ``True`` when the callback returned ``True`` (the optimiser then stops as if converged).
    """
    progress = _CURRENT.get()
    if progress is None:
        return False
    progress.iteration += 1
    info = {"iteration": progress.iteration, "stage": stage, "objective": float(objective),
            "elapsed": time.perf_counter() - progress.t0, **extra}
    return progress.callback(progress.estimator, info) is True


def progress(message):
    """Log one ``verbose`` progress line (INFO) through the package logger.

    The package never prints. So that ``verbose=1`` shows something without any logging set
    up, a handler writing to standard error is attached the first time, unless the
    application has configured logging (a handler on this logger or on the root logger).
    """
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)
    logger.info(message)



def _duration(seconds):
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def iteration_line(name, iteration, max_iter, label, value, elapsed):
    """One ``verbose`` line of an optimiser: progress, the objective, elapsed time and ETA.

    The ETA assumes the rest of ``max_iter`` runs at the average pace so far; a fit that
    converges (``tol``) or stops early ends sooner, so it is an upper bound.

    Parameters
    ----------
    name : str
        Who is optimising (the estimator's name).
    iteration, max_iter : int
        Iterations done and the budget.
    label : str
        What ``value`` is (e.g. ``"objective"``, ``"ELBO estimate"``).
    value : float
        Its current value.
    elapsed : float
        Seconds since the optimisation started.

    Returns
    -------
    line : str
        E.g. ``"[DeepGP] iter  1200/10000 (12 %)  ELBO estimate -1.2e+03  14 s, at most
        1 min 43 s left"``.
    """
    width = len(str(int(max_iter)))
    share = 100.0 * iteration / max(int(max_iter), 1)
    left = elapsed / max(iteration, 1) * max(int(max_iter) - iteration, 0)
    return (f"[{name}] iter {iteration:{width}d}/{int(max_iter)} ({share:3.0f} %)  "
            f"{label} {value: .6e}  {_duration(elapsed)}, at most {_duration(left)} left")
