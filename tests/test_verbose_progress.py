"""``verbose`` fits report progress through the package logger, with an upper-bound ETA."""

import logging
import re
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import DeepGP, SparseGPRegressor
from sklearn_lvgp._core.progress import iteration_line


def test_iteration_line_gives_share_elapsed_and_eta():
    line = iteration_line("Model", 250, 1000, "objective", -12.5, 30.0)
    assert line.startswith("[Model] iter  250/1000 ( 25 %)  objective -1.250000e+01")
    assert line.endswith("30 s, at most 1 min 30 s left")
    assert iteration_line("M", 10, 10, "x", 0.0, 7200.0).endswith("2 h 00 min, at most 0 s left")


def _lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "sklearn_lvgp"]


def test_adam_and_lbfgs_fits_log_progress_lines(caplog):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = np.sin(X[:, 0])
    with caplog.at_level(logging.INFO, logger="sklearn_lvgp"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        DeepGP(n_inducing=5, max_iter=200, tol=None, verbose=1, random_state=0).fit(X, y)
        SparseGPRegressor(n_inducing=5, max_iter=60, tol=1e-300, verbose=10).fit(X, y)
    lines = _lines(caplog)
    adam = [line for line in lines if line.startswith("[DeepGP] iter")]
    assert [re.search(r"iter (\d+)/200", line).group(1) for line in adam] == ["100", "200"]
    assert all("ELBO estimate" in line and "left" in line for line in adam)
    lbfgs = [line for line in lines if line.startswith("[SparseGPRegressor] iter")]
    assert lbfgs and all(re.search(r"iter +\d+/60 \( *\d+ %\)", line) for line in lbfgs)
