"""The compile-ahead helper process: plans, the decision to start it, the helper itself."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from numba import types

import sklearn_lvgp
from sklearn_lvgp._compile import precompile as _precompile
from sklearn_lvgp._compile.plans import PLANS
from sklearn_lvgp._compile.precompile import (
    compile_ahead,
    decode_type,
    encode_type,
    plan_key,
    resolve,
)
from sklearn_lvgp.kernels import RBF, Matern32, Matern52
from sklearn_lvgp.utils._record_compile_plans import RECIPES, recipe_fit

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("t", [
    types.float64, types.int64, types.boolean,
    types.Array(types.float64, 2, "F"), types.Array(types.int64, 1, "C", readonly=True),
    types.Array(types.float64, 3, "A"), types.UniTuple(types.int64, 2),
    types.Tuple([types.float64, types.Array(types.float64, 1, "C")]),
])
def test_type_codes_round_trip(t):
    code = encode_type(t)
    assert json.loads(json.dumps(code)) == code
    assert decode_type(code) == t


def test_type_without_code_is_not_recorded():
    assert encode_type(types.unicode_type) is None
    assert encode_type(types.UniTuple(types.unicode_type, 2)) is None
    with pytest.raises(ValueError, match="unknown type code"):
        decode_type(["set", "float64"])


def test_plan_keys_and_no_plan_for_an_unrecorded_configuration():
    assert sklearn_lvgp.UnscentedGPLVM()._plan()[0] == "UnscentedGPLVM/default/auto"
    assert sklearn_lvgp.UnscentedGPLVM(kernel=Matern32())._plan()[0] == \
        "UnscentedGPLVM/Matern32/auto"
    assert sklearn_lvgp.DVMGP()._plan()[0] == "DVMGP/default"
    assert plan_key("DVMGP") == "DVMGP/default"
    assert plan_key("UnscentedGPLVM", Matern32(), "unscented") == \
        "UnscentedGPLVM/Matern32/unscented"
    # an explicit RBF kernel runs the default's kernels
    explicit = _precompile._find_plan(sklearn_lvgp.UnscentedGPLVM(kernel=RBF())._plan()[0])
    assert explicit["entries"] == PLANS["UnscentedGPLVM/default/auto"]["entries"]
    assert _precompile._find_plan(sklearn_lvgp.UnscentedGPLVM(kernel=Matern52())._plan()[0]) \
        is None


def test_every_recipe_has_a_plan_and_every_entry_resolves():
    keys = {recipe_fit(name)[0]._plan()[0] for name in RECIPES}
    assert keys == set(PLANS)
    for plan in PLANS.values():
        assert plan["entries"] and plan["compile_s"] > 0
        for entry in plan["entries"]:
            dispatcher, sig = resolve(entry)
            assert len(sig) == len(entry[4])
            assert dispatcher.py_func.__module__ == entry[0]


_COVERS = textwrap.dedent("""
    import json, sys, warnings
    from sklearn_lvgp._compile.plans import PLANS
    from sklearn_lvgp._compile.precompile import locators, resolve
    from sklearn_lvgp.utils._record_compile_plans import recipe_fit

    estimator, data = recipe_fit(sys.argv[1])
    for entry in PLANS[estimator._plan()[0]]["entries"]:
        dispatcher, sig = resolve(entry)
        dispatcher.compile(sig)
    before = {d: set(d.overloads) for d in locators()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(*data)
    missing = sorted(f"{d.py_func.__qualname__}{sig}" for d in locators()
                     for sig in set(d.overloads) - before.get(d, set()))
    print(json.dumps(missing))
""")


@pytest.mark.slow  # 13 s: run it when the plans are regenerated (utils._record_compile_plans)
def test_each_plan_covers_its_fit():
    """A fit after its plan is compiled (loaded) uses no further jitted function or signature.

    For every plan large enough to start a helper (the others only record their compile time).
    Each recipe runs in its own process, as a user's first fit would; they run concurrently.
    """
    env = dict(os.environ, SKLEARN_LVGP_PRECOMPILE="0",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    helped = [name for name in RECIPES if PLANS[recipe_fit(name)[0]._plan()[0]]["compile_s"]
              >= _precompile.MIN_PLAN_SECONDS]
    assert len(helped) >= 3  # the GPLVM paths and DVMGP
    procs = {name: subprocess.Popen([sys.executable, "-c", _COVERS, name], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in helped}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        missing = json.loads(out.strip().splitlines()[-1])
        assert missing == [], f"{name}: the plan lacks {missing}; rerun " \
                              "python -m sklearn_lvgp.utils._record_compile_plans"


_HELPER = textwrap.dedent("""
    import json, sys
    from numba.core import event
    from sklearn_lvgp._compile.precompile import _is_cached, resolve, start_helper

    entry = ["sklearn_lvgp._compile.vexp_numba", "vexp", None, None, ["float64"]]
    dispatcher, sig = resolve(entry)
    before = _is_cached(dispatcher, sig)
    proc = start_helper([entry])
    proc.wait(timeout=300)
    after = _is_cached(dispatcher, sig)
    compiled = []

    class Listener(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

        def on_end(self, ev):
            pass

    with event.install_listener("numba:compile", Listener()):
        value = dispatcher(0.5)
    print(json.dumps([before, after, proc.returncode, compiled, value]))
""")


def test_helper_fills_an_empty_cache(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _HELPER], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    before, after, returncode, compiled, value = json.loads(out.stdout.strip().splitlines()[-1])
    assert (before, after, returncode) == (False, True, 0)
    assert compiled == []  # loaded from the helper's cache entry, not compiled here
    assert value == pytest.approx(np.exp(0.5), rel=1e-15)
    assert any(p.suffix == ".nbi" for p in tmp_path.rglob("*"))


class _FakeProcess:
    def __init__(self, log):
        self.log = log


def _fake_helpers(monkeypatch, should_start=True):
    log = []
    monkeypatch.setattr(_precompile, "_should_start", lambda entries: should_start)
    monkeypatch.setattr(_precompile, "start_helper",
                        lambda entries: log.append(("start", len(entries))) or _FakeProcess(log))
    monkeypatch.setattr(_precompile, "stop_helper", lambda proc: proc.log.append(("stop",)))
    return log


def test_compile_ahead_stops_its_helper_after_a_failed_fit(monkeypatch):
    log = _fake_helpers(monkeypatch)
    est = sklearn_lvgp.UnscentedGPLVM()
    with pytest.raises(RuntimeError, match="boom"), compile_ahead(*est._plan()):
        assert _precompile._RUNNING == {"UnscentedGPLVM/default/auto"}
        raise RuntimeError("boom")
    assert log == [("start", len(PLANS["UnscentedGPLVM/default/auto"]["entries"])), ("stop",)]
    assert _precompile._RUNNING == set()


def test_compile_ahead_one_helper_per_plan_at_a_time(monkeypatch):
    log = _fake_helpers(monkeypatch)
    est = sklearn_lvgp.UnscentedGPLVM()
    with compile_ahead(*est._plan()), compile_ahead(*est._plan()):
        pass
    assert [e[0] for e in log] == ["start", "stop"]


def test_compile_ahead_starts_nothing_without_a_plan_worth_a_helper(monkeypatch):
    log = _fake_helpers(monkeypatch)
    monkeypatch.setattr(_precompile, "_find_plan", lambda key: None)
    with compile_ahead(*sklearn_lvgp.UnscentedGPLVM()._plan()):
        pass
    small = {"compile_s": _precompile.MIN_PLAN_SECONDS - 0.1,
             "entries": PLANS["UnscentedGPLVM/default/auto"]["entries"]}
    monkeypatch.setattr(_precompile, "_find_plan", lambda key: small)
    with compile_ahead(*sklearn_lvgp.UnscentedGPLVM()._plan()):
        pass
    assert log == []


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_no_helper_when_switched_off_or_already_compiled(monkeypatch):
    entries = PLANS["SparseGPRegressor/default/auto"]["entries"]
    X = np.random.default_rng(0).normal(size=(30, 2))
    sklearn_lvgp.SparseGPRegressor(n_inducing=5, max_iter=2).fit(X, X[:, 0])
    # every kernel of the plan is compiled in this process now
    assert _precompile._should_start(entries) is False
    monkeypatch.setenv(_precompile.ENV_SWITCH, "0")
    monkeypatch.setattr(_precompile, "_is_cached", lambda dispatcher, sig: False)
    assert _precompile._should_start(entries) is False
    monkeypatch.setenv(_precompile.ENV_SWITCH, "1")
    monkeypatch.setattr(_precompile, "_available_cpus", lambda: 2)
    assert _precompile._should_start(entries) is True
    monkeypatch.setattr(_precompile, "_available_cpus", lambda: 1)
    assert _precompile._should_start(entries) is False


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_verbose_fit_says_a_helper_compiles(monkeypatch, caplog):
    _fake_helpers(monkeypatch)
    X = np.random.default_rng(0).normal(size=(30, 2))
    with caplog.at_level("INFO", logger="sklearn_lvgp"):
        sklearn_lvgp.UnscentedGPLVM(n_inducing=5, max_iter=2, verbose=1).fit(X)
    assert "a helper process compiles part of the numba kernels" in caplog.text


_RESOLVE_BARE = textwrap.dedent("""
    import json, sys
    from sklearn_lvgp._compile.plans import PLANS
    from sklearn_lvgp._compile.precompile import _bare_packages, resolve

    entries = [e for plan in PLANS.values() for e in plan["entries"]]
    _bare_packages(e[0] for e in entries)
    for e in entries:
        resolve(e)
    print(json.dumps([sorted(PLANS), "sklearn" in sys.modules]))
""")


def test_helper_resolves_every_plan_without_the_estimators():
    """The helper's bare import finds every planned kernel, and leaves scikit-learn unloaded."""
    command, env = _precompile._helper_command()
    stub = command[2].split("from sklearn_lvgp._compile.precompile")[0]
    out = subprocess.run([sys.executable, "-c", stub + _RESOLVE_BARE], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    keys, sklearn_loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert keys == sorted(PLANS)
    assert not sklearn_loaded


def test_plan_source_names_equal_plans_and_extends_prefixes():
    """The plan writer's source rebuilds the plans: equal entries as the other plan's name, a
    plan starting with another's entries as those entries and the rest."""
    from sklearn_lvgp.utils._record_compile_plans import _plans_source

    a = [["m", "f", None, None, ["int64"]], ["m", "g", 0, "serial", ["float64"]]]
    plans = {"B/x": {"compile_s": 2.0, "entries": a + [["m", "h", None, None, []]]},
             "A/x": {"compile_s": 1.0, "entries": a},
             "C/x": {"compile_s": 1.5, "entries": list(a)},
             "D/x": {"compile_s": 3.0, "entries": [["n", "k", None, None, []]]}}
    source = _plans_source(plans)
    namespace = {}
    exec(source, namespace)
    rebuilt = namespace["PLANS"]
    assert {k: p["entries"] for k, p in rebuilt.items()} == {
        k: p["entries"] for k, p in plans.items()}
    # a named equal plan shares its compile time (the same compilations)
    assert [rebuilt[k]["compile_s"] for k in ("A/x", "B/x", "C/x", "D/x")] == [1.0, 2.0, 1.0, 3.0]
    assert "PLANS['C/x'] = PLANS['A/x']" in source
    assert "'entries': PLANS['A/x']['entries'] + [" in source
    assert source.count("['m', 'f', None, None, ['int64']]") == 1
