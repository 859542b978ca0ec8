"""
GPCDE on UCI regression: heteroscedastic noise (Fig. 4.6 protocol of Salimbeni 2020)
====================================================================================

Fig. 4.6 of Salimbeni (2020) compares, on UCI regression sets, a sparse GP with two GP-CDE variants
with a 1-D latent covariate: the "optimal" one (quadrature bound, 100 Gauss–Hermite nodes) and the
amortised one (Gaussian ``q(w)`` from a tanh MLP). Protocol of the thesis (§4.4): 20 random 90/10
splits, standardised inputs, RBF kernels, 100 inducing points, 20,000 iterations, Adam for the
hyperparameters and natural gradients (γ = 0.1) for ``q(u)``. The thesis gives a plot only.

Here: the Hernández-Lobato & Adams splits (``shared/data/uci_hl``). Baseline "GP" is the collapsed
sparse GP :class:`~sklearn_lvgp.SparseGPRegressor` (the optimal ``q(u)`` of the SVGP bound, with
the same M) on inputs standardised with the training statistics, as in the thesis, and on
targets standardised the same way (GPCDE standardises both itself). "GPCDE quadrature" uses
L-BFGS by default (its bound is deterministic) or the thesis's Adam + natural-gradient schedule
(``LVGP_GPCDE_UCI_QUAD_OPT=adam``); "GPCDE amortised" uses Adam + natural gradients with
batch 512. Both GPCDE variants use the default ``init="auto"``: they start from the fitted
switched-off model (the SVGP on ``x``) and keep it if its bound is higher than the trained
model's (see the ``init`` parameter). Test log-likelihood (LL) per point, original units.

Environment knobs (the defaults are the full protocol, far beyond a shared 2-core machine):
``LVGP_GPCDE_UCI_DATASETS`` (comma list, default boston,concrete,energy,yacht,wine_red,power,
kin8nm,naval), ``LVGP_GPCDE_UCI_SPLITS`` (20), ``LVGP_GPCDE_UCI_FIRST_SPLIT`` (0),
``LVGP_GPCDE_UCI_ITERS`` (Adam steps, 20000),
``LVGP_GPCDE_UCI_LBFGS`` (L-BFGS iterations, 1000), ``LVGP_GPCDE_UCI_M`` (100),
``LVGP_GPCDE_UCI_NQUAD`` (100), ``LVGP_GPCDE_UCI_QUAD_OPT`` (lbfgs), ``LVGP_GPCDE_UCI_MODELS``
(GP,GPCDE quadrature,GPCDE amortised), ``LVGP_GPCDE_UCI_TAG`` (output-file suffix),
``LVGP_GPCDE_UCI_UPDATE`` (``1``: rerun only ``MODELS`` and keep the other models' results of
the saved ``gpcde_uci{TAG}.json``, e.g. the GP column alone after a change to the GP).
"""

# %%
# Set-up
# ------
import json
import os
import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_lvgp import GPCDE, SparseGPRegressor
from sklearn_lvgp.datasets import uci_hl_splits

ALL = "boston,concrete,energy,yacht,wine_red,power,kin8nm,naval"
DATASETS = [d for d in os.environ.get("LVGP_GPCDE_UCI_DATASETS", ALL).split(",") if d]
N_SPLITS = int(os.environ.get("LVGP_GPCDE_UCI_SPLITS", 20))
FIRST = int(os.environ.get("LVGP_GPCDE_UCI_FIRST_SPLIT", 0))
N_ITER = int(os.environ.get("LVGP_GPCDE_UCI_ITERS", 20000))
N_LBFGS = int(os.environ.get("LVGP_GPCDE_UCI_LBFGS", 1000))
M = int(os.environ.get("LVGP_GPCDE_UCI_M", 100))
N_QUAD = int(os.environ.get("LVGP_GPCDE_UCI_NQUAD", 100))
QUAD_OPT = os.environ.get("LVGP_GPCDE_UCI_QUAD_OPT", "lbfgs")
MODELS = os.environ.get("LVGP_GPCDE_UCI_MODELS",
                        "GP,GPCDE quadrature,GPCDE amortised").split(",")
TAG = os.environ.get("LVGP_GPCDE_UCI_TAG", "")
OUT = Path(__file__).resolve().parent / "output" if "__file__" in globals() else Path("output")
# the project's pre-filled dataset folder beside the repository if present (CI, offline), else
# the default cache (~/sklearn_lvgp_data or $SKLEARN_LVGP_DATA), downloaded on first use
SHARED = (Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()).parents[1]
SHARED = SHARED / "shared" / "data"
DATA = {"data_home": SHARED, "download_if_missing": False} if SHARED.is_dir() else {}
OUT.mkdir(exist_ok=True)


def make_model(name):
    """One model of the comparison."""
    if name == "GP":
        return make_pipeline(StandardScaler(), SparseGPRegressor(
            n_inducing=M, normalize_y=True, random_state=0))
    if name == "GPCDE quadrature":
        if QUAD_OPT == "lbfgs":
            return GPCDE(n_inducing=M, gh_order=N_QUAD, optimizer="lbfgs",
                         natgrad_gamma=None, max_iter=N_LBFGS, random_state=0)
        return GPCDE(tol=None, n_inducing=M, gh_order=N_QUAD, max_iter=N_ITER, batch_size=512,
                     optimizer="adam", random_state=0)
    return GPCDE(tol=None, gh_order=N_QUAD, q_w="amortized", n_inducing=M, max_iter=N_ITER,
                 batch_size=512, random_state=0)


def mean_log_density(model, X, y):
    """Mean test log density per point, original units (through the GP's input scaler)."""
    if hasattr(model, "steps"):
        X, model = model[:-1].transform(X), model[-1]
    return model.predict_log_density(X, y).mean()


# %%
# Run the protocol
# ----------------
settings = (f"M={M}, H={N_QUAD}, quadrature optimiser {QUAD_OPT} "
            f"({N_LBFGS if QUAD_OPT == 'lbfgs' else N_ITER} its), amortised Adam {N_ITER} its")
results = {}
if os.environ.get("LVGP_GPCDE_UCI_UPDATE", "0") == "1":
    saved = json.loads((OUT / f"gpcde_uci{TAG}.json").read_text())
    if saved["settings"].split(";")[0] != settings:
        raise SystemExit(f"LVGP_GPCDE_UCI_UPDATE=1: the saved run has other settings "
                         f"({saved['settings']}) than this one ({settings}).")
    results = saved["results"]
    settings = f"{settings}; rerun of {', '.join(MODELS)}"
t0 = time.time()
for dataset in DATASETS:
    for split, X_tr, y_tr, X_te, y_te in uci_hl_splits(dataset, FIRST, N_SPLITS, **DATA):
        for name in MODELS:
            t = time.time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model = make_model(name).fit(X_tr, y_tr)
            ll = float(mean_log_density(model, X_te, y_te))
            runs = results.setdefault(dataset, {}).setdefault(name, [])
            runs[:] = [r for r in runs if r["split"] != split]  # a rerun replaces the split
            runs.append({"split": split, "ll": ll, "seconds": time.time() - t,
                         "latent_used": bool(getattr(model, "latent_used_", False))})
            runs.sort(key=lambda r: r["split"])
            print(f"{dataset:9s} split {split:2d} {name:17s} LL {ll: .4f} "
                  f"({time.time() - t:.0f}s, total {time.time() - t0:.0f}s)", flush=True)

# %%
# Table: mean (standard error) over splits, and the paired difference to the GP
# -----------------------------------------------------------------------------
# every model in the results (with LVGP_GPCDE_UCI_UPDATE=1 also those kept from the saved run)
SHOWN = [m for m in ("GP", "GPCDE quadrature", "GPCDE amortised")
         if all(m in res for res in results.values())]
lines = ["| dataset | splits | " + " | ".join(f"{m} LL" for m in SHOWN)
         + " | GPCDE quadrature − GP (paired) | quadrature: latent kept |",
         "|---|---|" + "---|" * (len(SHOWN) + 2)]
for dataset, res in results.items():
    cells = []
    for name in SHOWN:
        v = np.array([r["ll"] for r in res[name]])
        se = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")
        cells.append(f"{v.mean():.3f} ({se:.3f})")
    diff = ""
    if "GP" in res and "GPCDE quadrature" in res:
        d = np.array([a["ll"] - b["ll"] for a, b in zip(res["GPCDE quadrature"], res["GP"],
                                                         strict=True)])
        diff = f"{d.mean():+.3f} (min {d.min():+.3f})"
    kept = (f"{sum(r['latent_used'] for r in res['GPCDE quadrature'])}/"
            f"{len(res['GPCDE quadrature'])}" if "GPCDE quadrature" in res else "")
    lines.append(f"| {dataset} | {len(res[SHOWN[0]])} | " + " | ".join(cells)
                 + f" | {diff} | {kept} |")
table = "\n".join(lines)
print(table)
(OUT / f"gpcde_uci{TAG}.md").write_text(f"Fig. 4.6 protocol ({settings})\n\n{table}\n")
(OUT / f"gpcde_uci{TAG}.json").write_text(json.dumps(
    {"settings": settings, "results": results}, indent=1))

# %%
# Plot: test LL relative to the GP, per split
# -------------------------------------------
fig, ax = plt.subplots(figsize=(1.6 * max(len(results), 2) + 2, 3.5))
for i, res in enumerate(results.values()):
    base = np.array([r["ll"] for r in res.get("GP", res[SHOWN[0]])])
    for j, name in enumerate(n for n in SHOWN if n != "GP"):
        v = np.array([r["ll"] for r in res[name]]) - base
        ax.plot(i + 0.15 * (j - 0.5) + np.zeros_like(v), v, "o", ms=3,
                color=f"C{j}", label=name if i == 0 else None)
ax.axhline(0, color="k", lw=0.8)
ax.set_xticks(range(len(results)), list(results))
ax.set_ylabel("test LL − GP test LL (nats)")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(OUT / f"gpcde_uci{TAG}.png", dpi=110)
