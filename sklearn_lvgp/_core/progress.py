"""The ``callback(estimator, info)`` hook of every fit, reached by every optimiser loop, and
the ``verbose`` display of the optimisers.

The estimator base class enters :func:`fit_progress` around ``_fit``; the optimisers
(:func:`sklearn_lvgp.optim._lbfgsb.minimize_lbfgsb`, :func:`sklearn_lvgp.optim._adam.run_adam`) call
:func:`report` once per iteration. The hook is held in a context variable, so no optimiser call
site passes it along, and a fit in another thread does not see it.

One sign convention throughout: the value reported is the *bound* (the ELBO, or its minibatch
estimate), higher is better, as in ``elbo_`` and ``elbo_history_`` — in ``info["bound"]``, in
the progress lines and in the progress bar.

With ``verbose > 0`` an optimiser shows a `tqdm <https://tqdm.github.io>`_ progress bar
(``tqdm.auto``: a widget in a notebook) when tqdm is installed (``pip install
"sklearn_lvgp[progress]"``) and standard error is a terminal or the code runs in a Jupyter
kernel; otherwise it logs a line every ``max(1, 50 // verbose)`` (L-BFGS-B) or
``max(1, 100 // verbose)`` (Adam) iterations, as it does when the output goes to a file.
"""

import contextvars
import logging
import sys
import time
from contextlib import contextmanager

__all__ = ["fit_progress", "report", "check_callback", "progress",
           "iteration_line", "IterationDisplay", "logger"]

#: The package's logger; ``verbose > 0`` messages go to it at INFO level.
logger = logging.getLogger("sklearn_lvgp")

_CURRENT = contextvars.ContextVar("sklearn_lvgp_fit_progress", default=None)


class _Progress:
    def __init__(self, callback):
        self.callback = callback
        self.t0 = time.perf_counter()
        self.iteration = 0


def check_callback(callback):
    """``callback`` must be None or callable."""
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be None or a callable callback(estimator, info), got "
                        f"{type(callback).__name__}.")


@contextmanager
def fit_progress(callback):
    """Route the optimisers' per-iteration reports of this fit to ``callback(info)`` (the
    estimator binds itself to the user's ``callback(estimator, info)``; ``None``: no reports)."""
    token = _CURRENT.set(_Progress(callback) if callback is not None else None)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def report(stage, bound, **extra):
    """Tell the fit's callback about one optimiser iteration; True when it asks to stop.

    Parameters
    ----------
    stage : str
        Which optimisation of the fit is running (e.g. ``"adam"``, ``"lbfgs"``).
    bound : float
        The bound at this iteration (the ELBO, or its minibatch estimate): higher is better,
        the sign of ``elbo_`` and ``elbo_history_``.
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
    info = {"iteration": progress.iteration, "stage": stage, "bound": float(bound),
            "elapsed": time.perf_counter() - progress.t0, **extra}
    return progress.callback(info) is True


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
    """One ``verbose`` line of an optimiser: progress, the bound, elapsed time and ETA.

    The ETA assumes the rest of ``max_iter`` runs at the average pace so far; a fit that
    converges (``tol``) or stops early ends sooner, so it is an upper bound.

    Parameters
    ----------
    name : str
        Who is optimising (the estimator's name).
    iteration, max_iter : int
        Iterations done and the budget.
    label : str
        What ``value`` is (``"bound"`` for the optimisers).
    value : float
        Its current value.
    elapsed : float
        Seconds since the optimisation started.

    Returns
    -------
    line : str
        E.g. ``"[DeepGP] iter  1200/10000 (12 %)  bound -1.2e+03  14 s, at most
        1 min 43 s left"``.
    """
    width = len(str(int(max_iter)))
    share = 100.0 * iteration / max(int(max_iter), 1)
    left = elapsed / max(iteration, 1) * max(int(max_iter) - iteration, 0)
    return (f"[{name}] iter {iteration:{width}d}/{int(max_iter)} ({share:3.0f} %)  "
            f"{label} {value: .6e}  {_duration(elapsed)}, at most {_duration(left)} left")


def _tqdm():
    """``tqdm.auto.tqdm``, or None when tqdm is not installed."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def _interactive():
    """Whether standard error is a terminal or the code runs in a Jupyter kernel."""
    ipython = sys.modules.get("IPython")
    try:
        shell = ipython.get_ipython() if ipython is not None else None
        if shell is not None and hasattr(shell, "kernel"):
            return True
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):
        return False


class IterationDisplay:
    """The ``verbose`` display of one optimiser run: a tqdm bar or logged lines.

    A bar (over ``max_iter`` iterations, the bound in its postfix) when tqdm is installed and
    the output is interactive (:func:`_interactive`), else :func:`iteration_line` every
    ``every`` iterations. Nothing with ``verbose <= 0``. Use as a context manager, so the bar
    is closed however the run ends.

    Parameters
    ----------
    name : str
        Who is optimising (the estimator's name).
    max_iter : int
        The iteration budget.
    verbose : int
        The estimator's ``verbose``.
    every : int
        Iterations between two lines when there is no bar.
    """

    def __init__(self, name, max_iter, verbose, every):
        self.name, self.max_iter, self.every = name, int(max_iter), max(1, int(every))
        self.on = int(verbose) > 0
        self.t0 = time.perf_counter()
        self.bar = None
        self._postfix = {}
        tqdm = _tqdm() if self.on and _interactive() else None
        if tqdm is not None:
            self.bar = tqdm(total=self.max_iter, desc=name, unit="it", leave=True)

    def update(self, iteration, bound):
        """Show iteration ``iteration`` (1-based) with the ``bound`` (higher is better)."""
        if not self.on:
            return
        if self.bar is not None:
            self._postfix["bound"] = f"{bound:.6e}"
            self.bar.set_postfix(self._postfix, refresh=False)
            self.bar.update(iteration - self.bar.n)
        elif iteration % self.every == 0:
            progress(iteration_line(self.name, iteration, self.max_iter, "bound", bound,
                                    time.perf_counter() - self.t0))

    def held_out(self, iteration, score):
        """Show a held-out check (early stopping) of iteration ``iteration``."""
        if not self.on:
            return
        if self.bar is not None:
            self._postfix["held_out"] = f"{score:.6e}"
            self.bar.set_postfix(self._postfix, refresh=False)
        else:
            progress(f"[{self.name}] iter {iteration:6d}  held-out score {score: .6e}")

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
