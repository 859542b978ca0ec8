"""Cold start: the first fit of each estimator in a fresh environment (empty numba cache).

Each estimator runs in its own new Python process whose ``NUMBA_CACHE_DIR`` is an empty
folder, so every jitted function it needs is compiled during the measured fit, as after a
fresh ``pip install``. The child reports

* ``import_s``: ``import sklearn_lvgp``;
* ``first_fit_s``: the first ``fit`` (compilation included) on 200 rows of ``load_diabetes``
  (``load_digits`` for the transformers) with the estimator's defaults but ``max_iter=20``;
* ``second_fit_s``: the same fit again (compiled code only), so ``first - second`` is the
  compile cost;
* ``compiled``: jitted functions compiled by the fitting process and their signatures, from
  numba's ``numba:compile`` events;
* ``cached_first_fit_s``: the first fit in a *second* fresh process that shares the now
  filled cache (what every later session of the user costs).

Each cold fit is measured twice per repeat, alternating: as a user gets it (a helper process
compiles the fit's plan from its end while the fit compiles from its start,
``sklearn_lvgp._compile.precompile``) and with the helper switched off
(``SKLEARN_LVGP_PRECOMPILE=0``: every kernel compiled by the fitting process, one after
another), each with its own empty cache. The table gives the median over the repeats.

Besides each estimator's defaults, ``UnscentedGPLVM`` is also measured with an ARD Matérn-3/2
kernel (the unscented-transform path, the point of de Souza et al. 2021).

Target: ``first_fit_s`` ≤ 8 s for every estimator on the 2-core reference machine.

Run::

    python benchmarks/bench_cold_start.py --out benchmarks/results/cold_start.json
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ESTIMATORS = ("UnscentedGPLVM", "LDGD", "DVMGP", "DeepGP", "GPCDE", "SparseGPRegressor")
#: Further configurations: row label -> (estimator, keyword arguments as Python source).
CONFIGS = {"UnscentedGPLVM, Matern32 (unscented)":
           ("UnscentedGPLVM", "dict(kernel=Matern32(length_scale=np.ones(2)))")}

_CHILD = r"""
import json, sys, time, warnings
t0 = time.perf_counter()
import sklearn_lvgp
import_s = time.perf_counter() - t0
from numba.core import event
import numpy as np
from sklearn.datasets import load_diabetes, load_digits

name = sys.argv[1]
from sklearn_lvgp.kernels import Matern32
extra = eval(sys.argv[2])
cls = getattr(sklearn_lvgp, name)
if name in ("UnscentedGPLVM", "LDGD"):
    X, y = load_digits(return_X_y=True)
    X, y = X[:200], y[:200]
    data = (X,) if name == "UnscentedGPLVM" else (X, y)
else:
    X, y = load_diabetes(return_X_y=True)
    data = (X[:200], y[:200])

compiled = []

class Listener(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        compiled.append(str(ev.data["dispatcher"].py_func.__qualname__))

listener = Listener()
event.register("numba:compile", listener)


def fit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        cls(random_state=0, max_iter=20, **extra).fit(*data)
        return time.perf_counter() - t


first = fit()
n_first = len(compiled)
second = fit()
print(json.dumps({"import_s": import_s, "first_fit_s": first, "second_fit_s": second,
                  "n_compiled": n_first, "functions": sorted(set(compiled)),
                  "compiled": compiled}))
"""


def _run_child(name, extra, cache_dir, repo, helper=True):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(repo),
               OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"),
               SKLEARN_LVGP_PRECOMPILE="1" if helper else "0")
    out = subprocess.run([sys.executable, "-c", _CHILD, name, extra], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="JSON file for the results")
    parser.add_argument("--only", action="append",
                        help="estimator name or configuration label (repeatable)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="cold fits per configuration and mode (default 3)")
    args = parser.parse_args()
    repo = Path(__file__).resolve().parent.parent
    rows = []
    runs = {name: (name, "{}") for name in ESTIMATORS} | CONFIGS
    print(f"{'estimator':38s} {'import':>7s} {'first fit':>10s} {'no helper':>10s} "
          f"{'second':>8s} {'compiled':>9s} {'no helper':>10s} {'cached first':>13s}")
    for label in args.only or runs:
        name, extra = runs[label]
        cold, alone, warm = [], [], []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as cache:
                alone.append(_run_child(name, extra, cache, repo, helper=False))
            with tempfile.TemporaryDirectory() as cache:
                cold.append(_run_child(name, extra, cache, repo))
                warm.append(_run_child(name, extra, cache, repo))

        def med(runs, key):
            return round(float(np.median([r[key] for r in runs])), 2)

        row = {"estimator": label, "import_s": med(cold, "import_s"),
               "first_fit_s": med(cold, "first_fit_s"),
               "first_fit_runs_s": [round(r["first_fit_s"], 2) for r in cold],
               "first_fit_no_helper_s": med(alone, "first_fit_s"),
               "first_fit_no_helper_runs_s": [round(r["first_fit_s"], 2) for r in alone],
               "second_fit_s": med(cold, "second_fit_s"),
               "n_compiled": int(np.median([r["n_compiled"] for r in cold])),
               "n_compiled_no_helper": int(np.median([r["n_compiled"] for r in alone])),
               "cached_first_fit_s": med(warm, "first_fit_s"),
               "compiled": cold[0]["compiled"]}
        rows.append(row)
        print(f"{label:38s} {row['import_s']:7.2f} {row['first_fit_s']:10.2f} "
              f"{row['first_fit_no_helper_s']:10.2f} {row['second_fit_s']:8.2f} "
              f"{row['n_compiled']:9d} {row['n_compiled_no_helper']:10d} "
              f"{row['cached_first_fit_s']:13.2f}", flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"python": sys.version.split()[0], "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
