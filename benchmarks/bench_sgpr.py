"""``sgpr_fit``: SparseGPRegressor fit + predict against scikit-learn's exact GP and GPy.

Data: a smooth D = 8 function with noise (``make_problem``), N = 2,000 and 20,000 training rows,
2,000 test rows, M = 100 inducing inputs, ARD RBF kernel. Every model starts from the same
hyperparameters (length scales = column standard deviations, variance = var(y), noise =
0.1 var(y)) and, for the sparse ones, the same 100 inducing inputs; each runs L-BFGS-B to its
own convergence test (at most 1000 iterations). Ours runs twice: with its default log
parameterisation of the positive hyperparameters and with ``positive_transform="softplus"``,
GPy's parameterisation (same optima, different L-BFGS-B path: RESULTS.md, ``sgpr_fit``).
Reported: fit and predict seconds, test NLPD (noise included) and RMSE, all measured in the same
run. scikit-learn's ``GaussianProcessRegressor`` is exact (O(N³)) and is run at N = 2,000 only: at
N = 20,000 its kernel-gradient tensor alone (N × N × 10 doubles) would need 32 GB. GPy runs in a
peer interpreter (``LVGP_PEER_PYTHON`` or ``../venv-peers``) and is reported absent when it cannot
be imported. Whole fits are long, so each configuration runs ``repeats`` times (default 3; 1 with
``--quick``) interleaved, and the median is reported.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from _common import REPO, ensure_repo_on_path, markdown_table, summary

ensure_repo_on_path()

M, D, N_TEST, MAX_ITER = 100, 8, 2000, 1000


def make_problem(N, seed=0):
    """Train/test rows of y = Σ_j sin(a_j x_j) + 0.3 x_0 x_1 + noise, x ~ U(-2, 2)^8."""
    r = np.random.default_rng(seed)
    a = np.linspace(0.5, 2.0, D)
    X = r.uniform(-2, 2, (N + N_TEST, D))
    f = np.sin(X * a).sum(axis=1) + 0.3 * X[:, 0] * X[:, 1]
    y = f + 0.3 * r.standard_normal(N + N_TEST)
    Z = X[r.permutation(N)[:M]]
    return X[:N], y[:N], X[N:], y[N:], Z


def _start_values(X, y):
    return np.std(X, axis=0), float(np.var(y)), 0.1 * float(np.var(y))


def _nlpd_rmse(mean, std, y):
    nlpd = float(np.mean(0.5 * np.log(2 * np.pi * std ** 2) + 0.5 * (y - mean) ** 2 / std ** 2))
    return nlpd, float(np.sqrt(np.mean((y - mean) ** 2)))


def fit_ours(prob, n_jobs=1, transform="log", start=None, max_iter=MAX_ITER):
    from sklearn_lvgp import SparseGPRegressor
    from sklearn_lvgp.kernels import RBF

    X, y, Xt, yt, Z = prob
    ls, var, noise = start or _start_values(X, y)
    t0 = time.perf_counter()
    model = SparseGPRegressor(kernel=RBF(length_scale=ls, variance=var), inducing_inputs=Z,
                              noise_variance_init=noise, max_iter=max_iter, n_jobs=n_jobs,
                              positive_transform=transform)
    model.fit(X, y)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    mean, std = model.predict(Xt, return_std=True)
    predict_s = time.perf_counter() - t0
    return {"fit_s": fit_s, "predict_s": predict_s, "n_iter": model.n_iter_,
            "bound": model.elbo_, **dict(zip(
                ("nlpd", "rmse"), _nlpd_rmse(mean, std, yt), strict=True))}


def fit_sklearn(prob):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    X, y, Xt, yt, _ = prob
    ls, var, noise = _start_values(X, y)
    kernel = ConstantKernel(var) * RBF(ls) + WhiteKernel(noise)
    t0 = time.perf_counter()
    model = GaussianProcessRegressor(kernel, normalize_y=False).fit(X, y)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    mean, std = model.predict(Xt, return_std=True)  # WhiteKernel: std includes the noise
    predict_s = time.perf_counter() - t0
    return {"fit_s": fit_s, "predict_s": predict_s,
            "bound": float(model.elbo_), "n_iter": None,
            **dict(zip(("nlpd", "rmse"), _nlpd_rmse(mean, std, yt), strict=True))}


def fit_gpy(prob, path, start=None, max_iter=MAX_ITER):
    from bench_fit import _gpy_env, peer_python

    X, y, Xt, yt, Z = prob
    ls, var, noise = start or _start_values(X, y)
    np.savez(path, X=X, y=y, X_test=Xt, y_test=yt, Z=Z, lengthscale=ls, variance=var,
             noise=noise, max_iter=max_iter)
    worker = REPO / "benchmarks" / "_gpy_sgpr_worker.py"
    try:
        out = subprocess.run([peer_python(), str(worker), path], env=_gpy_env(1),
                             capture_output=True, text=True, timeout=3600, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    for line in out.stdout.splitlines():
        if line.startswith("@@"):
            return json.loads(line[2:])
    return {"error": "worker produced no result: " + out.stderr.strip()[-300:]}


def _timings(runs, ours):
    """Fit and predict summaries of one model's repeats, and its fit time over ours per repeat;
    ``{"error": ...}`` if any repeat failed. Fits are deterministic, so the accuracy numbers of
    the first repeat stand for all."""
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        return {"error": errors[0]}
    fit = np.array([r["fit_s"] for r in runs])
    return {"fit": summary(fit), "predict": summary([r["predict_s"] for r in runs]),
            "fit_ratio_to_ours": summary(fit / np.array([r["fit_s"] for r in ours]))}


def run(quick=False, repeats=None):
    """Fit every configuration ``repeats`` times (interleaved); returns a JSON dict."""
    from threadpoolctl import threadpool_limits

    repeats = repeats or (1 if quick else 3)
    sizes = (500, 2000) if quick else (2000, 20000)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for N in sizes:
            prob = make_problem(N)
            runs = {"sklearn_lvgp": [], "sklearn_lvgp (softplus)": [], "GPy": []}
            if N <= 2000:
                runs["sklearn GPR (exact)"] = []
            for _ in range(repeats):
                runs["sklearn_lvgp"].append(fit_ours(prob))
                runs["sklearn_lvgp (softplus)"].append(fit_ours(prob, transform="softplus"))
                runs["GPy"].append(fit_gpy(prob, os.path.join(tmp, f"p{N}.npz")))
                if "sklearn GPR (exact)" in runs:
                    with threadpool_limits(1):
                        runs["sklearn GPR (exact)"].append(fit_sklearn(prob))
            entry = {}
            for name, rs in runs.items():
                entry[name] = _timings(rs, runs["sklearn_lvgp"])
                if "error" not in entry[name]:
                    entry[name].update({k: rs[0][k] for k in ("nlpd", "rmse", "bound", "n_iter")})
            results[str(N)] = entry
    return {"problem": {"D": D, "M": M, "N_test": N_TEST, "max_iter": MAX_ITER},
            "repeats": repeats, "threads": 1, "results": results, "python": sys.executable}


def report(res):
    """Markdown table of a :func:`run` result."""
    p = res["problem"]
    head = (f"### sgpr_fit — fit + predict, D={p['D']}, M={p['M']}, {p['N_test']} test rows, "
            f"1 thread, {res['repeats']} interleaved repeat(s)\n\n")
    rows = []
    for N, entry in res["results"].items():
        for name, e in entry.items():
            if "error" in e:
                rows.append([N, name, "not run: " + e["error"][:80], "", "", "", "", ""])
                continue
            f = e["fit"]
            rows.append([N, name, f"{f['median']:.3g} [{f['min']:.3g}–{f['max']:.3g}]",
                         f"{e['fit_ratio_to_ours']['median']:.3g}×",
                         f"{e['predict']['median'] * 1e3:.3g}", f"{e['nlpd']:.4f}",
                         f"{e['rmse']:.4f}", e["n_iter"] if e["n_iter"] is not None else "—"])
        if "sklearn GPR (exact)" not in entry:
            rows.append([N, "sklearn GPR (exact)", "not run: O(N³); the N×N×10 gradient tensor "
                         "needs 32 GB", "", "", "", "", ""])
    return head + markdown_table(
        ["N", "model", "fit s: median [min–max]", "fit ÷ ours", "predict ms", "test NLPD",
         "test RMSE", "iterations"], rows)


# ------------------------------------------------------------------ kin8nm, the notebook's SGPR
#: The 2017 reference notebook's collapsed SGP (GPflow ``SGPR``, L-BFGS, ``maxiter=5000``) on its
#: kin8nm split: negative bound at its stop, and test log-likelihood in original units.
NOTEBOOK_SGPR = {"neg_bound": 4570.071133, "ll": 0.9741}
KIN8NM_MAX_ITER = 5000


def kin8nm_notebook_problem():
    """kin8nm prepared as the 2017 reference notebook did, or ``None`` without the data.

    Split: ``RandomState(0)`` shuffle, first 7372 rows train (``uci_hl_splits(...,
    scheme="shuffle")`` split 0). Scaling: the reference ``datasets.py``'s, training mean and *test*
    standard deviation (+1e-6) for X and y (a bug: the thesis standardises with training statistics,
    Salimbeni 2020, §2.4; kept here because the notebook's bound is on that scale). Start: 100
    inducing inputs by ``kmeans2`` on the scaled training inputs, unit length scales and variance,
    noise variance 0.01.

    Returns
    -------
    (prob, start, y_scale) or None
        ``prob`` as :func:`make_problem` returns it (scaled units), ``start`` the
        (length scales, variance, noise) triple and ``y_scale`` the test standard deviation that
        maps test densities back to original units.
    """
    from scipy.cluster.vq import kmeans2

    from sklearn_lvgp.datasets import uci_hl_splits

    shared = REPO.parent / "shared" / "data"  # pre-filled (CI); else the cache, downloading
    data = {"data_home": shared, "download_if_missing": False} if shared.is_dir() else {}
    try:
        _, X, y, Xt, yt = next(uci_hl_splits("kin8nm", 0, 1, scheme="shuffle", **data))
    except OSError:
        return None
    mx, sx = X.mean(axis=0), Xt.std(axis=0) + 1e-6
    my, sy = y.mean(), yt.std() + 1e-6
    Xs, Xts = (X - mx) / sx, (Xt - mx) / sx
    Z = kmeans2(Xs, 100, minit="points", seed=np.random.default_rng(0))[0]
    prob = (Xs, (y - my) / sy, Xts, (yt - my) / sy, Z)
    return prob, (np.ones(X.shape[1]), 1.0, 0.01), float(sy)


def run_kin8nm(quick=False, repeats=None):
    """Collapsed SGP on the notebook's kin8nm split: ours (log and softplus) and GPy."""
    found = kin8nm_notebook_problem()
    if found is None:
        return {"error": "uci_hl/kin8nm.csv.gz not available (../shared/data, cache, download)",
                "results": {}}
    prob, start, y_scale = found
    max_iter = 200 if quick else KIN8NM_MAX_ITER
    repeats = repeats or 1
    runs = {"sklearn_lvgp": [], "sklearn_lvgp (softplus)": [], "GPy": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            runs["sklearn_lvgp"].append(fit_ours(prob, start=start, max_iter=max_iter))
            runs["sklearn_lvgp (softplus)"].append(
                fit_ours(prob, transform="softplus", start=start, max_iter=max_iter))
            runs["GPy"].append(fit_gpy(prob, os.path.join(tmp, "kin8nm.npz"), start=start,
                                       max_iter=max_iter))
    results = {}
    for name, rs in runs.items():
        results[name] = _timings(rs, runs["sklearn_lvgp"])
        if "error" not in results[name]:
            first = rs[0]
            results[name].update({
                "neg_bound": -first["bound"], "n_iter": first["n_iter"],
                "rmse": first["rmse"] * y_scale,
                # NLPD in scaled units -> log density of y in original units
                "ll": -first["nlpd"] - float(np.log(y_scale))})
    return {"problem": {"N": len(prob[0]), "N_test": len(prob[2]), "M": len(prob[4]),
                        "max_iter": max_iter}, "notebook": NOTEBOOK_SGPR, "repeats": repeats,
            "threads": 1, "results": results, "python": sys.executable}


def report_kin8nm(res):
    """Markdown table of a :func:`run_kin8nm` result."""
    if "error" in res:
        return f"### sgpr_kin8nm — not run: {res['error']}\n"
    p = res["problem"]
    head = (f"### sgpr_kin8nm — collapsed SGP on the 2017 notebook's kin8nm split "
            f"(N = {p['N']}, {p['N_test']} test rows, M = {p['M']}, L-BFGS-B ≤ "
            f"{p['max_iter']} iterations, 1 thread, {res['repeats']} repeat(s))\n\n")
    nb = res["notebook"]
    rows = [["notebook (GPflow SGPR, printed)", f"{nb['neg_bound']:.1f}", f"{nb['ll']:.4f}", "",
             "", ""]]
    for name, e in res["results"].items():
        if "error" in e:
            rows.append([name, "not run: " + e["error"][:80], "", "", "", ""])
            continue
        rows.append([name, f"{e['neg_bound']:.1f}", f"{e['ll']:.4f}", f"{e['rmse']:.4f}",
                     f"{e['fit']['median']:.3g} ({e['fit_ratio_to_ours']['median']:.3g}×)",
                     e["n_iter"]])
    return head + markdown_table(
        ["model", "negative bound (scaled units)", "test LL (original units)", "test RMSE",
         "fit s (÷ ours)", "iterations"], rows)
