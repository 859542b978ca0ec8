"""LDGD benchmarks on oil flow: cost of each mode, iterations needed to reach the target accuracy.

Data: the 1000-point oil flow training file, 800/200 split (``random_state=42``), raw values,
Q = 7, M = 25 per path, ``elbo_weighting="ref-2024-03"`` (the settings of the authors' public
code for Ziaei et al. 2024, Table 3).

``ldgd_oil_step`` — interleaved medians of one objective + gradient evaluation: a Monte Carlo Adam
step (batch 100, one sample) and a full-batch unscented evaluation (800 rows × 2Q sigma points, one
L-BFGS function call), 1 thread.

``ldgd_oil_fit`` — wall time of a whole fit in each mode at the example's budgets (Monte Carlo:
5000 Adam steps; unscented: 500 L-BFGS iterations) and of ``predict`` on the 200 test rows
(2000 test-time steps); single runs.

``ldgd_oil_iterations`` — test accuracy after fits with growing budgets (independent fits from the
same seed; 500 test-time steps); the first budget reaching the target (0.95) is reported. This
is a benchmark of convergence speed, not model selection: the fitted estimators never see the
test labels.

Run standalone (``python benchmarks/bench_ldgd.py [--quick]``) or through ``run.py`` once
registered there.
"""

import argparse
import time
import warnings

import numpy as np
from _common import (
    REPO,
    ensure_repo_on_path,
    fmt_ms,
    interleaved,
    markdown_table,
    summary,
    timed,
    write_json,
)

ensure_repo_on_path()

from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from sklearn_lvgp._core.parallel import threads  # noqa: E402
from sklearn_lvgp.bounds._ldgd_objective import preset_factors  # noqa: E402
from sklearn_lvgp.bounds._ldgd_problem import TrainingProblem  # noqa: E402
from sklearn_lvgp.datasets import fetch_oil_flow  # noqa: E402
from sklearn_lvgp.expectations import unscented_rule  # noqa: E402
from sklearn_lvgp.kernels import RBF  # noqa: E402
from sklearn_lvgp.models._ldgd import LDGD  # noqa: E402

TARGET = 0.95
COMMON = {"n_components": 7, "n_inducing": 25, "elbo_weighting": "ref-2024-03",
          "normalize_X": "none", "random_state": 0}


def _data():
    shared = REPO.parent / "shared" / "data"  # pre-filled (CI); else the cache, downloading
    data = {"data_home": shared, "download_if_missing": False} if shared.is_dir() else {}
    X, y = fetch_oil_flow(subset="train", return_X_y=True, **data)
    return train_test_split(X, y, test_size=0.2, random_state=42)


def run_step(quick=False, repeats=None):
    Xtr, _, ytr, _ = _data()
    N, D, K, Q, M = Xtr.shape[0], Xtr.shape[1], 3, 7, 25
    rs = np.random.RandomState(0)
    k = RBF(length_scale=np.ones(Q)).initialize(Q, rs)
    prob = TrainingProblem(Xtr, np.eye(K)[ytr], k.clone(), k.clone(), M, M, Q,
                           (1.0, 1.0) + preset_factors("ref-2024-03", D, K))
    x = prob.pack({"theta_r": k.theta, "theta_c": k.theta, "Z_r": rs.standard_normal((M, Q)),
                   "Z_c": rs.standard_normal((M, Q)), "qmu_r": np.zeros((M, D)),
                   "qmu_c": np.zeros((M, K)), "qsqrt_r": np.tile(np.eye(M), (D, 1, 1)),
                   "qsqrt_c": np.tile(np.eye(M), (K, 1, 1)), "noise": np.full(D, 0.1),
                   "mu": rs.standard_normal((N, Q)), "sigma": np.full((N, Q), 0.1)})
    ut = unscented_rule(Q)
    batch = rs.choice(N, 100, replace=False)

    def mc_step():
        prob.value_and_grad(x, batch, rs.standard_normal((100, 1, Q)), np.ones(1))

    def ut_eval():
        prob.value_and_grad(x, np.arange(N), ut.nodes, ut.weights)

    n = repeats or (5 if quick else 30)
    with threads(1):
        times = interleaved({"monte_carlo_step_b100": timed(mc_step),
                             "unscented_eval_full": timed(ut_eval)}, n)
    return {name: summary(t) for name, t in times.items()}


def report_step(res):
    rows = [[k, fmt_ms(v), v["n"]] for k, v in res.items()]
    return markdown_table(["evaluation", "ms: median [min-max]", "runs"], rows)


def _fit(mode, max_iter, transform_max_iter, Xtr, ytr, Xte, yte):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        m = LDGD(tol=None, expectation=mode, max_iter=max_iter,
                 transform_max_iter=transform_max_iter, **COMMON).fit(Xtr, ytr)
        t1 = time.perf_counter()
        acc = float(m.score(Xte, yte))
        t2 = time.perf_counter()
    return {"max_iter": max_iter, "n_iter": m.n_iter_, "accuracy": acc, "fit_s": t1 - t0,
            "predict_s": t2 - t1}


def run_fit(quick=False, repeats=None):
    Xtr, Xte, ytr, yte = _data()
    budgets = {"monte_carlo": (500, 200) if quick else (5000, 2000),
               "unscented": (50, 200) if quick else (500, 2000)}
    return {mode: _fit(mode, *b, Xtr, ytr, Xte, yte) for mode, b in budgets.items()}


def report_fit(res):
    rows = [[mode, r["n_iter"], f"{r['fit_s']:.1f}", f"{r['predict_s']:.1f}",
             f"{r['accuracy']:.3f}"] for mode, r in res.items()]
    return markdown_table(["mode", "iterations", "fit (s)", "predict 200 rows (s)",
                           "test accuracy"], rows)


def run_iterations(quick=False, repeats=None):
    Xtr, Xte, ytr, yte = _data()
    grids = {"monte_carlo": [250, 500] if quick else [250, 500, 1000, 2000, 3000],
             "unscented": [10, 25] if quick else [10, 25, 50, 100, 200]}
    out = {}
    for mode, grid in grids.items():
        runs = [_fit(mode, it, 200 if quick else 500, Xtr, ytr, Xte, yte) for it in grid]
        first = next((r["max_iter"] for r in runs if r["accuracy"] >= TARGET), None)
        out[mode] = {"runs": runs, "first_budget_reaching_target": first, "target": TARGET}
    return out


def report_iterations(res):
    rows = []
    for mode, r in res.items():
        for run in r["runs"]:
            rows.append([mode, run["max_iter"], f"{run['accuracy']:.3f}", f"{run['fit_s']:.1f}"])
        rows.append([mode, "first reaching target", r["first_budget_reaching_target"], ""])
    return markdown_table(["mode", "budget", "test accuracy", "fit (s)"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--only", default=None, help="comma-separated subset of step,fit,iters")
    args = parser.parse_args()
    parts = {"step": ("ldgd_oil_step", run_step, report_step),
             "fit": ("ldgd_oil_fit", run_fit, report_fit),
             "iters": ("ldgd_oil_iterations", run_iterations, report_iterations)}
    chosen = args.only.split(",") if args.only else list(parts)
    for key in chosen:
        name, run, report = parts[key]
        res = run(quick=args.quick, repeats=args.repeats)
        write_json(name, res, quick=args.quick)
        print(report(res), "\n", flush=True)


if __name__ == "__main__":
    main()
