"""
Deep GPs on the UCI regression benchmarks (Fig. 2.4 protocol of Salimbeni 2020)
===============================================================================

Salimbeni & Deisenroth (2017) compare a sparse variational GP (SGP = DGP 1) with doubly-stochastic
deep GPs of 2 to 5 layers on eight UCI data sets; yacht is added here as a ninth. This example
runs that protocol on the published Hernández-Lobato & Adams splits (``shared/data/uci_hl``,
90 % train / 10 % test):

* inputs and targets standardised with the training split's statistics (inside ``DeepGP``);
* 100 inducing points per layer (k-means), RBF-ARD kernels with unit length scales and variances,
  inner width ``min(30, D)``, fixed PCA / identity mean functions, noise variance 0.05;
* Adam (learning rate 0.01) on all parameters, minibatch 10,000 (full batch below that), one
  sample per point in training, 100 paths at test time;
* test log-likelihood (mixture of the 100 paths, logsumexp) and RMSE in original units.

An extra column, "UT-DGP 2", is the same 2-layer model trained with ``expectation="unscented"``:
sigma points instead of samples, a deterministic bound, and one moment-matched Gaussian per test
point.

The paper's Fig. 2.4 is a plot without numbers; the reference notebooks give kin8nm split 0:
SGP 0.973 / DGP 2 1.302 / DGP 3 1.330 (test log-likelihood, 5000 Adam steps, whitened). The 2017
notebook made that split with the reference code's ``datasets.py`` (``LVGP_UCI_SCHEME=shuffle``
below), not from the published split files.

Environment knobs (the full protocol takes days on a laptop CPU):

* ``LVGP_UCI_DATASETS`` — comma-separated names (default: the eight of Fig. 2.4 and yacht);
* ``LVGP_UCI_SPLITS`` — number of splits (default 20; protein has 5);
* ``LVGP_UCI_FIRST_SPLIT`` — index of the first split (default 0);
* ``LVGP_UCI_ITERS`` — optimiser steps (default 5000, as in the notebooks);
* ``LVGP_UCI_MODELS`` — comma-separated subset of ``SGP,SGP500,DGP2,DGP3,DGP4,DGP5,UT-DGP2``
  (``SGP500``: the paper's single-layer baseline with 500 inducing points; on training sets
  smaller than 500 rows the inducing inputs are the rows plus standard-normal fill-in rows);
* ``LVGP_UCI_BATCH`` — minibatch size (default 10000);
* ``LVGP_UCI_NATGRAD`` — natural-gradient γ for the last layer (default: none, Adam only);
* ``LVGP_UCI_SCHEDULE`` — ``learning_rate_schedule`` of every fit: ``constant`` (default, the
  protocol), ``staircase`` or ``cosine`` (anneals Adam's rate to 1 % of it at the last step);
* ``LVGP_UCI_SCHEME`` — ``published`` (default): the Hernández-Lobato & Adams splits;
  ``shuffle``: split ``s`` shuffles the rows with ``RandomState(s)`` and trains on the first
  90 %, as the authors' public DSDGP code's ``datasets.py`` does (its split 0 is the reference
  notebook's kin8nm split, 7372 / 820 rows);
* ``LVGP_UCI_TAG`` — suffix of the output files;
* ``LVGP_UCI_OUT`` — output folder (default ``examples/output``);
* ``LVGP_UCI_RESUME=1`` — continue the run recorded in ``deep_gp_uci<TAG>.json``: fits already
  in it are skipped. The file is rewritten after every fit, so a stopped run loses at most
  the fit in progress;
* ``LVGP_UCI_MERGE`` — comma-separated file patterns in the output folder (for example
  ``deep_gp_uci_s8_*.json``): fit nothing, merge those runs (shards of the protocol run on
  different machines or days) and write the table and figure of the union. All of them must
  have the protocol of the current knobs (steps, batch, γ, split scheme). When two files hold
  the same data set, model and split, the file matched by a later pattern wins and the change
  is printed.

Next to the mean (standard error) table, a second table gives each model's paired difference to the
SGP over the splits both ran: the check of our reproduction protocol "a DGP is never worse than the
SGP by more than 0.05 nats", after the thesis's finding that the DGP "is never worse and often
better than the single layer GP" (Salimbeni 2020, §2.4). A third table tracks progress through the
protocol: per data set and model, the fits done out of the published splits, the hours they took,
and the hours left at their median.
"""

# %%
# Set-up
# ------
import json
import os
import re
import time
from pathlib import Path

import numpy as np

from sklearn_lvgp import DeepGP
from sklearn_lvgp.datasets import load_uci_hl, uci_hl_splits

ALL = ["boston", "concrete", "energy", "kin8nm", "naval", "power", "protein", "wine_red", "yacht"]
ORDER = ["SGP", "SGP500", "DGP2", "DGP3", "DGP4", "DGP5", "UT-DGP2"]
DATASETS = [d for d in os.environ.get("LVGP_UCI_DATASETS", ",".join(ALL)).split(",") if d]
N_SPLITS = int(os.environ.get("LVGP_UCI_SPLITS", 20))
FIRST_SPLIT = int(os.environ.get("LVGP_UCI_FIRST_SPLIT", 0))
N_ITER = int(os.environ.get("LVGP_UCI_ITERS", 5000))
MODELS = os.environ.get("LVGP_UCI_MODELS", "SGP,DGP2,DGP3,DGP4,UT-DGP2").split(",")
BATCH = int(os.environ.get("LVGP_UCI_BATCH", 10000))
GAMMA = os.environ.get("LVGP_UCI_NATGRAD")
SCHEDULE = os.environ.get("LVGP_UCI_SCHEDULE", "constant")
SCHEME = os.environ.get("LVGP_UCI_SCHEME", "published")
TAG = os.environ.get("LVGP_UCI_TAG", "")
RESUME = os.environ.get("LVGP_UCI_RESUME", "0") == "1"
MERGE = [p for p in os.environ.get("LVGP_UCI_MERGE", "").split(",") if p]
HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
OUT = Path(os.environ.get("LVGP_UCI_OUT", HERE / "output"))
OUT.mkdir(parents=True, exist_ok=True)
RESULTS_FILE = OUT / f"deep_gp_uci{TAG}.json"
# the project's pre-filled dataset folder beside the repository if present (CI, offline), else
# the default cache (~/sklearn_lvgp_data or $SKLEARN_LVGP_DATA), downloaded on first use
SHARED = HERE.parents[1]
SHARED = SHARED / "shared" / "data"
DATA = {"data_home": SHARED, "download_if_missing": False} if SHARED.is_dir() else {}
#: What makes two runs comparable (their models and splits may differ).
PROTOCOL = {"steps": N_ITER, "batch": BATCH, "natgrad": GAMMA, "splits": SCHEME,
            "schedule": SCHEDULE}
#: Test log-likelihood of the authors' 2017 reference notebook (public DSDGP code) on its kin8nm
#: split 0 (its SGP and SGP 500 are collapsed SGPs fitted by L-BFGS).
PAPER_KIN8NM = {"SGP": 0.973, "SGP500": 1.135, "DGP2": 1.302, "DGP3": 1.330, "DGP4": 1.331,
                "DGP5": 1.336}
if SCHEME not in ("published", "shuffle"):
    raise ValueError(f"LVGP_UCI_SCHEME must be 'published' or 'shuffle', got {SCHEME!r}.")
if SCHEDULE not in ("constant", "staircase", "cosine"):
    raise ValueError("LVGP_UCI_SCHEDULE must be 'constant', 'staircase' or 'cosine', "
                     f"got {SCHEDULE!r}.")
unknown = sorted(set(MODELS) - set(ORDER))
if unknown:
    raise ValueError(f"LVGP_UCI_MODELS: unknown models {unknown}; expected names from {ORDER}.")


def make_model(name):
    """One model of the comparison with the protocol's settings."""
    depth = 2 if name == "UT-DGP2" else (1 if name.startswith("SGP") else int(name[3:]))
    return DeepGP(tol=None, n_layers=depth, n_inducing=500 if name == "SGP500" else 100,
                  learning_rate=0.01, learning_rate_schedule=SCHEDULE, batch_size=BATCH,
                  max_iter=N_ITER, n_samples=1, n_predict_samples=100,
                  expectation="unscented" if name.startswith("UT") else "monte_carlo",
                  natgrad_gamma=None if GAMMA is None else float(GAMMA),
                  inner_layer_init="collapsed", random_state=0)


# %%
# Bookkeeping: one JSON file per run, rewritten after every fit
# -------------------------------------------------------------
# ``results[dataset][model]`` is a list of ``{"split", "ll", "rmse", "seconds"}`` records.


def protocol_of(doc, path):
    """Protocol of a results file; files written before it was recorded carry a sentence.

    Files written before the split scheme or the schedule was recorded used the published
    splits and a constant learning rate.
    """
    if "protocol" in doc:
        return {"splits": "published", "schedule": "constant", **doc["protocol"]}
    m = re.match(r"(\d+) steps, batch (\d+), natgrad γ (\S+),", doc.get("settings", ""))
    if m is None:
        raise ValueError(f"{path.name}: no protocol recorded.")
    return {"steps": int(m[1]), "batch": int(m[2]), "natgrad": None if m[3] == "None" else m[3],
            "splits": "published", "schedule": "constant"}


def load_results(path):
    """Results of one file, after checking that its protocol is the current one."""
    doc = json.loads(path.read_text())
    if protocol_of(doc, path) != PROTOCOL:
        raise ValueError(f"{path.name} was run with {protocol_of(doc, path)}, not {PROTOCOL}; "
                         "set LVGP_UCI_ITERS / LVGP_UCI_BATCH / LVGP_UCI_NATGRAD / "
                         "LVGP_UCI_SCHEME / LVGP_UCI_SCHEDULE to match.")
    return doc["results"]


def save_results(path, results, models):
    """Write the results atomically (a stopped run never leaves a truncated file)."""
    settings = (f"{N_ITER} steps, batch {BATCH}, natgrad γ {GAMMA}, models {','.join(models)}, "
                f"{SCHEME} splits, {SCHEDULE} learning rate")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"settings": settings, "protocol": PROTOCOL, "results": results},
                              indent=1))
    os.replace(tmp, path)


def merge_results(paths):
    """Union of several runs by data set, model and split; a later file wins a clash."""
    merged = {}
    for path in paths:
        for dataset, per in load_results(path).items():
            for name, runs in per.items():
                slot = merged.setdefault(dataset, {}).setdefault(name, {})
                for r in runs:
                    old = slot.get(r["split"])
                    if old is not None and old["ll"] != r["ll"]:
                        print(f"{dataset} {name} split {r['split']}: {path.name} replaces LL "
                              f"{old['ll']:.4f} by {r['ll']:.4f}")
                    slot[r["split"]] = r
    return {d: {m: [slot[s] for s in sorted(slot)] for m, slot in per.items()}
            for d, per in merged.items()}


def matching(patterns):
    """Files of the output folder matched by ``patterns``, in pattern order (not the output)."""
    files = []
    for pattern in patterns:
        for f in sorted(OUT.glob(pattern)):
            if f != RESULTS_FILE and f.suffix == ".json" and f not in files:
                files.append(f)
    return files


# %%
# Run the protocol (or merge earlier runs)
# ----------------------------------------
if MERGE:
    files = matching(MERGE)
    if not files:
        raise FileNotFoundError(f"LVGP_UCI_MERGE={','.join(MERGE)} matches no file in {OUT}.")
    print("merging", ", ".join(f.name for f in files))
    results = merge_results(files)
    MODELS = [m for m in ORDER if any(m in per for per in results.values())]
    save_results(RESULTS_FILE, results, MODELS)
else:
    results = load_results(RESULTS_FILE) if RESUME and RESULTS_FILE.exists() else {}
    t0 = time.time()
    for dataset in DATASETS:
        for split, X_tr, y_tr, X_te, y_te in uci_hl_splits(dataset, FIRST_SPLIT, N_SPLITS, SCHEME,
                                                           **DATA):
            for name in MODELS:
                runs = results.setdefault(dataset, {}).setdefault(name, [])
                if any(r["split"] == split for r in runs):
                    continue
                t = time.time()
                model = make_model(name).fit(X_tr, y_tr)
                ll = float(model.predict_log_density(X_te, y_te).mean())
                rmse = float(np.sqrt(np.mean((model.predict(X_te) - y_te) ** 2)))
                runs.append({"split": split, "ll": ll, "rmse": rmse, "seconds": time.time() - t})
                runs.sort(key=lambda r: r["split"])
                save_results(RESULTS_FILE, results, MODELS)
                print(f"{dataset:9s} split {split:2d} {name:8s} LL {ll: .4f}  RMSE {rmse:.4g}  "
                      f"({time.time() - t:.0f}s, total {time.time() - t0:.0f}s)", flush=True)
results = {d: {m: results[d][m] for m in MODELS if results[d].get(m)}
           for d in ALL if d in results and d in DATASETS}

# %%
# Tables: mean (standard error) over splits, and paired differences to the SGP
# ----------------------------------------------------------------------------


def fmt(vals, count=False):
    """``mean (s.e.)``, with ``[n]`` when ``count``; a dash for no values."""
    v = np.asarray(vals, dtype=float)
    if v.size == 0:
        return "—"
    text = f"{v.mean():.3f} ({v.std(ddof=1) / np.sqrt(v.size):.3f})" if v.size > 1 \
        else f"{v.mean():.3f}"
    return f"{text} [{v.size}]" if count else text


lines = ["| dataset | splits | " + " | ".join(f"{m} LL" for m in MODELS) + " | "
         + " | ".join(f"{m} RMSE" for m in MODELS) + " |",
         "|---|---|" + "---|" * (2 * len(MODELS))]
for dataset, per in results.items():
    counts = {len(per.get(m, [])) for m in MODELS}
    same = len(counts) == 1
    n = str(counts.pop()) if same else "[n] per cell"
    lls = [fmt([r["ll"] for r in per.get(m, [])], not same) for m in MODELS]
    rms = [fmt([r["rmse"] for r in per.get(m, [])], not same) for m in MODELS]
    lines.append(f"| {dataset} | {n} | " + " | ".join(lls) + " | " + " | ".join(rms) + " |")
if "kin8nm" in results:
    lines.append("| kin8nm, 2017 notebook on its own split 0 (shuffle scheme) | 1 | " + " | ".join(
        f"{PAPER_KIN8NM[m]:.3f}" if m in PAPER_KIN8NM else "—" for m in MODELS) + " |"
        + " |" * len(MODELS))
others = [m for m in MODELS if m != "SGP"]
paired = ["| dataset | " + " | ".join(f"{m} − SGP" for m in others)
          + " | worst split | splits below SGP − 0.05 |", "|---|" + "---|" * (len(others) + 2)]
for dataset, per in results.items():
    sgp = {r["split"]: r["ll"] for r in per.get("SGP", [])}
    if not sgp or not others:
        continue
    cells, worst, below = [], [], []
    for m in others:
        diff = {r["split"]: r["ll"] - sgp[r["split"]] for r in per.get(m, [])
                if r["split"] in sgp}
        cells.append(fmt(list(diff.values()), count=True))
        if diff:
            s = min(diff, key=diff.get)
            worst.append(f"{m} split {s}: {diff[s]:+.3f}")
            below += [f"{m}/{k}" for k, v in sorted(diff.items()) if v < -0.05]
    paired.append(f"| {dataset} | " + " | ".join(cells) + f" | {'; '.join(worst) or '—'} | "
                  f"{len(below)}{' (' + ', '.join(below) + ')' if below else ''} |")


def protocol_splits(dataset):
    """Splits of the data set's protocol: the published count (20; protein 5), else unknown."""
    if SCHEME != "published":
        return None
    try:
        return load_uci_hl(dataset, **DATA)[2].shape[1]
    except OSError:
        return None


progress = ["| dataset | " + " | ".join(MODELS) + " |", "|---|" + "---|" * len(MODELS)]
spent_total, left_total = dict.fromkeys(MODELS, 0.0), dict.fromkeys(MODELS, 0.0)
for dataset, per in results.items():
    total = protocol_splits(dataset)
    cells = []
    for m in MODELS:
        secs = [r["seconds"] for r in per.get(m, [])]
        spent = sum(secs) / 3600
        spent_total[m] += spent
        cell = f"{len(secs)}/{total or '?'}"
        if secs:
            cell += f" · {spent:.1f} h"
        if total is not None and secs and len(secs) < total:
            left = (total - len(secs)) * float(np.median(secs)) / 3600
            left_total[m] += left
            cell += f" · {left:.1f} h left"
        cells.append(cell)
    progress.append(f"| {dataset} | " + " | ".join(cells) + " |")
progress.append("| all | " + " | ".join(
    f"{spent_total[m]:.1f} h · {left_total[m]:.1f} h left" for m in MODELS) + " |")
table = "\n".join(lines)
paired_table = "\n".join(paired)
progress_table = "\n".join(progress)
print(table, "", "Paired difference to the SGP, mean (s.e.) [splits]:", "", paired_table,
      "", "Progress (fits done / protocol splits, hours spent, hours to finish):", "",
      progress_table, sep="\n")
settings = (f"{N_ITER} steps, batch {BATCH}, natgrad γ {GAMMA}, models {','.join(MODELS)}, "
            f"{SCHEME} splits")
(OUT / f"deep_gp_uci{TAG}.md").write_text(
    f"UCI protocol of Fig. 2.4 ({settings})\n\n{table}\n\nPaired difference to the SGP "
    f"(test LL; mean (s.e.) [splits] over the splits both ran):\n\n{paired_table}\n\n"
    f"Progress: fits done / the protocol's splits, hours the recorded fits took (wall time of "
    f"fit and test scoring, as run), and hours to finish at their median (a model with no fit "
    f"on a data set is not counted):\n\n{progress_table}\n")

# %%
# Figure in the style of Fig. 2.4: test log-likelihood per data set
# -----------------------------------------------------------------
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # the tables above are the result; the figure is optional
    plt = None
    print("matplotlib is not installed: no figure")
if plt is not None and results:
    fig, axes = plt.subplots(1, len(results), figsize=(3 * len(results), 3.2), squeeze=False)
    for ax, (dataset, per) in zip(axes[0], results.items(), strict=True):
        shown = [m for m in MODELS if per.get(m)]
        for i, m in enumerate(shown):
            v = np.array([r["ll"] for r in per[m]])
            se = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else 0.0
            ax.errorbar(v.mean(), i, xerr=se, fmt="o", color=f"C{ORDER.index(m)}")
        ax.set_yticks(range(len(shown)), shown)
        ax.set_title(dataset)
        ax.set_xlabel("test log-likelihood")
    fig.tight_layout()
    fig.savefig(OUT / f"deep_gp_uci{TAG}.png", dpi=110)
