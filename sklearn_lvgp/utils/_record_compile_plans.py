"""Record the compile plans of :mod:`sklearn_lvgp._compile.precompile` (a maintainer's tool).

Each recipe fits one estimator configuration in a new Python process whose numba cache is an
empty folder, so every jitted function the fit uses is compiled there; the process reports the
package's compilations in the order they start. The plans go to ``sklearn_lvgp/_compile/plans.py``.
Run
after changing a jitted function's name, module or signature::

    python -m sklearn_lvgp.utils._record_compile_plans

A stale plan costs speed, never correctness: an entry the code no longer has is skipped, and a
kernel the plan lacks is compiled by the fit itself. ``tests/test_precompile.py`` checks that
each plan still covers its fit.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba

#: Recipe name -> (estimator class, keyword arguments as Python source). The data: 200 rows of
#: ``load_digits`` for the transformers and classifiers, of ``load_diabetes`` for the regressors.
RECIPES = {
    "UnscentedGPLVM": ("UnscentedGPLVM", "{}"),
    "UnscentedGPLVM, Matern32": ("UnscentedGPLVM",
                                 "dict(kernel=Matern32(length_scale=np.ones(2)))"),
    "UnscentedGPLVM, unscented RBF": ("UnscentedGPLVM", "dict(expectation='unscented')"),
    "UnscentedGPLVM, RBF": ("UnscentedGPLVM", "dict(kernel=RBF(length_scale=np.ones(2)))"),
    "LDGD": ("LDGD", "{}"),
    "DVMGP": ("DVMGP", "{}"),
    "DeepGP": ("DeepGP", "{}"),
    "GPCDE": ("GPCDE", "{}"),
    "SparseGPRegressor": ("SparseGPRegressor", "{}"),
}


def recipe_fit(name):
    """The estimator and data of recipe ``name``: ``(estimator, fit_args)``."""
    import numpy as np  # noqa: F401 - used by the recipes' keyword sources
    from sklearn.datasets import load_diabetes, load_digits

    import sklearn_lvgp

    from ..kernels import RBF, Matern32  # noqa: F401 - used by the recipes

    cls_name, kwargs = RECIPES[name]
    estimator = getattr(sklearn_lvgp, cls_name)(random_state=0, max_iter=20, **eval(kwargs))
    if cls_name in ("UnscentedGPLVM", "LDGD"):
        X, y = load_digits(return_X_y=True)
        data = (X[:200],) if cls_name == "UnscentedGPLVM" else (X[:200], y[:200])
    else:
        X, y = load_diabetes(return_X_y=True)
        data = (X[:200], y[:200])
    return estimator, data


def _record_in_this_process(name):
    """Fit recipe ``name`` and return ``(plan key, entries)``; the cache must be empty."""
    import warnings

    from numba.core import event

    from .._compile.precompile import encode_type, locators, plan_key

    started = []
    depth_and_t0 = [0, 0.0]
    seconds = [0.0]

    class _Listener(event.Listener):
        def on_start(self, ev):
            dispatcher = ev.data["dispatcher"]
            if dispatcher.py_func.__module__.startswith("sklearn_lvgp"):
                started.append((dispatcher, tuple(ev.data["args"])))
            if depth_and_t0[0] == 0:
                depth_and_t0[1] = time.perf_counter()
            depth_and_t0[0] += 1

        def on_end(self, ev):
            depth_and_t0[0] -= 1
            if depth_and_t0[0] == 0:
                seconds[0] += time.perf_counter() - depth_and_t0[1]

    estimator, data = recipe_fit(name)
    os.environ["SKLEARN_LVGP_PRECOMPILE"] = "0"
    with event.install_listener("numba:compile", _Listener()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(*data)
    where = locators()
    entries = []
    for dispatcher, args in started:
        codes = [encode_type(a) for a in args]
        if dispatcher in where and None not in codes:
            entries.append(list(where[dispatcher]) + [codes])
        else:
            sys.stderr.write(f"not recorded: {dispatcher.py_func.__qualname__}{args}\n")
    key = plan_key(type(estimator).__name__, getattr(estimator, "kernel", None),
                   getattr(estimator, "expectation", None))
    return key, {"compile_s": round(seconds[0], 1), "entries": entries}


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        sys.stdout.write(json.dumps(_record_in_this_process(sys.argv[2])) + "\n")
        return
    root = Path(__file__).resolve().parents[2]
    plans = {}
    for name in RECIPES:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(root))
            out = subprocess.run([sys.executable, "-m", "sklearn_lvgp.utils._record_compile_plans",
                                  "--child", name], env=env, check=True, stdout=subprocess.PIPE,
                                 text=True)
        key, plan = json.loads(out.stdout.strip().splitlines()[-1])
        plans[key] = plan
        sys.stdout.write(f"{name}: {key}, {len(plan['entries'])} entries, "
                         f"{plan['compile_s']} s of compilation\n")
        sys.stdout.flush()
    write_plans(plans)


def write_plans(plans):
    """Write ``plans`` (plan key -> ``compile_s`` and ``entries``) as
    ``sklearn_lvgp/_compile/plans.py``."""
    target = Path(__file__).resolve().parents[1] / "_compile" / "plans.py"
    target.write_text(
        '"""Compile plans of :mod:`sklearn_lvgp._compile.precompile`, generated by\n'
        "``python -m sklearn_lvgp.utils._record_compile_plans`` (numba "
        f"{numba.__version__}): do not edit.\n\n"
        "Plan key -> ``compile_s``, the seconds the recipe's fit spent compiling when recorded,\n"
        "and ``entries``, the package's jitted functions and argument types it compiled, in the\n"
        "order the fit first used them: ``[module, attribute, value, twin, argument types]``\n"
        '(see :func:`sklearn_lvgp._compile.precompile.resolve`).\n"""\n'
        "# ruff: noqa: E501 (generated: one jitted function per line)\n\n"
        + _plans_source(plans))


def _plans_source(plans):
    """``PLANS = {...}`` as Python source, one plan entry per line. A plan whose entries equal
    another's (an explicit kernel that is the default) is written as that plan's name, and one
    whose entries begin with another's (``GPCDE`` fits a ``SparseGPRegressor`` first) as that
    plan's entries and the rest, after the others."""
    order = sorted(plans, key=lambda k: (len(plans[k]["entries"]), k))
    base_of = {}
    for i, key in enumerate(order):  # shorter plans first: a base precedes what it starts
        entries = plans[key]["entries"]
        prefixes = [k for k in order[:i] if entries[:len(plans[k]["entries"])]
                    == plans[k]["entries"]]
        base_of[key] = max(prefixes, key=lambda k: len(plans[k]["entries"]), default=None)
    lines, derived = ["PLANS = {"], []
    for key in sorted(k for k in plans if base_of[k] is None):
        lines += [f"    {key!r}: {{", f"        'compile_s': {plans[key]['compile_s']!r},",
                  "        'entries': ["]
        lines += [f"            {entry!r}," for entry in plans[key]["entries"]]
        lines += ["        ],", "    },"]
    lines.append("}")
    for key in (k for k in order if base_of[k] is not None):
        base, entries = base_of[key], plans[key]["entries"]
        n_base = len(plans[base]["entries"])
        if n_base == len(entries):
            derived.append(f"PLANS[{key!r}] = PLANS[{base!r}]")
            continue
        derived += [f"PLANS[{key!r}] = {{", f"    'compile_s': {plans[key]['compile_s']!r},",
                    f"    'entries': PLANS[{base!r}]['entries'] + ["]
        derived += [f"        {entry!r}," for entry in entries[n_base:]]
        derived += ["    ],", "}"]
    return "\n".join(lines + derived) + "\n"

if __name__ == "__main__":
    main()
