"""Benchmark ``impute``: GPLVMImputer against scikit-learn's imputers, entries missing at random.

For each data set and fraction p of missing entries (missing completely at random, the same
masks for every imputer; rows left with no entry are kept), every imputer completes the data and
is scored on the hidden entries:

* **RMSE** of the imputed entries, each column divided by its standard deviation in the
  complete data (so every column counts alike; the column-mean imputer scores about 1);
* for :class:`~sklearn_lvgp.impute.GPLVMImputer`, the **coverage** of its 90 % predictive
  intervals ``mean ± 1.645 · transform_std`` (the fraction of hidden values inside);
* wall time of ``fit_transform`` (one run; the machine is shared, so times are indicative).

Imputers: ``SimpleImputer`` (mean), ``KNNImputer`` (5 neighbours), ``IterativeImputer`` with
``BayesianRidge`` and with ``ExtraTreesRegressor`` (50 trees; on USPS 10 trees and
``max_iter=3``, since 256 chained forests of 50 trees for 10 rounds would take about half an
hour per fraction here: 0.8 s per forest measured under load), all with scikit-learn's
defaults otherwise, and ``GPLVMImputer`` with its default model and ``random_state=0``.

Data (the protocol of this benchmark), from the offline dataset folder
(``$SKLEARN_LVGP_DATA``, else ``../shared/data`` beside the repository):

* oil flow: the 1000-row Netlab training split, 12 columns (Bishop & James 1993);
* USPS: the first 100 images of each digit of ``fetch_usps`` (1000 rows stratified by digit,
  256 pixel columns; Hull 1994);
* red wine quality (UCI, 1599 rows, the 11 physico-chemical columns; Cortez et al. 2009);
* concrete compressive strength (UCI, 1030 rows, the 8 mixture and age columns and the
  strength: 9 continuous columns; Yeh 1998).

Downstream (oil flow, 30 % missing): the 10-fold cross-validated 1-NN accuracy of the flow
regime in the 2-D latent space of ``UnscentedGPLVM(n_components=2, n_inducing=50,
max_iter=5000)`` fitted to the incomplete data (and to the complete data), and 5-fold
cross-validated accuracy of ``Pipeline(imputer, StandardScaler, LogisticRegression)`` with
the default ``GPLVMImputer`` and the BayesianRidge iterative imputer. ``--latent-inducing M``
measures only the 1-NN accuracy of the incomplete data's latent space with ``n_inducing=M``
(``impute_downstream_m<M>.json``).

Run standalone: ``python benchmarks/bench_impute.py [--sets oil,usps,wine,concrete]
[--fractions 0.1,0.3,0.5] [--no-downstream] [--plot PATH]`` (``--quick``: oil flow only, one
fraction). Each data set's rows go to ``benchmarks/results/impute_<set>.json`` (a subset of
the fractions to ``impute_<set>_<percents>.json``; the downstream measures to
``impute_downstream.json``), so sets and fractions can run in separate processes; every run
then rebuilds ``benchmarks/results/impute.md`` (and the figure with ``--plot``) from all the
files present.
"""

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np
from _common import REPO, ensure_repo_on_path, machine_info, markdown_table, write_json

ensure_repo_on_path()

from sklearn.ensemble import ExtraTreesRegressor  # noqa: E402
from sklearn.experimental import enable_iterative_imputer  # noqa: E402, F401
from sklearn.impute import IterativeImputer, KNNImputer, SimpleImputer  # noqa: E402
from sklearn.linear_model import BayesianRidge, LogisticRegression  # noqa: E402
from sklearn.model_selection import StratifiedKFold, cross_val_score  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklearn_lvgp import GPLVMImputer, UnscentedGPLVM  # noqa: E402
from sklearn_lvgp._core.parallel import threads  # noqa: E402
from sklearn_lvgp.datasets import fetch_oil_flow, fetch_uci, fetch_usps  # noqa: E402

NAME = "impute"
FRACTIONS = (0.1, 0.3, 0.5)
DATA = Path(os.environ.get("SKLEARN_LVGP_DATA") or REPO.parent / "shared" / "data")


#: Data-set keys of ``--sets``, in table order.
SETS = ("oil", "usps", "wine", "concrete")


def dataset(key):
    """``(label, X, y)`` of one data set of the benchmark (``y``: class or target, unused)."""
    if key == "oil":
        X, y = fetch_oil_flow(subset="train", data_home=DATA, download_if_missing=False,
                              return_X_y=True)
        return "oil flow (1000 × 12)", X, y
    if key == "usps":  # the first 100 images of each digit: 1000 rows stratified by digit
        X, y = fetch_usps(per_class=100, data_home=DATA, download_if_missing=False,
                          return_X_y=True)
        return "USPS (1000 × 256)", X, y
    if key == "wine":
        X, y = fetch_uci("wine_red", data_home=DATA, download_if_missing=False,
                         return_X_y=True)
        return "wine red (1599 × 11)", X, y
    if key == "concrete":  # the strength is a column like the others
        X, y = fetch_uci("concrete", data_home=DATA, download_if_missing=False,
                         return_X_y=True)
        return "concrete (1030 × 9)", np.column_stack([X, y]), y
    raise ValueError(f"unknown data set {key!r}; expected one of {SETS}.")


def imputers(key):
    """The imputers compared, fresh instances (ExtraTrees reduced on USPS, see above)."""
    trees, rounds = (10, 3) if key == "usps" else (50, 10)
    return {
        "mean": SimpleImputer(),
        "KNN (k=5)": KNNImputer(),
        "iterative BayesianRidge": IterativeImputer(BayesianRidge(), random_state=0),
        "iterative ExtraTrees": IterativeImputer(
            ExtraTreesRegressor(n_estimators=trees, random_state=0, n_jobs=1),
            max_iter=rounds, random_state=0),
        "GPLVMImputer": GPLVMImputer(random_state=0),
    }


def mcar(X, p, seed):
    """A mask with each entry missing with probability ``p`` (no column left empty)."""
    r = np.random.default_rng(seed)
    mask = r.random(X.shape) < p
    for j in np.flatnonzero(mask.all(axis=0)):
        mask[r.integers(X.shape[0]), j] = False
    return mask


def run_imputation(key, fractions=FRACTIONS):
    """RMSE (standardised), coverage and time of every imputer on one data set."""
    rows = []
    data_name, X, _ = dataset(key)
    scale = X.std(axis=0)
    for p in fractions:
        mask = mcar(X, p, seed=0)
        Xm = np.where(mask, np.nan, X)
        for name, imp in imputers(key).items():
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = imp.fit_transform(Xm)
                seconds = time.perf_counter() - t0
                std = imp.transform_std(Xm) if isinstance(imp, GPLVMImputer) else None
            err = ((out - X) / scale)[mask]
            entry = {"data": data_name, "fraction": p, "imputer": name,
                     "rmse": float(np.sqrt(np.mean(err ** 2))), "seconds": seconds}
            if std is not None:
                entry["coverage90"] = float(np.mean(
                    np.abs(out - X)[mask] <= 1.645 * std[mask]))
            rows.append(entry)
            print(entry, flush=True)
    return rows


def latent_1nn_accuracy(data, y, n_inducing):
    """10-fold 1-NN accuracy of ``y`` in the 2-D latent space of ``data`` (NaN: missing)."""
    Z = UnscentedGPLVM(n_components=2, n_inducing=n_inducing, max_iter=5000,
                       random_state=0).fit_transform(data)
    cv = StratifiedKFold(10, shuffle=True, random_state=0)
    return float(np.mean(cross_val_score(KNeighborsClassifier(1), Z, y, cv=cv)))


def oil_flow_30():
    """Oil flow's 1000 training rows, the same rows with 30 % of entries missing, the labels."""
    X, y = fetch_oil_flow(subset="train", data_home=DATA, download_if_missing=False,
                          return_X_y=True)
    return X, np.where(mcar(X, 0.3, seed=0), np.nan, X), y


def run_latent_inducing(n_inducing):
    """The downstream 1-NN measure on the incomplete oil flow with ``n_inducing`` inputs."""
    _, Xm, y = oil_flow_30()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {f"1-NN accuracy in 2-D latent space, 30 % missing, n_inducing={n_inducing}":
                latent_1nn_accuracy(Xm, y, n_inducing)}


def run_downstream():
    """1-NN accuracy in the 2-D latent space, and Pipeline accuracies, on oil flow at 30 %."""
    X, Xm, y = oil_flow_30()
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for tag, data in (("complete", X), ("30 % missing", Xm)):
            out[f"1-NN accuracy in 2-D latent space, {tag}"] = latent_1nn_accuracy(data, y, 50)
        cv = StratifiedKFold(5, shuffle=True, random_state=0)
        for tag, imp in (("GPLVMImputer", GPLVMImputer(random_state=0)),
                         ("IterativeImputer (BayesianRidge)",
                          IterativeImputer(BayesianRidge(), random_state=0))):
            pipe = make_pipeline(imp, StandardScaler(), LogisticRegression(max_iter=1000))
            out[f"Pipeline({tag}, LogisticRegression), 5-fold accuracy"] = float(
                np.mean(cross_val_score(pipe, Xm, y, cv=cv)))
    return out


def report(res):
    """Markdown tables of the results."""
    rows = res["imputation"]
    names = list(dict.fromkeys(r["imputer"] for r in rows))
    keys = list(dict.fromkeys((r["data"], r["fraction"]) for r in rows))
    table = []
    for data, p in keys:
        got = {r["imputer"]: r for r in rows if r["data"] == data and r["fraction"] == p}
        best = min(got.values(), key=lambda r: r["rmse"])["imputer"]
        cells = [f"**{got[n]['rmse']:.3f}**" if n == best else f"{got[n]['rmse']:.3f}"
                 for n in names]
        cov = got["GPLVMImputer"].get("coverage90")
        table.append([data, f"{p:.0%}"] + cells + [f"{cov:.3f}"])
    text = ("### impute — RMSE of the imputed entries (columns standardised; MCAR)\n\n"
            "One mask per data set and fraction; best per row in bold. ExtraTrees: 50 trees and "
            "10 rounds, on USPS 10 trees and 3 rounds (cost). USPS: the first 100 images of "
            "each digit.\n\n"
            + markdown_table(["data", "missing"] + names + ["GPLVM 90 % coverage"], table))
    times = [[r["data"], f"{r['fraction']:.0%}", r["imputer"], f"{r['seconds']:.1f}"]
             for r in rows]
    text += ("\n\nfit_transform seconds (one run each, one thread, measured with other jobs "
             "running on a shared 2-core machine: indicative)\n\n"
             + markdown_table(["data", "missing", "imputer", "s"], times))
    if res.get("downstream"):
        text += "\n\n### impute — downstream, oil flow\n\n" + markdown_table(
            ["measure", "value"], [[k, f"{v:.3f}"] for k, v in res["downstream"].items()])
    return text


def plot(res, path):
    """RMSE against the missing fraction, one panel per data set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = res["imputation"]
    data = list(dict.fromkeys(r["data"] for r in rows))
    ncols = min(len(data), 2)
    nrows = -(-len(data) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.4 * nrows), squeeze=False)
    for ax in axes.flat[len(data):]:
        ax.set_visible(False)
    for ax, d in zip(axes.flat[:len(data)], data, strict=True):
        for name in dict.fromkeys(r["imputer"] for r in rows):
            pts = sorted((r["fraction"], r["rmse"]) for r in rows
                         if r["data"] == d and r["imputer"] == name)
            ax.plot(*zip(*pts, strict=True), marker="o", label=name,
                    linewidth=2.5 if name == "GPLVMImputer" else 1.2)
        ax.set_title(d)
        ax.set_xlabel("fraction missing")
        ax.set_ylabel("RMSE (standardised)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def collect():
    """The per-set result files present, in table order, as one result."""
    folder = Path(__file__).resolve().parent / "results"
    res = {"imputation": [], "downstream": None, "runs": {}}
    for key in SETS:  # a whole set's file, or shards of some fractions (``--fractions``)
        rows = {}
        for path in [folder / f"{NAME}_{key}.json",
                     *sorted(folder.glob(f"{NAME}_{key}_*.json"))]:
            if path.exists():
                part = json.loads(path.read_text())
                rows.update({(r["fraction"], r["imputer"]): r for r in part["imputation"]})
                res["runs"][path.stem] = part["machine"]
        res["imputation"] += [rows[k] for k in sorted(rows, key=lambda k: k[0])]
    path = folder / f"{NAME}_downstream.json"
    if path.exists():
        part = json.loads(path.read_text())
        res["downstream"], res["runs"]["downstream"] = part["downstream"], part["machine"]
    for path in sorted(folder.glob(f"{NAME}_downstream_m*.json")):
        part = json.loads(path.read_text())
        res["downstream"] = {**(res["downstream"] or {}), **part["downstream"]}
        res["runs"][path.stem] = part["machine"]
    return res


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sets", default=",".join(SETS),
                        help=f"comma-separated data sets among {','.join(SETS)}")
    parser.add_argument("--fractions", default=None,
                        help="comma-separated fractions missing (default 0.1,0.3,0.5); a "
                             "subset goes to impute_<set>_<percents>.json")
    parser.add_argument("--no-downstream", action="store_true")
    parser.add_argument("--latent-inducing", type=int, default=None,
                        help="only the downstream 1-NN measure, with this many inducing inputs")
    parser.add_argument("--plot", default=None, help="write the RMSE figure to this path")
    args = parser.parse_args()
    keys = ["oil"] if args.quick else [k for k in args.sets.split(",") if k]
    for key in keys:
        if key not in SETS:
            parser.error(f"unknown data set {key!r}; expected some of {','.join(SETS)}")
    fractions = (tuple(float(f) for f in args.fractions.split(",")) if args.fractions
                 else (0.3,) if args.quick else FRACTIONS)
    shard = "" if fractions == FRACTIONS or args.quick else "_" + "_".join(
        f"{round(100 * f)}" for f in fractions)
    if args.latent_inducing is not None:
        with threads(1):
            write_json(f"{NAME}_downstream_m{args.latent_inducing}",
                       {"machine": machine_info(), "threads": 1,
                        "downstream": run_latent_inducing(args.latent_inducing)})
        keys, args.no_downstream = [], True
    with threads(1):
        for key in keys:
            res = {"machine": machine_info(), "threads": 1,
                   "imputation": run_imputation(key, fractions)}
            write_json(f"{NAME}_{key}{shard}", res, quick=args.quick)
        if not (args.quick or args.no_downstream):
            write_json(f"{NAME}_downstream", {"machine": machine_info(), "threads": 1,
                                              "downstream": run_downstream()})
    if args.quick:
        print(report(res))
        return
    res = collect()
    text = report(res)
    print(text)
    (Path(__file__).resolve().parent / "results" / f"{NAME}.md").write_text(text + "\n")
    if args.plot:
        plot(res, args.plot)


if __name__ == "__main__":
    main()
