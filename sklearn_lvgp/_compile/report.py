"""Tell the user when a fit spends its time compiling numba kernels.

The first fit of an estimator in a fresh environment compiles its jitted kernels (seconds);
numba caches them on disk, so later fits and later sessions skip this. The first time a
configuration (:func:`~sklearn_lvgp._compile.precompile.plan_key`) compiles in a process, the
fit logs a one-line notice through the package logger (as ``verbose`` lines are: the package
never prints, and a notice is not a warning — a ``warnings`` filter turning warnings into
errors must not fail a fit on a cold cache). It gives the compile time recorded for the
configuration and points at ``python -m sklearn_lvgp.precompile``. ``verbose=-1`` or the
environment variable ``SKLEARN_LVGP_COMPILE_NOTICE=0`` silences it. With ``verbose > 0`` every
fit that compiles logs that line, and one with the count and the time it took.
"""

import os
import threading
import time
from contextlib import contextmanager

from numba.core import event

from .._core.progress import progress
from .plans import PLANS

__all__ = ["compile_report", "compile_timer", "compile_notice", "NOTICE_SWITCH"]

#: Environment variable that turns the first-compile notice off with the value ``0``.
NOTICE_SWITCH = "SKLEARN_LVGP_COMPILE_NOTICE"

#: Configurations whose notice this process has given.
_NOTICED = set()
_NOTICED_LOCK = threading.Lock()


def compile_notice(name, key):
    """The notice of a fit of ``name`` that compiles the kernels of configuration ``key``."""
    plan = PLANS.get(key)
    took = (f"about {plan['compile_s']:.0f} s when its plan was recorded"
            if plan is not None else "seconds to a minute")
    return (f"{name}: compiling numba kernels for {key} (first use in this environment, "
            f"{took}; cached on disk for later fits). `python -m sklearn_lvgp.precompile` "
            f"compiles them ahead of use; verbose=-1 or {NOTICE_SWITCH}=0 silences this notice.")


def _first_notice(key):
    """Whether this process has yet to give the notice for ``key`` (and now has)."""
    if os.environ.get(NOTICE_SWITCH, "1").strip() == "0":
        return False
    with _NOTICED_LOCK:
        if key in _NOTICED:
            return False
        _NOTICED.add(key)
        return True


class _CompileListener(event.Listener):
    """Counts top-level ``numba:compile`` events of this thread and their wall time."""

    def __init__(self, name=None, key=None, verbose=1):
        self.name = name
        self.key = key
        self.verbose = verbose
        self.thread = threading.get_ident()
        self.depth = 0
        self.count = 0
        self.seconds = 0.0
        self._t0 = None

    def on_start(self, ev):
        if threading.get_ident() != self.thread:
            return
        if self.depth == 0:
            if self.count == 0 and self.name is not None and (
                    self.verbose > 0 or _first_notice(self.key)):
                progress(compile_notice(self.name, self.key))
            self._t0 = time.perf_counter()
        self.depth += 1

    def on_end(self, ev):
        if threading.get_ident() != self.thread:
            return
        self.depth -= 1
        if self.depth == 0:
            self.count += 1
            self.seconds += time.perf_counter() - self._t0


@contextmanager
def compile_timer():
    """Count the numba compilations of this thread inside the block and their wall time.

    Yields an object whose ``count`` and ``seconds`` are final when the block exits.
    """
    listener = _CompileListener()
    with event.install_listener("numba:compile", listener):
        yield listener


@contextmanager
def compile_report(key, name, verbose=0):
    """Around a fit of the plan ``key`` by the estimator ``name``: the first-compile notice
    (``verbose >= 0``); with ``verbose > 0`` also the count and time of the numba
    compilations the fit triggers."""
    if verbose < 0:
        yield
        return
    listener = _CompileListener(name, key, verbose)
    with event.install_listener("numba:compile", listener):
        yield
    if listener.count and verbose > 0:
        progress(f"{listener.name}: compiled {listener.count} jitted functions in "
                 f"{listener.seconds:.1f} s")
