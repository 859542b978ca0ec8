"""Serial and parallel twins of one jitted function, chosen per call by the amount of work.

A parallel region costs microseconds to milliseconds to open (much more when the other cores are
busy), which dominates on small inputs. ``twin_jit`` compiles the same Python function twice at
import — once with ``parallel=True`` and once without (``prange`` then runs as ``range``) — under
distinct names so numba's on-disk cache keeps both. Because every reduction in this package goes
through fixed-size row blocks, the two twins return bit-identical results.

One parallel region runs at a time in the process: a call that finds another Python thread
inside one takes the serial twin instead. numba's ``workqueue`` threading layer aborts the
process on concurrent launches, and with OpenMP two concurrent regions only oversubscribe the
cores, so fits running in several Python threads (joblib's threading backend, a web server)
are safe on every layer and return the same results.
"""

import threading
import types

import numba

from ._parallel import current_threads

__all__ = ["twin_jit", "PARALLEL_MIN_WORK"]

#: Estimated inner-loop iterations below which the serial twin is used.
PARALLEL_MIN_WORK = 100_000

#: Held while a parallel twin runs (see the module docstring).
_PARALLEL_REGION = threading.Lock()


def _renamed(fn, suffix):
    g = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + suffix,
                           fn.__defaults__, fn.__closure__)
    g.__qualname__ = fn.__qualname__ + suffix
    g.__doc__ = fn.__doc__
    return g


class _Twins:
    """Callable pair: ``serial`` and ``parallel`` dispatchers plus a work estimate."""

    def __init__(self, fn, work):
        self.serial = numba.njit(parallel=False, cache=True, nogil=True)(_renamed(fn, "_serial"))
        self.parallel = numba.njit(parallel=True, cache=True, nogil=True)(_renamed(fn, "_parallel"))
        self.work = work
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __call__(self, *args):
        # the work estimate first, then the thread count of the enclosing ``threads`` context
        # (numba's own getter takes a lock; it is asked only outside such a context)
        if self.work(*args) >= PARALLEL_MIN_WORK:
            n = current_threads()
            if ((numba.get_num_threads() if n is None else n) > 1
                    and _PARALLEL_REGION.acquire(blocking=False)):
                try:
                    return self.parallel(*args)
                finally:
                    _PARALLEL_REGION.release()
        return self.serial(*args)


def twin_jit(work):
    """Decorator: compile serial and parallel twins; ``work(*args)`` estimates loop iterations.

    Parameters
    ----------
    work : callable
        Returns the approximate number of inner-loop iterations for the given arguments.

    Returns
    -------
    decorator : callable
        Turns a ``prange`` function into a :class:`_Twins` callable.
    """
    def decorate(fn):
        return _Twins(fn, work)

    return decorate
