"""Ctrl-C that lands in jitted code arrives as ``KeyboardInterrupt``, not as ``SystemError``.

A ``SIGINT`` sets a flag that Python acts on at the next Python code it runs. In jitted code
that is the first call the compiled function makes back into Python (numba's
``_numba_unpickle``, for instance): the ``KeyboardInterrupt`` is raised there, the compiled
function returns its result with the exception still set, and Python reports a ``SystemError``
("CPUDispatcher(...) returned a result with an exception set") whose ``__cause__``, possibly
through another such ``SystemError``, is the interrupt. ``except KeyboardInterrupt`` does not
catch it. The estimators' compute contexts (:func:`sklearn_lvgp._core.parallel.threads`, and
the fit's all-or-nothing state restore) re-raise the interrupt itself.
"""

from contextlib import contextmanager

__all__ = ["interrupt_inside", "interrupts_unwrapped"]


def interrupt_inside(exc):
    """The ``KeyboardInterrupt`` that the ``SystemError`` ``exc`` wraps, or None."""
    seen = set()
    while isinstance(exc, SystemError) and id(exc) not in seen:
        seen.add(id(exc))
        inner = exc.__cause__ if exc.__cause__ is not None else exc.__context__
        if isinstance(inner, KeyboardInterrupt):
            return inner
        exc = inner
    return None


@contextmanager
def interrupts_unwrapped():
    """Re-raise a ``KeyboardInterrupt`` wrapped in a ``SystemError`` as itself (with the
    traceback of the ``SystemError``, which shows where the interrupt landed)."""
    try:
        yield
    except SystemError as exc:
        interrupt = interrupt_inside(exc)
        if interrupt is None:
            raise
        raise interrupt.with_traceback(exc.__traceback__) from None
