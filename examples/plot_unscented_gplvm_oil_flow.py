"""
Oil flow: Bayesian GPLVM with any kernel (Table 1 of de Souza et al., 2021)
===========================================================================

Runs the dimensionality-reduction experiment of the Unscented GPLVM paper on the
three-phase oil flow data: a 5-dimensional latent space is learned with different kernels and
expectation rules, the two most relevant latent dimensions are kept, and their quality is measured
by 5-fold 1-nearest-neighbour accuracy (``KFold(5, shuffle=True, random_state=42)``).

Protocol (de Souza et al. 2021, §4.1.1, with the settings of the authors' public code): the
100-point subset the authors used, raw (unscaled) data, Q = 5, M = 20,
noise 0.01, latent variances 0.1, unwhitened PCA initialisation (``init="pca_unscaled"``),
L-BFGS-B (5000 iterations) for the deterministic rules, Adam (lr 0.01, 5000 steps, 10 runs) for
Monte Carlo. A second table repeats the deterministic rows on the 1000-point training split.

Data come from ``fetch_oil_flow`` (``shared/data`` if present, else the cache); the script stops
with a message when they are absent. Budgets come from the environment: ``LVGP_QUICK=1`` runs a
reduced version (2 Monte Carlo runs, 1000 iterations) in a few minutes; ``LVGP_MAX_ITER``,
``LVGP_MC_RUNS`` and ``LVGP_ROWS`` (e.g. ``"Monte Carlo/200"``; rows whose ``method/#evals``
contains one of the comma-separated strings) override the defaults, and ``LVGP_SKIP_1000=1`` skips
the 1000-point table.

In the committed run (``benchmarks/RESULTS.md``) every deterministic row is within 2 points of the
paper's, but the paper's gap between Monte Carlo and the unscented transform with the Matérn-3/2
kernel is not reproduced: Monte Carlo with 10 and 32 samples scores 97.1 and 97.7 % here against
the paper's 85.6 and 87.9 % (unscented: 98.0 % here, 100.0 % in the paper). The authors' code
keeps the positive parameters behind a softplus, this package behind a logarithm; under Adam
that decides it: with a softplus, the same bound and schedule score 85.3 and 91.0 %
(``benchmarks/seed_oil_mc.py``).
"""

# %%
# Set-up
# ------
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import UnscentedGPLVM
from sklearn_lvgp.datasets import fetch_oil_flow
from sklearn_lvgp.kernels import RBF, Matern32
from sklearn_lvgp.utils.evaluation import knn_accuracy, most_relevant

QUICK = os.environ.get("LVGP_QUICK") == "1"
MAX_ITER = int(os.environ.get("LVGP_MAX_ITER", 1000 if QUICK else 5000))
MC_RUNS = int(os.environ.get("LVGP_MC_RUNS", 2 if QUICK else 10))
ROW_FILTER = [r for r in os.environ.get("LVGP_ROWS", "").split(",") if r]
SKIP_1000 = os.environ.get("LVGP_SKIP_1000") == "1"

# the project's pre-filled dataset folder beside the repository if present (CI, offline), else
# the default cache (~/sklearn_lvgp_data or $SKLEARN_LVGP_DATA), downloaded on first use
SHARED = (Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()).parents[1]
SHARED = SHARED / "shared" / "data"
DATA = {"data_home": SHARED, "download_if_missing": False} if SHARED.is_dir() else {}
try:
    Y, labels = fetch_oil_flow(subset="gplvm100", return_X_y=True, **DATA)
except OSError as exc:
    print(f"Skipping the oil flow example: {exc}")
    sys.exit(0)

# Table 1 of the paper (mean ± std of 1-NN accuracy, %)
PAPER = {
    ("PCA", "-", "-"): (79.0, 6.5),
    ("Analytic", "-", "RBF"): (98.0, 2.7),
    ("Gauss-Hermite", 32, "Matern32"): (95.0, 6.1),
    ("Gauss-Hermite", 32, "RBF"): (98.0, 2.7),
    ("Unscented", 10, "Matern32"): (100.0, 0.0),
    ("Unscented", 10, "RBF"): (98.0, 2.7),
    ("Monte Carlo", 10, "Matern32"): (85.6, 8.7),
    ("Monte Carlo", 10, "RBF"): (98.2, 2.4),
    ("Monte Carlo", 32, "Matern32"): (87.9, 5.4),
    ("Monte Carlo", 32, "RBF"): (98.0, 2.5),
    ("Monte Carlo", 200, "Matern32"): (95.4, 3.0),
    ("Monte Carlo", 200, "RBF"): (97.0, 4.0),
}
KERNELS = {"RBF": lambda: RBF(np.ones(5)), "Matern32": lambda: Matern32(np.ones(5))}


def fit(Y, kernel, expectation, seed=42, n_samples=32):
    """One model with the paper's settings; returns the model and its fit time."""
    model = UnscentedGPLVM(n_components=5, n_inducing=20, kernel=KERNELS[kernel](),
                           expectation=expectation, n_samples=n_samples, init="pca_unscaled",
                           latent_variance_init=0.1, noise_variance_init=0.01, normalize_X="none",
                           max_iter=MAX_ITER, learning_rate=0.01, random_state=seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(Y)
    return model, time.perf_counter() - t0


def evaluate(Y, labels, rows):
    """Run every row; MC rows pool folds over runs that differ only in their sample streams."""
    results = {}
    for method, n_evals, kernel in rows:
        t0 = time.perf_counter()
        if method == "PCA":
            scores = knn_accuracy(PCA(2).fit_transform(Y), labels)
            model = None
        elif method == "Monte Carlo":
            scores = np.concatenate([
                knn_accuracy(most_relevant(fit(Y, kernel, "monte_carlo", seed=run,
                                               n_samples=n_evals)[0]), labels)
                for run in range(MC_RUNS)])
            model = None
        else:
            expectation = {"Analytic": "analytic", "Gauss-Hermite": "gauss_hermite",
                           "Unscented": "unscented"}[method]
            model, _ = fit(Y, kernel, expectation)
            scores = knn_accuracy(most_relevant(model), labels)
        results[(method, n_evals, kernel)] = {
            "mean": 100 * scores.mean(), "std": 100 * scores.std(ddof=1),
            "seconds": time.perf_counter() - t0, "model": model}
        r = results[(method, n_evals, kernel)]
        print(f"{method:14s} {n_evals!s:>4s} {kernel:9s} {r['mean']:6.1f} ± {r['std']:4.1f}  "
              f"({r['seconds']:.1f} s)", flush=True)
    return results


# %%
# Table 1: the 100-point subset
# -----------------------------
rows = [k for k in PAPER if not ROW_FILTER or any(f in f"{k[0]}/{k[1]}" for f in ROW_FILTER)]
table1 = evaluate(Y, labels, rows)

lines = ["| method | # evals | kernel | ours (%) | paper (%) |", "|---|---|---|---|---|"]
for key, r in table1.items():
    p = PAPER[key]
    lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {r['mean']:.1f} ± {r['std']:.1f} | "
                 f"{p[0]:.1f} ± {p[1]:.1f} |")
print("\n".join(lines))

# %%
# The same deterministic rows on the 1000-point training split
# -------------------------------------------------------------
# Not comparable with the paper's numbers (different data), but it shows the method at the size
# the paper's text describes.
Y1000, labels1000 = fetch_oil_flow(subset="train", return_X_y=True, **DATA)
rows1000 = [("PCA", "-", "-"), ("Analytic", "-", "RBF"), ("Unscented", 10, "RBF"),
            ("Unscented", 10, "Matern32"), ("Gauss-Hermite", 32, "Matern32")]
table1000 = {} if SKIP_1000 else evaluate(Y1000, labels1000, rows1000)
lines1000 = ["| method | # evals | kernel | ours (%) | fit (s) |", "|---|---|---|---|---|"]
for key, r in table1000.items():
    lines1000.append(f"| {key[0]} | {key[1]} | {key[2]} | {r['mean']:.1f} ± {r['std']:.1f} | "
                     f"{r['seconds']:.1f} |")
print("\n".join(lines1000))

out = Path(__file__).resolve().parent / "output"
out.mkdir(exist_ok=True)
suffix = ("_quick" if QUICK else "") + ("_" + "_".join(ROW_FILTER).replace(" ", "").replace(
    "/", "") if ROW_FILTER else "")
(out / f"oil_flow_table1{suffix}.md").write_text(
    "Oil flow, 100-point subset (de Souza et al. 2021, Table 1)\n\n" + "\n".join(lines)
    + "\n\nOil flow, 1000-point training split\n\n" + "\n".join(lines1000) + "\n")
(out / f"oil_flow_table1{suffix}.json").write_text(json.dumps(
    {"subset100": {" / ".join(map(str, k)): {kk: vv for kk, vv in v.items() if kk != "model"}
                   for k, v in table1.items()},
     "train1000": {" / ".join(map(str, k)): {kk: vv for kk, vv in v.items() if kk != "model"}
                   for k, v in table1000.items()},
     "max_iter": MAX_ITER, "mc_runs": MC_RUNS}, indent=1))

# %%
# Latent space of the unscented Matérn 3/2 model (cf. Figure 2 of the paper)
# ---------------------------------------------------------------------------
try:
    import matplotlib.pyplot as plt
except ImportError:
    plt = None
if plt is not None and ("Unscented", 10, "Matern32") in table1:
    model = table1[("Unscented", 10, "Matern32")]["model"]
    Z = most_relevant(model)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for cls, marker in zip(range(3), "o^s", strict=True):
        axes[0].scatter(*Z[labels == cls].T, marker=marker, s=25, label=f"class {cls}")
    axes[0].set(title="UT Matérn 3/2: two most relevant latent dims", xlabel="latent a",
                ylabel="latent b")
    axes[0].legend()
    axes[1].bar(np.arange(5), model.relevance_)
    axes[1].set(title="relevance (1 / length scale)", xlabel="latent dimension")
    fig.tight_layout()
    fig.savefig(out / "oil_flow_latent.png", dpi=110)
