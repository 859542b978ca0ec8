"""Thread control: map an estimator's ``n_jobs`` to numba threads, restored in ``finally``.

BLAS is held at one thread inside the estimators. Their matrix products are small or tall and
skinny (``(N·K, M)`` with M in the tens to hundreds), which OpenBLAS barely speeds up, while its
spinning worker threads compete with numba's for the same cores and make a bound + gradient several
times slower (``doc/developers.rst``, "Thread control and thread safety").

Fits may run in several Python threads at once: one numba parallel region runs at a time
(:mod:`sklearn_lvgp._compile.jit`), which the not thread-safe ``workqueue`` layer needs
(lmcinnes/umap
issue #665), and the BLAS limit is shared by reference count. For throughput, prefer processes
(joblib's default ``loky`` backend) around estimators.
"""

import ctypes
import functools
import os
import threading
from contextlib import contextmanager

import numba
from joblib import effective_n_jobs
from threadpoolctl import ThreadpoolController, threadpool_limits

from .interrupt import interrupts_unwrapped

__all__ = ["threads", "resolve_n_jobs", "current_threads", "serial_section", "mark_serial_thread",
           "serial_twins", "twins_held_serial"]

#: The thread count set by the innermost :func:`threads` context of each Python thread.
_state = threading.local()


def current_threads():
    """Thread count of the innermost :func:`threads` context in this Python thread, or ``None``.

    Jitted dispatch (:class:`sklearn_lvgp._compile.jit._Twins`) reads this instead of asking numba:
    ``numba.get_num_threads()`` takes a process-wide lock on every call, and dispatch asks
    several times per bound + gradient. Code that calls ``numba.set_num_threads`` itself inside a
    ``threads`` context is not seen here.
    """
    return getattr(_state, "n", None)


def resolve_n_jobs(n_jobs):
    """Number of threads for ``n_jobs`` (sklearn semantics), capped at ``NUMBA_NUM_THREADS``."""
    n = effective_n_jobs(n_jobs)
    return max(1, min(int(n), int(numba.config.NUMBA_NUM_THREADS)))


@contextmanager
def threads(n_jobs):
    """Context manager running numba ``prange`` loops with ``n_jobs`` threads and BLAS with one.

    A Ctrl-C that lands in jitted code inside it leaves it as ``KeyboardInterrupt``
    (:func:`~sklearn_lvgp._core.interrupt.interrupts_unwrapped`).

    Parameters
    ----------
    n_jobs : int or None
        ``None`` means 1 (unless in a joblib ``parallel_backend`` context), ``-1`` all cores.

    Yields
    ------
    n_threads : int
        The number of threads in force.
    """
    n = resolve_n_jobs(n_jobs)
    previous = numba.get_num_threads()
    outer = current_threads()
    try:
        numba.set_num_threads(n)
        _state.n = n
        with _one_blas_thread(), interrupts_unwrapped():
            yield n
    finally:
        _state.n = outer
        numba.set_num_threads(previous)


#: The process-wide BLAS limit is shared by every Python thread: it is set by the first fit that
#: enters :func:`threads` and restored by the last one to leave (a per-fit save and restore let
#: two overlapping fits in two threads leave BLAS at one thread for good). OpenBLAS ignores
#: ``openblas_set_num_threads`` (threadpoolctl's call) from a thread other than the one that
#: started its thread pool, so the limit is also set through ``openblas_set_num_threads_local``
#: (OpenBLAS >= 0.3.27), which takes effect from any thread: without it a fit in a worker
#: thread ran BLAS on all cores and differed from the same fit in the main thread in the last
#: bits.
_blas_lock = threading.Lock()
_blas_users = 0
_blas_limiter = None
_blas_restore = ()


@functools.lru_cache(maxsize=1)
def _openblas_local_setters():
    """``openblas_set_num_threads_local`` of every OpenBLAS that has it, looked up once (the
    BLAS libraries are loaded with numpy and scipy, before the first fit)."""
    setters = []
    for lib in ThreadpoolController().select(user_api="blas").lib_controllers:
        fn = getattr(getattr(lib, "dynlib", None), "openblas_set_num_threads_local", None)
        if fn is not None:
            fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int]
            setters.append(fn)
    return tuple(setters)


@contextmanager
def _one_blas_thread():
    global _blas_users, _blas_limiter, _blas_restore
    with _blas_lock:
        if _blas_users == 0:
            _blas_limiter = threadpool_limits(limits=1, user_api="blas")
            _blas_restore = tuple((fn, fn(1)) for fn in _openblas_local_setters())
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                for fn, value in reversed(_blas_restore):
                    fn(value)
                _blas_limiter.restore_original_limits()
                _blas_limiter, _blas_restore = None, ()


def _reset_blas_users():
    """A forked child has none of the parent's fits running (nor their lock holders)."""
    global _blas_lock, _blas_users, _blas_limiter, _blas_restore
    _blas_lock, _blas_users, _blas_limiter, _blas_restore = threading.Lock(), 0, None, ()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_blas_users)


@contextmanager
def serial_section():
    """Context in which the jitted twins of this Python thread take their serial branch.

    The chunk executor (:mod:`sklearn_lvgp.engine`) runs every chunk inside one: its threads
    are the parallelism, so no chunk opens a numba parallel region of its own. BLAS limits are
    left as they are (one thread inside :func:`threads`).
    """
    outer = current_threads()
    try:
        _state.n = 1
        yield 1
    finally:
        _state.n = outer


@contextmanager
def serial_twins():
    """Context in which the jitted twins of this Python thread take their serial branch, while
    :func:`current_threads` (the thread count a chunk executor takes) stays as it is.

    The objective engine runs each evaluation in one (:mod:`sklearn_lvgp.engine._executor`):
    its global steps between the chunk passes are M-sized, and a numba parallel region there
    leaves its OpenMP threads spinning for milliseconds into the next pass, on the cores the
    chunk workers need.
    """
    outer = getattr(_state, "serial_twins", False)
    try:
        _state.serial_twins = True
        yield
    finally:
        _state.serial_twins = outer


def twins_held_serial():
    """Whether an enclosing :func:`serial_twins` context holds this thread's twins serial."""
    return getattr(_state, "serial_twins", False)


def mark_serial_thread():
    """Make this Python thread's jitted twins serial for its lifetime (a pool worker's set-up)."""
    _state.n = 1
