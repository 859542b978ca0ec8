"""
Single-layer GP column of Table 5.1 (Salimbeni 2020, ch. 5, KDE test log-likelihood)
====================================================================================

Table 5.1 of the thesis (Salimbeni 2020, §5.3.2; Salimbeni et al. 2019) reports the test
log-likelihood of GP, deep GP and latent-variable deep GP models on UCI data sets. This example
runs the protocol of its first column, the single-layer sparse variational GP ("GP", ``DeepGP`` with
``n_layers=1``), on six of its data sets:

========  =====  ====  ========================
data set  N      D     thesis c1, mean (s.e.)
========  =====  ====  ========================
kin8nm    8192   8     −0.29 (0.00)
energy    768    8     1.71 (0.00)
concrete  1030   8     −0.43 (0.00)
boston    506    13    0.02 (0.00)
wine_red  1599   11    −1.09 (0.00)
yacht     308    6     1.32 (0.02)
========  =====  ====  ========================

Protocol (Salimbeni 2020, §5.3.2, with the details of the authors' public IWVI code,
``DGPs_with_IWVI``):

* inputs **and targets** z-scored with **full-data** statistics (``bayesian_benchmarks``:
  ``(v - mean) / (std + 1e-6)``), and the log-likelihood is reported in these standardised
  units (not undone);
* 90/10 splits; **departure**: ``bayesian_benchmarks`` shuffles with ``np.random.seed(split)``
  over the raw UCI rows, which is not available offline with certainty, so the default uses the
  published Hernández-Lobato & Adams splits 0–4 of ``shared/data/uci_hl``
  (``LVGP_T51_SCHEME=bb`` applies the ``bayesian_benchmarks`` shuffle to the ``uci_hl`` rows,
  which reproduces its splits only if the row order is the UCI one — unverified);
* M = 128 inducing points (k-means of the training inputs), ARD RBF with length scales
  ``sqrt(D)`` and variance 1 (both trained), likelihood variance 0.01, whitened ``q(u)``;
* the last (only) layer's ``q(u)`` by natural-gradient steps, everything else by Adam, both
  rates × 0.98 every 1000 steps (``learning_rate_schedule="staircase"``);
* evaluation on the first ≤ 10,000 test points: 2000 samples of ``y`` per point
  (``f ~ N(mu, v)`` plus noise) and a Gaussian KDE with Silverman's bandwidth
  (``DeepGP.predict_log_density(method="kde")``); the exact log predictive density
  (``method="mixture"``, here one Gaussian per point) is reported next to it.

The thesis optimises for **100,000 steps** with minibatch 512, Adam 5e-3 and NGD γ = 0.01
(``LVGP_T51_PROTOCOL=thesis``). That takes ~35 min per split here (about 20 ms per step with M = 128
on a shared 2-core machine), so the default is a **reduced budget** (``LVGP_T51_PROTOCOL=reduced``):
full batch with NGD γ = 1 (the exact optimum of ``q(u)`` for the current hyperparameters, Salimbeni
2020, §3.4.1) and Adam 0.01 for the data sets with at most 2000 training rows; minibatch 512 with
γ = 0.1 for kin8nm; ``LVGP_T51_ITERS`` steps (default 3000). Convergence of the reduced budget is
checked against a run three times longer on split 0 (``LVGP_T51_DATASETS=boston,yacht
LVGP_T51_SPLITS=1 LVGP_T51_ITERS=9000 LVGP_T51_TAG=_conv9000``, output
``deep_gp_table51_conv9000.md``).

Note on the KDE protocol: with 2000 samples the KDE has no mass beyond the sample range, so a test
point a few predictive standard deviations away gets a log density far below the Gaussian's
(the kernel's tail, width ``0.23 s``, instead of the predictive's); one such point can lower a
split's mean by ~1 (energy split 1 here). The mixture column has no such effect.

Note on yacht: ``bayesian_benchmarks`` reads the raw UCI file ``yacht_hydrodynamics.data`` with
``pandas.read_fwf``, which takes column extents from the first 100 lines. The file is separated
by single spaces, not aligned: its first column is ``-2.3`` in those lines but ``0.0`` in 56 later
ones, which are therefore cut one character off: ``4.77`` is read as ``0.77``, a resistance of
``14.93`` as ``4.93`` and ``9.07`` as ``0.07`` (3 inputs of 56 rows and 40 targets change).
``LVGP_T51_YACHT=bb_fwf`` rebuilds that reading offline: the ``uci_hl`` rows (UCI order) printed
in the raw file's number formats, column extents inferred from the first 100 lines as
``read_fwf`` does, each field read from its extent. On data read that way the KDE still scores
0.534 (0.051) over five seeds on ``bayesian_benchmarks`` split 0 against the thesis's 1.32; only
the mixture column comes near it (1.334), so yacht is not reproduced by this protocol
(``benchmarks/RESULTS.md``).

Environment knobs:

* ``LVGP_T51_DATASETS`` — comma-separated names (default the six above);
* ``LVGP_T51_SPLITS`` — number of splits, optionally with per-data-set overrides, e.g.
  ``5,kin8nm=2`` (default 5);
* ``LVGP_T51_ITERS`` — optimiser steps (reduced default 3000; thesis 100,000);
* ``LVGP_T51_PROTOCOL`` — ``reduced`` (default) or ``thesis``;
* ``LVGP_T51_LR``, ``LVGP_T51_GAMMA``, ``LVGP_T51_BATCH`` — override Adam's rate, the NGD γ
  and the minibatch of every data set (``BATCH=0``: full batch);
* ``LVGP_T51_SCHEME`` — ``hl`` (default) or ``bb`` splits (see above);
* ``LVGP_T51_KDE`` — samples per test point (default 2000);
* ``LVGP_T51_REPEATS`` — fits per split with different seeds (default 1; the stored IWVI script
  runs its five repeats on ``bayesian_benchmarks`` split 0);
* ``LVGP_T51_YACHT`` — ``clean`` (default) or ``bb_fwf``: yacht as ``bayesian_benchmarks`` reads
  it (see the note on yacht below);
* ``LVGP_T51_JOBS`` — (data set, split) runs in parallel processes (default 1);
* ``LVGP_T51_TAG`` — suffix of the output files.
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
from joblib import Parallel, delayed

from sklearn_lvgp import DeepGP
from sklearn_lvgp.datasets import load_uci_hl, shuffle_test_mask
from sklearn_lvgp.kernels import RBF

#: Table 5.1, column 1 (GP): mean (standard error) over 5 splits, standardised units.
THESIS_C1 = {"kin8nm": (-0.29, 0.00), "energy": (1.71, 0.00), "concrete": (-0.43, 0.00),
             "boston": (0.02, 0.00), "wine_red": (-1.09, 0.00), "yacht": (1.32, 0.02)}
DATASETS = [d for d in os.environ.get("LVGP_T51_DATASETS", ",".join(THESIS_C1)).split(",") if d]
PROTOCOL = os.environ.get("LVGP_T51_PROTOCOL", "reduced")
SCHEME = os.environ.get("LVGP_T51_SCHEME", "hl")
N_KDE = int(os.environ.get("LVGP_T51_KDE", 2000))
REPEATS = int(os.environ.get("LVGP_T51_REPEATS", 1))
YACHT = os.environ.get("LVGP_T51_YACHT", "clean")
for knob, value, allowed in (("LVGP_T51_SCHEME", SCHEME, ("hl", "bb")),
                             ("LVGP_T51_YACHT", YACHT, ("clean", "bb_fwf")),
                             ("LVGP_T51_PROTOCOL", PROTOCOL, ("reduced", "thesis"))):
    if value not in allowed:
        raise ValueError(f"{knob} must be one of {allowed}, got {value!r}.")
if REPEATS < 1:
    raise ValueError(f"LVGP_T51_REPEATS must be at least 1, got {REPEATS}.")
TAG = os.environ.get("LVGP_T51_TAG", "")
N_JOBS = int(os.environ.get("LVGP_T51_JOBS", 1))
OUT = Path(__file__).resolve().parent / "output" if "__file__" in globals() else Path("output")
# the project's pre-filled dataset folder beside the repository if present (CI, offline), else
# the default cache (~/sklearn_lvgp_data or $SKLEARN_LVGP_DATA), downloaded on first use
SHARED = (Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()).parents[1]
SHARED = SHARED / "shared" / "data"
DATA = {"data_home": SHARED, "download_if_missing": False} if SHARED.is_dir() else {}
OUT.mkdir(exist_ok=True)
#: Training sets up to this size use the full batch in the reduced protocol.
FULL_BATCH_MAX = 2000


def parse_splits(text):
    """``"5,kin8nm=2"`` -> (5, {"kin8nm": 2})."""
    default, per = 5, {}
    for part in (p for p in text.split(",") if p):
        if "=" in part:
            k, v = part.split("=")
            per[k] = int(v)
        else:
            default = int(part)
    return default, per


SPLITS_DEFAULT, SPLITS_PER = parse_splits(os.environ.get("LVGP_T51_SPLITS", "5"))


def settings_for(n_train):
    """Optimiser settings of one run: the thesis's, or the reduced budget (module docstring)."""
    if PROTOCOL == "thesis":
        s = {"max_iter": 100_000, "learning_rate": 5e-3, "natgrad_gamma": 0.01, "batch": 512}
    else:
        full = n_train <= FULL_BATCH_MAX
        s = {"max_iter": 3000, "learning_rate": 0.01, "natgrad_gamma": 1.0 if full else 0.1,
             "batch": 0 if full else 512}
    env = {"max_iter": ("LVGP_T51_ITERS", int), "learning_rate": ("LVGP_T51_LR", float),
           "natgrad_gamma": ("LVGP_T51_GAMMA", float), "batch": ("LVGP_T51_BATCH", int)}
    for key, (var, cast) in env.items():
        if os.environ.get(var):
            s[key] = cast(os.environ[var])
    return s


def standardise_full(A):
    """``bayesian_benchmarks.data.normalize``: full-data mean and ``std + 1e-6``."""
    return (A - A.mean(axis=0)) / (A.std(axis=0) + 1e-6)


#: Number formats of the columns of the raw UCI ``yacht_hydrodynamics.data`` (inputs, target).
YACHT_UCI_FORMATS = ("{:.1f}", "{:.3f}", "{:.2f}", "{:.2f}", "{:.2f}", "{:.3f}", "{:.2f}")


def fixed_width_extents(lines, n_infer=100):
    """Column extents ``[(start, stop), ...]`` as ``pandas.read_fwf`` infers them: maximal runs
    of character positions that are not blank in at least one of the first ``n_infer`` lines."""
    width = max(len(line) for line in lines[:n_infer])
    used = np.zeros(width, dtype=bool)
    for line in lines[:n_infer]:
        for i, ch in enumerate(line):
            used[i] |= ch not in " \t"
    edges = np.flatnonzero(np.diff(np.concatenate([[0], used.astype(int), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


def read_fixed_width(lines, extents):
    """Each line cut at ``extents``, every piece stripped and read as a float (NaN if blank)."""
    out = np.full((len(lines), len(extents)), np.nan)
    for r, line in enumerate(lines):
        for c, (a, b) in enumerate(extents):
            field = line[a:b].strip()
            if field:
                out[r, c] = float(field)
    return out


def yacht_as_bayesian_benchmarks(X, y):
    """Yacht as ``bayesian_benchmarks`` reads the raw UCI file (module docstring, note on yacht)."""
    lines = [" ".join(f.format(v) for f, v in zip(YACHT_UCI_FORMATS, [*row, t], strict=True))
             for row, t in zip(X, y, strict=True)]
    A = read_fixed_width(lines, fixed_width_extents(lines))
    return A[:, :-1], A[:, -1]


def split_rows(tests, split):
    """Boolean test mask of one split (``hl``: published; ``bb``: the shuffle of seed ``split``)."""
    if SCHEME == "hl":
        return tests[:, split]
    # bayesian_benchmarks.data.Dataset with BASE_SEED = 0: the legacy global generator
    return shuffle_test_mask(tests.shape[0], split)


def make_model(n_features, s, random_state):
    """The single-layer GP of Salimbeni 2020, ch. 5 (settings of the public IWVI code)."""
    D = n_features
    return DeepGP(tol=None, n_layers=1, n_inducing=128,
                  kernel=RBF(length_scale=np.full(D, np.sqrt(D)), variance=1.0),
                  whiten=True, noise_variance_init=0.01, learning_rate=s["learning_rate"],
                  learning_rate_schedule="staircase", natgrad_gamma=s["natgrad_gamma"],
                  batch_size=None if s["batch"] == 0 else s["batch"], max_iter=s["max_iter"],
                  normalize_y=False, random_state=random_state)


def evaluate(model, Xt, yt):
    """KDE and exact (mixture) test log-likelihood and RMSE, standardised units."""
    Xt, yt = Xt[:10_000], yt[:10_000]
    kde = model.predict_log_density(Xt, yt, method="kde", n_kde_samples=N_KDE, random_state=0)
    mix = model.predict_log_density(Xt, yt)
    rmse = np.sqrt(np.mean((model.predict(Xt) - yt) ** 2))
    return float(kde.mean()), float(mix.mean()), float(rmse)


# %%
# Run the protocol
# ----------------


def run_one(dataset, split, repeat=0):
    """Fit and evaluate one split (``repeat`` > 0: another seed); returns the result row."""
    X, y, tests = load_uci_hl(dataset, **DATA)
    if dataset == "yacht" and YACHT == "bb_fwf":
        X, y = yacht_as_bayesian_benchmarks(X, y)
    X, y = standardise_full(X), standardise_full(y)
    te = split_rows(tests, split)
    s = settings_for(int((~te).sum()))
    t = time.time()
    seed = split + 1000 * repeat
    model = make_model(X.shape[1], s, random_state=seed).fit(X[~te], y[~te])
    fit_s = time.time() - t
    kde, mix, rmse = evaluate(model, X[te], y[te])
    return {"dataset": dataset, "split": split, "seed": seed, "kde_ll": kde, "mixture_ll": mix,
            "rmse": rmse, "elbo_per_row": model.elbo_ / int((~te).sum()),
            "noise_variance": model.noise_variance_, "fit_seconds": fit_s, **s}


tasks = []
for dataset in DATASETS:
    n_avail = load_uci_hl(dataset, **DATA)[2].shape[1]
    tasks += [(dataset, k, r) for k in range(min(SPLITS_PER.get(dataset, SPLITS_DEFAULT), n_avail))
              for r in range(REPEATS)]
results = {}
t0 = time.time()
for row in Parallel(n_jobs=N_JOBS, return_as="generator")(delayed(run_one)(*t) for t in tasks):
    results.setdefault(row["dataset"], []).append(row)
    print(f"{row['dataset']:9s} split {row['split']} seed {row['seed']} KDE LL "
          f"{row['kde_ll']: .4f}  mixture LL {row['mixture_ll']: .4f}  RMSE {row['rmse']:.4f}"
          f"  ELBO/N {row['elbo_per_row']: .4f}"
          f"  noise {row['noise_variance']:.5f}  ({row['fit_seconds']:.0f}s fit, total "
          f"{time.time() - t0:.0f}s)", flush=True)

# %%
# Table: ours vs the thesis, mean (standard error) over splits
# ------------------------------------------------------------


def mean_se(vals):
    v = np.asarray(vals, dtype=float)
    se = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")
    return v.mean(), se


lines = ["| dataset | fits | KDE LL (ours) | mixture LL (ours) | thesis c1 | KDE − thesis |"
         " within ±0.1 | RMSE (std. units) |",
         "|---|---|---|---|---|---|---|---|"]
summary = {}
for dataset, rows in results.items():
    k, ks = mean_se([r["kde_ll"] for r in rows])
    m, ms = mean_se([r["mixture_ll"] for r in rows])
    r_, rs_ = mean_se([r["rmse"] for r in rows])
    ref = THESIS_C1.get(dataset, (float("nan"), float("nan")))
    ok = abs(k - ref[0]) <= 0.1
    summary[dataset] = {"kde_ll": k, "kde_se": ks, "mixture_ll": m, "mixture_se": ms,
                        "thesis": ref[0], "within_0.1": bool(ok), "n_splits": len(rows)}
    lines.append(f"| {dataset} | {len(rows)} | {k:.3f} ({ks:.3f}) | {m:.3f} ({ms:.3f}) | "
                 f"{ref[0]:.2f} ({ref[1]:.2f}) | {k - ref[0]:+.3f} | {'yes' if ok else 'no'} | "
                 f"{r_:.3f} ({rs_:.3f}) |")
table = "\n".join(lines)
print(table)
keys = ("max_iter", "learning_rate", "natgrad_gamma", "batch")
per_set = {d: {k: rows[0][k] for k in keys} for d, rows in results.items()}
settings = (f"protocol {PROTOCOL}, splits {SCHEME}, {REPEATS} fit(s) per split, yacht {YACHT}, "
            f"{N_KDE} KDE samples; optimiser settings "
            f"(batch 0 = full): {per_set}")
(OUT / f"deep_gp_table51{TAG}.md").write_text(
    f"Table 5.1 GP column (c1), standardised test log-likelihood ({settings})\n\n{table}\n")
(OUT / f"deep_gp_table51{TAG}.json").write_text(json.dumps(
    {"settings": settings, "protocol": PROTOCOL, "scheme": SCHEME, "repeats": REPEATS,
     "yacht": YACHT, "summary": summary,
     "results": results}, indent=1))

# %%
# Figure: per-split KDE log-likelihood against the thesis value
# -------------------------------------------------------------
if results:
    fig, axes = plt.subplots(1, len(results), figsize=(2.6 * len(results), 3.0), squeeze=False)
    for ax, (dataset, rows) in zip(axes[0], results.items(), strict=True):
        ref = THESIS_C1.get(dataset, (np.nan, np.nan))[0]
        ax.axhspan(ref - 0.1, ref + 0.1, color="0.9", label="thesis ± 0.1")
        ax.axhline(ref, color="k", lw=1)
        ax.plot([r["split"] for r in rows], [r["kde_ll"] for r in rows], "o", label="KDE")
        ax.plot([r["split"] for r in rows], [r["mixture_ll"] for r in rows], "x",
                label="mixture")
        ax.set_title(dataset)
        ax.set_xlabel("split")
    axes[0, 0].set_ylabel("test log-likelihood (standardised)")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / f"deep_gp_table51{TAG}.png", dpi=110)
