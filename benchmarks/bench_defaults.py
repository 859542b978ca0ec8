"""Every estimator with its defaults on ``load_diabetes`` (442 rows, 10 features).

A user's first fit: ``Estimator(random_state=0).fit(X, y)`` with nothing tuned. Reports the
fit time (numba compilation excluded: each estimator first fits a tiny problem), the
iterations run against ``max_iter`` (a default fit should stop when its bound stops
improving, not at the budget) and the bound. Target: under 60 s per estimator on a 2-core
machine.

Run::

    python benchmarks/bench_defaults.py --out benchmarks/results/defaults.json
"""

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_diabetes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ensure_repo_on_path  # noqa: E402

ensure_repo_on_path()

from sklearn_lvgp import DVMGP, GPCDE, LDGD, DeepGP, SparseGPRegressor, UnscentedGPLVM  # noqa: E402

ESTIMATORS = (SparseGPRegressor, UnscentedGPLVM, LDGD, DeepGP, GPCDE, DVMGP)


def _data(cls, X, y):
    if cls is UnscentedGPLVM:
        return (X,)
    if cls is LDGD:
        return X, (y > np.median(y)).astype(int)
    return X, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="JSON file for the results")
    args = parser.parse_args()
    X, y = load_diabetes(return_X_y=True)
    rng = np.random.default_rng(0)
    rows = []
    for cls in ESTIMATORS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            small = rng.permutation(X.shape[0])[:40]
            tiny = cls(random_state=0, max_iter=2)
            if "n_inducing" in tiny.get_params():
                tiny.set_params(n_inducing=10)
            if "n_inducing_projection" in tiny.get_params():
                tiny.set_params(n_inducing_projection=5)
            tiny.fit(*_data(cls, X[small], y[small]))  # compile
            t0 = time.perf_counter()
            model = cls(random_state=0).fit(*_data(cls, X, y))
            seconds = time.perf_counter() - t0
        row = {"estimator": cls.__name__, "fit_s": round(seconds, 2),
               "n_iter": int(model.n_iter_), "max_iter": int(model.max_iter),
               "elbo": round(float(model.elbo_), 3)}
        rows.append(row)
        print(f"{row['estimator']:18s} {row['fit_s']:8.2f} s  {row['n_iter']:6d} / "
              f"{row['max_iter']:6d} iterations  ELBO {row['elbo']:.3f}", flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"machine": platform.processor() or platform.machine(),
                       "cores": __import__("os").cpu_count(), "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
