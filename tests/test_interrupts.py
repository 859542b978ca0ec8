"""Ctrl-C during a fit arrives as ``KeyboardInterrupt`` and leaves the previous fitted state.

A ``SIGINT`` that lands inside jitted code used to surface as a ``SystemError`` ("CPUDispatcher
(...) returned a result with an exception set", the interrupt as its ``__cause__``), which
``except KeyboardInterrupt`` does not catch. A timer thread interrupts the main thread
(``_thread.interrupt_main``, what a ``SIGINT`` does) at delays spread over a warm fit.
"""

import _thread
import threading
import time
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import (
    DVMGP,
    GPCDE,
    LDGD,
    DeepGP,
    DeepGPClassifier,
    SparseGPRegressor,
    UnscentedGPLVM,
)
from sklearn_lvgp.base import _interrupt_inside

CASES = [
    SparseGPRegressor(n_inducing=20, max_iter=100, tol=None, random_state=0),
    UnscentedGPLVM(n_components=2, n_inducing=10, max_iter=60, random_state=0),
    DeepGP(n_layers=2, n_inducing=10, max_iter=60, tol=None, random_state=0),
    DeepGPClassifier(n_inducing=10, max_iter=60, tol=None, random_state=0),
    GPCDE(n_inducing=10, gh_order=5, max_iter=60, init="prior", tol=None, random_state=0),
    LDGD(n_components=2, n_inducing=10, max_iter=60, transform_max_iter=5, tol=None,
         random_state=0),
    DVMGP(n_inducing=10, n_inducing_projection=4, n_iter_fixed_noise=5, max_iter=60,
          n_components=1, random_state=0),
]


def _data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    return X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(200)


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if isinstance(est, UnscentedGPLVM):
            return est.fit(X)
        if isinstance(est, (LDGD, DeepGPClassifier)):
            return est.fit(X, (y > 0).astype(int))
        return est.fit(X, y)


def _state(est):
    return {k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else
                list(v) if isinstance(v, list) else v) for k, v in vars(est).items()}


def _same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (float, int, str, type(None))):
        return type(a) is type(b) and (a == b or a != a and b != b)
    if a is b:
        return True
    if isinstance(a, np.random.RandomState):  # snapshots of in-place state are copies
        return isinstance(b, np.random.RandomState) and all(
            map(_same, list(a.get_state()), list(b.get_state())))
    return type(a) is type(b) and hasattr(a, "__dict__") and _same(_state(a), _state(b))


def _interrupted_fit(est, X, y, delay):
    """Refit with an interrupt after ``delay`` s: whether it came as KeyboardInterrupt."""
    timer = threading.Timer(delay, _thread.interrupt_main)
    timer.start()
    try:
        _fit(est, X, y)
        interrupted = False
    except KeyboardInterrupt:  # a SystemError would fail the test here
        interrupted = True
    finally:
        try:  # an interrupt that comes after the fit ended lands here
            timer.cancel()
            timer.join()
            time.sleep(0.002)
        except KeyboardInterrupt:
            pass
    return interrupted


def _check(est, repeats):
    X, y = _data()
    _fit(est, X, y)  # compiles (cold cache) and sets the state an interrupt must keep
    t0 = time.perf_counter()
    _fit(est, X, y)
    seconds = time.perf_counter() - t0
    before = _state(est)
    landed = 0
    for k in range(repeats):
        if _interrupted_fit(est, X, y, seconds * (0.1 + 0.5 * k / max(repeats - 1, 1))):
            landed += 1
            after = _state(est)
            assert after.keys() == before.keys()
            assert all(_same(before[key], after[key]) for key in before), type(est).__name__
        else:
            before = _state(est)
    assert landed > 0


@pytest.mark.parametrize("est", CASES, ids=lambda e: type(e).__name__)
def test_interrupt_arrives_as_keyboard_interrupt(est):
    _check(est, 3)  # 21 interrupts over the seven estimators


@pytest.mark.slow
@pytest.mark.parametrize("est", CASES, ids=lambda e: type(e).__name__)
def test_interrupt_arrives_as_keyboard_interrupt_20_times(est):
    _check(est, 20)  # 140 interrupts


def test_interrupt_inside_system_errors_is_found():
    interrupt = KeyboardInterrupt()
    inner = SystemError("<function _numba_unpickle> returned a result with an exception set")
    inner.__cause__ = interrupt
    outer = SystemError("CPUDispatcher(<function f>) returned a result with an exception set")
    outer.__cause__ = inner
    assert _interrupt_inside(outer) is interrupt
    assert _interrupt_inside(inner) is interrupt
    assert _interrupt_inside(SystemError("other")) is None
    assert _interrupt_inside(ValueError("x")) is None
