"""A verbose fit that compiles numba kernels says so, with the count and the time."""

import logging

import numba
import numpy as np

from sklearn_lvgp import SparseGPRegressor
from sklearn_lvgp._compile.report import compile_report


class _Verbose:
    verbose = 1


class _Quiet:
    verbose = 0


def _fresh_function():
    # a new dispatcher each call: its first call always compiles
    @numba.njit
    def add_one(x):
        return x + 1.0

    return add_one


def test_compilation_is_logged_with_count_and_time(caplog):
    f = _fresh_function()
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"):
        with compile_report(_Verbose()):
            assert f(1.0) == 2.0
    messages = [r.getMessage() for r in caplog.records if r.name == "sklearn_lvgp"]
    assert any("compiling numba kernels" in m for m in messages)
    done = [m for m in messages if "compiled 1 jitted functions in" in m]
    assert len(done) == 1 and done[0].endswith(" s")


def test_nothing_logged_without_compilation_or_verbose(caplog):
    f = _fresh_function()
    f(1.0)  # compiled before the context
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"):
        with compile_report(_Verbose()):
            f(2.0)
        with compile_report(_Quiet()):
            _fresh_function()(1.0)
    assert not [r for r in caplog.records if r.name == "sklearn_lvgp"]


def test_fit_reports_through_the_package_logger(caplog):
    X = np.random.default_rng(0).normal(size=(30, 2))
    y = X[:, 0]
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"):
        SparseGPRegressor(n_inducing=5, max_iter=3, verbose=1).fit(X, y)
    # the fit logs its summary line through the logger (compile lines only in a cold cache)
    assert any("SparseGPRegressor" in r.getMessage() for r in caplog.records)
