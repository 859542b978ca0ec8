"""``verbose`` fits report progress through the package logger, with an upper-bound ETA, or
in a tqdm progress bar; every optimiser reports the bound (higher is better), with the sign of
``elbo_history_``, in its lines, its bar and the callback's ``info["bound"]``."""

import logging
import re
import sys
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import GPCDE, DeepGP, SparseGPRegressor, UnscentedGPLVM
from sklearn_lvgp._core import progress
from sklearn_lvgp._core.progress import iteration_line


def test_iteration_line_gives_share_elapsed_and_eta():
    line = iteration_line("Model", 250, 1000, "bound", -12.5, 30.0)
    assert line.startswith("[Model] iter  250/1000 ( 25 %)  bound -1.250000e+01")
    assert line.endswith("30 s, at most 1 min 30 s left")
    assert iteration_line("M", 10, 10, "x", 0.0, 7200.0).endswith("2 h 00 min, at most 0 s left")


def _lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "sklearn_lvgp"]


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    return X, np.sin(X[:, 0])


def _line_bounds(lines, name):
    """``{iteration: bound}`` of the iteration lines of ``name``."""
    found = [re.search(r"iter +(\d+)/\d+ \( *\d+ %\)  bound +(\S+)  ", line)
             for line in lines if line.startswith(f"[{name}] iter")]
    assert found and all(found)
    return {int(m.group(1)): float(m.group(2)) for m in found}


def test_adam_and_lbfgs_lines_show_the_bound_of_elbo_history(caplog):
    X, y = _data()
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        adam = DeepGP(n_inducing=5, max_iter=200, tol=None, verbose=1, random_state=0).fit(X, y)
        lbfgs = GPCDE(n_inducing=5, gh_order=5, max_iter=60, init="prior", tol=None,
                      verbose=10, random_state=0).fit(X, y)
        sgpr = SparseGPRegressor(n_inducing=5, max_iter=60, tol=1e-300, verbose=10).fit(X, y)
    lines = _lines(caplog)
    shown = _line_bounds(lines, "DeepGP")
    assert sorted(shown) == [100, 200]
    assert all("left" in line for line in lines if line.startswith("[DeepGP] iter"))
    assert lbfgs.optimizer_ == "lbfgs"
    shown_l = _line_bounds(lines, "GPCDE")
    assert len(shown_l) >= 2 and all(i % 5 == 0 for i in shown_l)  # every 50 // 10 iterations
    for model, values in ((adam, shown), (lbfgs, shown_l)):
        for i, value in values.items():  # the bound itself, higher is better: not its negative
            assert value == pytest.approx(model.elbo_history_[i - 1], rel=1e-6)
    done = [line for line in lines if line.startswith("[SparseGPRegressor] done")]
    bound = float(re.search(r"bound (\S+),", done[0]).group(1))
    assert bound == pytest.approx(sgpr.elbo_, rel=1e-6)
    assert max(_line_bounds(lines, "SparseGPRegressor").values()) <= bound


CASES = [
    SparseGPRegressor(n_inducing=5, max_iter=30, random_state=0),
    UnscentedGPLVM(n_components=2, n_inducing=5, max_iter=30, optimizer="adam", tol=None,
                   random_state=0),
    GPCDE(n_inducing=5, gh_order=5, max_iter=30, init="prior", random_state=0),
]


@pytest.mark.parametrize("est", CASES, ids=lambda e: f"{type(e).__name__}-{e.optimizer}")
def test_callback_bound_is_elbo_history(est):
    seen = []
    X, y = _data()
    est = clone(est).set_params(callback=lambda e, info: seen.append(info))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X) if isinstance(est, UnscentedGPLVM) else est.fit(X, y)
    assert "objective" not in seen[0]
    bounds = [info["bound"] for info in seen]
    if hasattr(est, "elbo_history_"):
        np.testing.assert_array_equal(bounds[-est.elbo_history_.size:], est.elbo_history_)
    else:  # SparseGPRegressor keeps the final bound only
        assert bounds[-1] == pytest.approx(est.elbo_, rel=1e-6)


class _FakeBar:
    made = []

    def __init__(self, total, desc, unit, leave):
        self.total, self.desc, self.n, self.postfix, self.closed = total, desc, 0, None, False
        _FakeBar.made.append(self)

    def set_postfix(self, ordered_dict=None, refresh=True, **values):
        self.postfix = {**(ordered_dict or {}), **values}

    def update(self, n):
        self.n += n

    def close(self):
        self.closed = True


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_bar_replaces_the_lines_when_tqdm_and_a_terminal_are_there(caplog, monkeypatch):
    monkeypatch.setattr(progress, "_tqdm", lambda: _FakeBar)
    monkeypatch.setattr(progress, "_interactive", lambda: True)
    _FakeBar.made = []
    X, y = _data()
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"):
        model = SparseGPRegressor(n_inducing=5, max_iter=40, tol=1e-300, verbose=1).fit(X, y)
    assert not [m for m in _lines(caplog) if "] iter" in m]
    (bar,) = _FakeBar.made
    assert (bar.total, bar.desc, bar.n, bar.closed) == (40, "SparseGPRegressor", model.n_iter_,
                                                        True)
    assert float(bar.postfix["bound"]) == pytest.approx(model.elbo_, rel=1e-6)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_lines_without_tqdm_or_without_a_terminal(caplog, monkeypatch):
    X, y = _data()
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import fails: tqdm not installed
    monkeypatch.setattr(progress, "_interactive", lambda: True)
    assert progress._tqdm() is None
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"):
        SparseGPRegressor(n_inducing=5, max_iter=40, tol=1e-300, verbose=10).fit(X, y)
    assert _line_bounds(_lines(caplog), "SparseGPRegressor")
    monkeypatch.undo()
    monkeypatch.setattr(progress, "_tqdm", lambda: _FakeBar)
    monkeypatch.setattr(progress, "_interactive", lambda: False)  # output to a file or a pipe
    _FakeBar.made = []
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"):
        SparseGPRegressor(n_inducing=5, max_iter=40, tol=1e-300, verbose=10).fit(X, y)
    assert _line_bounds(_lines(caplog), "SparseGPRegressor") and not _FakeBar.made


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_real_tqdm_bar_shows_the_bound(capsys, monkeypatch):
    pytest.importorskip("tqdm")  # the optional "progress" extra
    monkeypatch.setattr(progress, "_interactive", lambda: True)
    X, y = _data()
    DeepGP(n_inducing=5, max_iter=50, tol=None, verbose=1, random_state=0).fit(X, y)
    err = capsys.readouterr().err
    assert "DeepGP" in err and "50/50" in err and "bound=" in err


def test_verbose_minus_one_logs_nothing(caplog):
    X, y = _data()
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for est in CASES:
            est = clone(est).set_params(verbose=-1)
            est.fit(X) if isinstance(est, UnscentedGPLVM) else est.fit(X, y)
    assert not _lines(caplog)


def test_held_out_checks_go_to_the_bar_or_to_lines(caplog, monkeypatch):
    X, y = _data()
    common = {"n_inducing": 5, "max_iter": 200, "early_stopping": True, "n_iter_no_change": 5,
              "random_state": 0}
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        lines_model = DeepGP(**common, verbose=1).fit(X, y)
        in_lines = [m for m in _lines(caplog) if "held-out score" in m]
        monkeypatch.setattr(progress, "_tqdm", lambda: _FakeBar)
        monkeypatch.setattr(progress, "_interactive", lambda: True)
        _FakeBar.made = []
        caplog.clear()
        bar_model = DeepGP(**common, verbose=1).fit(X, y)
    assert len(in_lines) == len(lines_model.validation_scores_) > 0
    assert not [m for m in _lines(caplog) if "held-out score" in m]  # in the bar's postfix
    (bar,) = _FakeBar.made
    assert float(bar.postfix["held_out"]) == pytest.approx(bar_model.validation_scores_[-1],
                                                           rel=1e-6)
    np.testing.assert_array_equal(bar_model.validation_scores_, lines_model.validation_scores_)
