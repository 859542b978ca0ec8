"""GPCDE: held-out log density and fit time with 20 and 100 Gauss-Hermite nodes.

The bimodal conditional-density protocol of Salimbeni (2020, ch. 4): 100 training rows per
region, 500 test rows, M = 50, 1500 Adam + natural-gradient steps (fixed budget, ``tol=None``),
seeds 0-2; a sparse GP regressor and the true density for reference. Evidence for the default
``gh_order=20``.

Run (about 6 minutes on 2 cores)::

    python benchmarks/bench_gpcde_gh_order.py > benchmarks/results/gpcde_gh_order.txt
"""

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ensure_repo_on_path  # noqa: E402

ensure_repo_on_path()

from sklearn_lvgp import GPCDE, SparseGPRegressor  # noqa: E402
from sklearn_lvgp.datasets._conditional import (  # noqa: E402
    bimodal_conditional_log_density,
    make_bimodal_conditional,
)


def main():
    warnings.simplefilter("ignore")
    print("seed  sparse GP  oracle  H=20    H=100   fit s (H=20)  fit s (H=100)")
    for seed in (0, 1, 2):
        X, y = make_bimodal_conditional(100, seed)
        Xt, yt = make_bimodal_conditional(500, 1000 + seed)
        gp = SparseGPRegressor(n_inducing=50, random_state=0).fit(X, y)
        row = [gp.predict_log_density(Xt, yt).mean(),
               bimodal_conditional_log_density(Xt, yt).mean()]
        times = []
        for H in (20, 100):
            t0 = time.perf_counter()
            m = GPCDE(n_inducing=50, gh_order=H, max_iter=1500, tol=None, optimizer="adam",
                      random_state=seed)
            m.fit(X, y)
            times.append(time.perf_counter() - t0)
            row.append(m.predict_log_density(Xt, yt).mean())
        print(f"{seed:4d}  " + "  ".join(f"{v:7.3f}" for v in row)
              + f"  {times[0]:12.1f}  {times[1]:13.1f}", flush=True)


if __name__ == "__main__":
    main()
