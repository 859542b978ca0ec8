"""
Natural gradients on kin8nm: the reference notebook's sequence of runs
======================================================================

The 2018 reference notebook of the doubly-stochastic DGP (``demo_regression_UCI.ipynb``, kin8nm)
reports, for natural-gradient steps (γ = 0.1) on the last layer's ``q(u)`` alternating with Adam
(0.01) on everything else, a test log-likelihood of 1.284 for DGP 2 "after 100 iterations". Our
reproduction protocol turned this into the target "DGP 2 ≥ 1.25 after 100 iterations".

Read in order, the notebook's cells reuse **the same model objects**: each model is first trained
with Adam alone for 100 steps, then for 5000 more, and only then does the natural-gradient cell
run its "100 iterations" and "5000 iterations" on those already trained models. This example
replays that sequence with ``warm_start`` (settings of the notebook's cells: unwhitened
``q(u)``, 5 samples per point in training, minibatch 1000, Adam 0.01, RBF-ARD, 100 inducing
points, inner ``q_sqrt`` × 1e-5, likelihood variance starting at 1: the cells build
``Gaussian()`` without setting it, and 1 is GPflow's default), and, as a control, runs natural
gradients on a **fresh** model for 100 steps.

Differences from the notebook: ``warm_start`` keeps Adam's moment estimates between calls (the
notebook builds a new Adam optimiser per cell); no ``White(1e-5)`` term is added to the inner
kernels; inputs and targets are standardised with training-set statistics (the notebook's
``datasets.py`` divides by the test set's standard deviation).

The split is the notebook's: its ``datasets.py`` shuffles the rows with ``RandomState(0)`` and
trains on the first 7372 (it prints "N: 7372, Ns: 820"), which is
``uci_hl_splits("kin8nm", scheme="shuffle")`` split 0, not the published Hernández-Lobato &
Adams split 0 (7373 / 819 rows).

Environment knobs: ``LVGP_NG_DEPTHS`` (comma-separated, default ``1,2,3``),
``LVGP_NG_LONG`` (the "many" iteration count, default 5000), ``LVGP_NG_SCHEME`` (``shuffle``,
the notebook's split, or ``published``), ``LVGP_NG_TAG`` (output suffix).
"""

# %%
# Set-up
# ------
import json
import os
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from sklearn_lvgp import DeepGP
from sklearn_lvgp.datasets import uci_hl_splits

DEPTHS = [int(d) for d in os.environ.get("LVGP_NG_DEPTHS", "1,2,3").split(",") if d]
FEW, MANY = 100, int(os.environ.get("LVGP_NG_LONG", 5000))
SCHEME = os.environ.get("LVGP_NG_SCHEME", "shuffle")
TAG = os.environ.get("LVGP_NG_TAG", "")
OUT = Path(__file__).resolve().parent / "output" if "__file__" in globals() else Path("output")
# the project's pre-filled dataset folder beside the repository if present (CI, offline), else
# the default cache (~/sklearn_lvgp_data or $SKLEARN_LVGP_DATA), downloaded on first use
SHARED = (Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()).parents[1]
SHARED = SHARED / "shared" / "data"
DATA = {"data_home": SHARED, "download_if_missing": False} if SHARED.is_dir() else {}
OUT.mkdir(exist_ok=True)
#: The notebook's printed test log-likelihoods (kin8nm, its split, original units).
NOTEBOOK = {
    "adam 100": {1: 0.2778, 2: 0.2394, 3: 0.2165},
    "adam +5000": {1: 0.9434, 2: 1.2913, 3: 1.3039},
    "natgrad +100": {1: 0.9487, 2: 1.2837, 3: 1.2958},
    "natgrad +5000": {1: 0.9549, 2: 1.2915, 3: 1.3147},
}

_, Xtr, ytr, Xte, yte = next(uci_hl_splits("kin8nm", 0, 1, scheme=SCHEME, **DATA))
print(f"kin8nm split 0 ({SCHEME}): N: {len(Xtr)}, Ns: {len(Xte)}")


def make_model(depth, gamma=None):
    """DeepGP with the settings of the notebook's DGP cells."""
    return DeepGP(tol=None, n_layers=depth, n_inducing=100, whiten=False, noise_variance_init=1.0,
                  n_samples=5, n_predict_samples=100, batch_size=1000, learning_rate=0.01,
                  natgrad_gamma=gamma, warm_start=True, inner_layer_init="collapsed",
                  random_state=0)


def evaluate(model):
    ll = float(model.predict_log_density(Xte, yte).mean())
    rmse = float(np.sqrt(np.mean((model.predict(Xte) - yte) ** 2)))
    return ll, rmse


# %%
# The notebook's sequence: Adam 100, Adam +5000, then natural gradients +100 and +5000
# ------------------------------------------------------------------------------------
phases = [("adam 100", None, FEW), (f"adam +{MANY}", None, MANY),
          ("natgrad +100", 0.1, FEW), (f"natgrad +{MANY}", 0.1, MANY)]
results = {}
t0 = time.time()
for depth in DEPTHS:
    model = make_model(depth)
    for phase, gamma, n_iter in phases:
        t = time.time()
        model.set_params(natgrad_gamma=gamma, max_iter=n_iter).fit(Xtr, ytr)
        ll, rmse = evaluate(model)
        results.setdefault(phase, {})[depth] = {"ll": ll, "rmse": rmse,
                                                "iterations": int(model.n_iter_),
                                                "seconds": time.time() - t}
        print(f"DGP {depth} {phase:14s} (total {model.n_iter_:5d} it) LL {ll: .4f} "
              f"RMSE {rmse:.4f}  ({time.time() - t:.0f}s, total {time.time() - t0:.0f}s)",
              flush=True)

# %%
# Control: natural gradients on a fresh model, 100 iterations
# -----------------------------------------------------------
for depth in DEPTHS:
    t = time.time()
    model = make_model(depth, gamma=0.1).set_params(max_iter=FEW).fit(Xtr, ytr)
    ll, rmse = evaluate(model)
    results.setdefault("fresh natgrad 100", {})[depth] = {"ll": ll, "rmse": rmse,
                                                          "iterations": FEW,
                                                          "seconds": time.time() - t}
    print(f"DGP {depth} fresh natgrad 100  LL {ll: .4f} RMSE {rmse:.4f}", flush=True)

# %%
# Table next to the notebook's numbers
# ------------------------------------
lines = ["| phase (same model, in order) | " + " | ".join(
    f"DGP {d} LL (notebook)" for d in DEPTHS) + " |", "|---|" + "---|" * len(DEPTHS)]
for phase, per in results.items():
    ref = NOTEBOOK.get(phase.replace(f"+{MANY}", "+5000"), {})
    cells = [f"{per[d]['ll']:.3f} ({ref[d]:.3f})" if d in ref else f"{per[d]['ll']:.3f} (—)"
             for d in DEPTHS]
    lines.append(f"| {phase} | " + " | ".join(cells) + " |")
table = "\n".join(lines)
print(table)
(OUT / f"deep_gp_natgrad_kin8nm{TAG}.md").write_text(
    f"kin8nm split 0 ({SCHEME}), the notebook's sequence of runs (DGP 1 = SGP)\n\n" + table + "\n")
(OUT / f"deep_gp_natgrad_kin8nm{TAG}.json").write_text(json.dumps(results, indent=1))

# %%
# Figure: test log-likelihood after each phase
# --------------------------------------------
fig, ax = plt.subplots(figsize=(6, 3.4))
names = list(results)
for i, depth in enumerate(DEPTHS):
    ax.plot(range(len(names)), [results[p][depth]["ll"] for p in names], "o-", color=f"C{i}",
            label=f"DGP {depth}")
    ref = [NOTEBOOK.get(p.replace(f"+{MANY}", "+5000"), {}).get(depth, np.nan) for p in names]
    ax.plot(range(len(names)), ref, "x", color=f"C{i}")
ax.set_xticks(range(len(names)), names, rotation=20, fontsize=8)
ax.set_ylabel("test log-likelihood")
ax.set_title(f"kin8nm split 0, {SCHEME} (x: notebook)")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(OUT / f"deep_gp_natgrad_kin8nm{TAG}.png", dpi=110)
