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

from .._core.parallel import current_threads, twins_held_serial

__all__ = ["twin_jit", "twin_jit_per_value", "PARALLEL_MIN_WORK"]

#: Estimated inner-loop iterations below which the serial twin is used.
PARALLEL_MIN_WORK = 100_000

#: Held while a parallel twin runs (see the module docstring).
_PARALLEL_REGION = threading.Lock()


def _renamed(fn, name, suffix):
    g = types.FunctionType(fn.__code__, fn.__globals__, name + suffix,
                           fn.__defaults__, fn.__closure__)
    g.__qualname__ = name + suffix
    g.__doc__ = fn.__doc__
    return g


class _Twins:
    """Callable pair: ``serial`` and ``parallel`` dispatchers plus a work estimate."""

    def __init__(self, fn, work, name=None):
        name = fn.__qualname__ if name is None else name
        self.serial = numba.njit(parallel=False, cache=True, nogil=True)(
            _renamed(fn, name, "_serial"))
        self.parallel = numba.njit(parallel=True, cache=True, nogil=True)(
            _renamed(fn, name, "_parallel"))
        self.work = work
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def runs_serial(self, *args):
        """Whether a call with ``args`` takes the serial twin whatever other threads do: the
        work is small, the enclosing :func:`~sklearn_lvgp._core.parallel.threads` context (numba's
        thread count outside one) has one thread, as in the objective engine's chunk workers,
        or a :func:`~sklearn_lvgp._core.parallel.serial_twins` context holds it serial, as in the
        engine's global steps."""
        if self.work(*args) < PARALLEL_MIN_WORK or twins_held_serial():
            return True
        # numba's own getter takes a lock; it is asked only outside a ``threads`` context
        n = current_threads()
        return (numba.get_num_threads() if n is None else n) <= 1

    def __call__(self, *args):
        if not self.runs_serial(*args) and _PARALLEL_REGION.acquire(blocking=False):
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


class _TwinsPerValue:
    """Twins compiled once per value of one argument, which is a compile-time constant in each.

    ``make(value)`` returns the function without that argument (a closure over ``value``);
    numba freezes closure variables as constants, so branches on ``value`` are pruned before
    type inference and each compilation holds only the code of its own value. The pair for a
    value is created at its first call. ``serial`` and ``parallel`` take the full argument list,
    like the call itself.
    """

    def __init__(self, make, position, work, names):
        self._make = make
        self._position = position
        self._work = work
        self._names = names
        self._twins = {}
        self.__doc__ = make.__doc__
        self.__name__ = make.__name__

    def for_value(self, value):
        """The :class:`_Twins` of ``value`` (created, not compiled, on first use)."""
        twins = self._twins.get(value)
        if twins is None:
            twins = _Twins(self._make(value), self._work,
                           name=f"{self.__name__}_{self._names[value]}")
            self._twins[value] = twins  # a concurrent creation only makes a second, equal pair
        return twins

    def _split(self, args):
        p = self._position
        return self.for_value(args[p]), args[:p] + args[p + 1:]

    def __call__(self, *args):
        twins, rest = self._split(args)
        return twins(*rest)

    def serial(self, *args):
        """The serial twin of ``args``' value, called with the other arguments."""
        twins, rest = self._split(args)
        return twins.serial(*rest)

    def parallel(self, *args):
        """The parallel twin of ``args``' value, called with the other arguments."""
        twins, rest = self._split(args)
        return twins.parallel(*rest)


def twin_jit_per_value(position, names, work):
    """Decorator of a factory: :func:`twin_jit` twins compiled per value of one argument.

    Parameters
    ----------
    position : int
        Index of the argument that selects the compilation (a small integer code, such as a
        kernel profile) in the call's argument list.
    names : dict
        Name of each allowed value; it suffixes the compiled functions' names (and so their
        files in numba's on-disk cache).
    work : callable
        As for :func:`twin_jit`, called with the arguments other than the selecting one.

    Returns
    -------
    decorator : callable
        Turns ``make(value) -> function`` into a callable with the selecting argument in
        ``position``.
    """
    def decorate(make):
        return _TwinsPerValue(make, position, work, names)

    return decorate
