"""``python -m sklearn_lvgp.precompile``: warms numba's cache with the recorded plans."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sklearn_lvgp._compile.plans import PLANS
from sklearn_lvgp.precompile import main

ROOT = Path(__file__).resolve().parent.parent


def test_help_names_the_options(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "python -m sklearn_lvgp.precompile" in out and "--estimator" in out
    assert "--list" in out and "NUMBA_CACHE_DIR" in out


def test_unknown_estimator_is_a_usage_error_naming_the_known_ones(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--estimator", "GaussianProcessRegressor"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "no compile plan for estimator 'GaussianProcessRegressor'" in err
    assert "SparseGPRegressor" in err and "UnscentedGPLVM" in err


def test_list_shows_the_selected_plans_and_their_cache_state(capsys):
    assert main(["--list", "--estimator", "SparseGPRegressor", "--estimator", "DVMGP"]) == 0
    lines = capsys.readouterr().out.splitlines()
    keys = [k for k in PLANS if k.split("/")[0] in ("SparseGPRegressor", "DVMGP")]
    assert [line.split()[0] for line in lines] == keys
    for key, line in zip(keys, lines, strict=True):
        cached, total = map(int, re.search(r"(\d+)/(\d+) kernels cached", line).groups())
        assert total == len(PLANS[key]["entries"]) and 0 <= cached <= total


def _run(args, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow  # compiles a plan into an empty cache: 53 s on the loaded 2-core machine
def test_precompile_fills_an_empty_cache_so_a_fit_compiles_nothing(tmp_path):
    key = "SparseGPRegressor/default/auto"
    first = _run(["-m", "sklearn_lvgp.precompile", "--estimator", "SparseGPRegressor"], tmp_path)
    assert first.returncode == 0, first.stderr
    compiled = int(re.search(rf"{key} +compiled +(\d+) kernels in", first.stdout).group(1))
    assert compiled > 0 and any(tmp_path.rglob("*.nbi"))
    again = _run(["-m", "sklearn_lvgp.precompile", "--estimator", "SparseGPRegressor"], tmp_path)
    n = len(PLANS[key]["entries"])
    assert re.search(rf"{key} +compiled +0 kernels in .* {n} cached", again.stdout), again.stdout
    fit = _run(["-c", "import numpy as np; from sklearn_lvgp import SparseGPRegressor; "
                "from sklearn_lvgp._compile.report import compile_timer; "
                "X = np.random.default_rng(0).normal(size=(40, 2)); "
                "t = compile_timer(); c = t.__enter__(); "
                "SparseGPRegressor(n_inducing=5, max_iter=5).fit(X, X[:, 0]); "
                "t.__exit__(None, None, None); print('compiled', c.count)"], tmp_path)
    assert fit.returncode == 0, fit.stderr
    assert "compiled 0" in fit.stdout
    assert "compiling numba kernels" not in fit.stderr  # nothing compiled: no notice


@pytest.mark.slow  # a fit into an empty cache: 31 s on the loaded 2-core machine
def test_a_cold_fit_gives_the_notice_once_on_stderr(tmp_path):
    fit = _run(["-c", "import numpy as np; from sklearn_lvgp import SparseGPRegressor; "
                "X = np.random.default_rng(0).normal(size=(40, 2)); "
                "[SparseGPRegressor(n_inducing=5, max_iter=5).fit(X, X[:, 0]) "
                "for _ in range(2)]"], tmp_path)
    assert fit.returncode == 0, fit.stderr
    notices = [line for line in fit.stderr.splitlines() if "compiling numba kernels" in line]
    assert len(notices) == 1
    assert notices[0].startswith("SparseGPRegressor: compiling numba kernels for "
                                 "SparseGPRegressor/default/auto (first use in this environment")
    assert "python -m sklearn_lvgp.precompile" in notices[0]
