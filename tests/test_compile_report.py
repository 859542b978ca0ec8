"""A fit that compiles numba kernels says so: once per configuration and process at the
default ``verbose=0`` (silenced by ``verbose=-1`` or ``SKLEARN_LVGP_COMPILE_NOTICE=0``), every
time with ``verbose > 0``, then with the count and the time."""

import logging

import numba
import numpy as np
import pytest

from sklearn_lvgp import SparseGPRegressor
from sklearn_lvgp._compile import report
from sklearn_lvgp._compile.report import compile_report


def _plan(name, verbose):
    # (plan key, estimator name, verbose) as an estimator's _plan() gives them
    return f"{name}/default", name, verbose


_Verbose, _Quiet, _Silent = _plan("_Verbose", 1), _plan("_Quiet", 0), _plan("_Silent", -1)


def _fresh_function():
    # a new dispatcher each call: its first call always compiles
    @numba.njit
    def add_one(x):
        return x + 1.0

    return add_one


def test_compilation_is_logged_with_count_and_time(caplog):
    f = _fresh_function()
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"):
        with compile_report(*_Verbose):
            assert f(1.0) == 2.0
    messages = [r.getMessage() for r in caplog.records if r.name == "sklearn_lvgp"]
    assert any("compiling numba kernels" in m for m in messages)
    done = [m for m in messages if "compiled 1 jitted functions in" in m]
    assert len(done) == 1 and done[0].endswith(" s")


def test_nothing_logged_without_compilation_or_with_verbose_minus_one(caplog):
    f = _fresh_function()
    f(1.0)  # compiled before the context
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"):
        with compile_report(*_Verbose):
            f(2.0)
        with compile_report(*_Silent):
            _fresh_function()(1.0)
    assert not [r for r in caplog.records if r.name == "sklearn_lvgp"]


def _notices(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == "sklearn_lvgp" and "compiling numba kernels" in r.getMessage()]


@pytest.fixture
def fresh_process(monkeypatch):
    """As if no configuration had given its notice in this process yet."""
    monkeypatch.setattr(report, "_NOTICED", set())
    monkeypatch.delenv(report.NOTICE_SWITCH, raising=False)


def test_first_compile_notice_once_per_configuration_at_verbose_0(caplog, fresh_process):
    est = SparseGPRegressor()  # verbose=0
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"):
        for _ in range(2):
            with compile_report(*est._plan()):
                _fresh_function()(1.0)
        with compile_report(*_Quiet):  # another configuration
            _fresh_function()(1.0)
    notices = _notices(caplog)
    assert len(notices) == 2
    assert notices[0] == (
        "SparseGPRegressor: compiling numba kernels for SparseGPRegressor/default/auto (first "
        "use in this environment, about 4 s when its plan was recorded; cached on disk for "
        "later fits). `python -m sklearn_lvgp.precompile` compiles them ahead of use; "
        "verbose=-1 or SKLEARN_LVGP_COMPILE_NOTICE=0 silences this notice.")
    assert notices[1].startswith("_Quiet: compiling numba kernels for _Quiet/default (")
    assert "seconds to a minute" in notices[1]  # no recorded plan: no estimate
    assert not [m for m in caplog.messages if "jitted functions in" in m]  # verbose lines


def test_first_compile_notice_silenced_by_the_environment(caplog, fresh_process, monkeypatch):
    monkeypatch.setenv(report.NOTICE_SWITCH, "0")
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"):
        with compile_report(*_Quiet):
            _fresh_function()(1.0)
    assert not _notices(caplog)


def test_verbose_fits_give_the_notice_every_time(caplog, fresh_process):
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"):
        for _ in range(2):
            with compile_report(*_Verbose):
                _fresh_function()(1.0)
    assert len(_notices(caplog)) == 2


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=3
def test_verbose_minus_one_is_accepted_and_below_is_refused():
    X = np.random.default_rng(0).normal(size=(30, 2))
    SparseGPRegressor(n_inducing=5, max_iter=3, verbose=-1).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="verbose must be >= -1, got -2"):
        SparseGPRegressor(n_inducing=5, max_iter=3, verbose=-2).fit(X, X[:, 0])


def test_fit_reports_through_the_package_logger(caplog):
    X = np.random.default_rng(0).normal(size=(30, 2))
    y = X[:, 0]
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"):
        SparseGPRegressor(n_inducing=5, max_iter=3, verbose=1).fit(X, y)
    # the fit logs its summary line through the logger (compile lines only in a cold cache)
    assert any("SparseGPRegressor" in r.getMessage() for r in caplog.records)
