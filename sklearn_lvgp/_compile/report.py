"""Tell a ``verbose`` user when a fit spends its time compiling numba kernels.

The first fit of an estimator in a fresh environment compiles its jitted kernels (seconds);
numba caches them on disk, so later fits and later sessions skip this. With ``verbose > 0`` the
fit logs one line when compilation starts and one with the count and the time it took.
"""

import threading
import time
from contextlib import contextmanager

from numba.core import event

from .._core.progress import progress

__all__ = ["compile_report", "compile_timer"]


class _CompileListener(event.Listener):
    """Counts top-level ``numba:compile`` events of this thread and their wall time."""

    def __init__(self, name=None):
        self.name = name
        self.thread = threading.get_ident()
        self.depth = 0
        self.count = 0
        self.seconds = 0.0
        self._t0 = None

    def on_start(self, ev):
        if threading.get_ident() != self.thread:
            return
        if self.depth == 0:
            if self.count == 0 and self.name is not None:
                progress(f"{self.name}: compiling numba kernels (first use in this "
                         "environment; cached on disk for later fits)...")
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
def compile_report(estimator):
    """Around a fit: with ``estimator.verbose > 0``, log numba compilation it triggers."""
    if not getattr(estimator, "verbose", 0):
        yield
        return
    listener = _CompileListener(type(estimator).__name__)
    with event.install_listener("numba:compile", listener):
        yield
    if listener.count:
        progress(f"{listener.name}: compiled {listener.count} jitted functions in "
                 f"{listener.seconds:.1f} s")
