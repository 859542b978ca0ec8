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
from sklearn.base import clone
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
from sklearn_lvgp._core.interrupt import interrupt_inside

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


def _interrupted(call, delay):
    """``call()`` with an interrupt after ``delay`` s: whether it came as KeyboardInterrupt
    inside the call (a SystemError would fail the test here)."""
    timer = threading.Timer(delay, _thread.interrupt_main)
    calling = False
    try:
        timer.start()  # on a loaded machine the interrupt may come before start() returns
        calling = True
        call()
        return False
    except KeyboardInterrupt:
        return calling
    finally:
        try:  # an interrupt that comes after the call ended lands here
            timer.cancel()
            timer.join()
            time.sleep(0.002)
        except KeyboardInterrupt:
            pass


def _check(est, repeats):
    X, y = _data()
    _fit(est, X, y)  # compiles (cold cache) and sets the state an interrupt must keep
    t0 = time.perf_counter()
    _fit(est, X, y)
    seconds = time.perf_counter() - t0
    before = _state(est)
    landed = 0
    for k in range(repeats):
        if _interrupted(lambda: _fit(est, X, y), seconds * (0.1 + 0.5 * k / max(repeats - 1, 1))):
            landed += 1
            after = _state(est)
            assert after.keys() == before.keys()
            assert all(_same(before[key], after[key]) for key in before), type(est).__name__
        else:
            before = _state(est)
    assert landed > 0


@pytest.mark.parametrize("est", CASES, ids=lambda e: type(e).__name__)
def test_interrupt_arrives_as_keyboard_interrupt(est):
    _check(clone(est), 3)  # 21 interrupts over the seven estimators


@pytest.mark.slow
@pytest.mark.parametrize("est", CASES, ids=lambda e: type(e).__name__)
def test_interrupt_arrives_as_keyboard_interrupt_20_times(est):
    _check(clone(est), 20)  # 140 interrupts


@pytest.mark.parametrize("est, method, copies", [(CASES[1], "transform", 5),
                                                 (CASES[5], "predict_proba", 1)],
                         ids=["UnscentedGPLVM.transform", "LDGD.predict_proba"])
def test_interrupt_in_a_method_after_the_fit_arrives_as_keyboard_interrupt(est, method, copies):
    X, y = _data()
    X_new = np.tile(X, (copies, 1)) + 0.1  # new rows: q(x*) inferred by an optimisation
    est = _fit(clone(est).set_params(transform_max_iter=300), X, y)
    run = getattr(est, method)
    expected = run(X_new)  # warm
    t0 = time.perf_counter()
    run(X_new)
    seconds = time.perf_counter() - t0
    before = _state(est)
    landed = sum(_interrupted(lambda: run(X_new), seconds * (0.1 + 0.25 * k)) for k in range(3))
    assert landed > 0
    assert all(_same(v, _state(est)[k]) for k, v in before.items())
    np.testing.assert_array_equal(run(X_new), expected)


def test_interrupt_inside_system_errors_is_found():
    interrupt = KeyboardInterrupt()
    inner = SystemError("<function _numba_unpickle> returned a result with an exception set")
    inner.__cause__ = interrupt
    outer = SystemError("CPUDispatcher(<function f>) returned a result with an exception set")
    outer.__cause__ = inner
    assert interrupt_inside(outer) is interrupt
    assert interrupt_inside(inner) is interrupt
    assert interrupt_inside(SystemError("other")) is None
    assert interrupt_inside(ValueError("x")) is None
