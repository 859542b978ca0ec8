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
``BayesianRidge`` and with ``ExtraTreesRegressor`` (50 trees), all with scikit-learn's defaults
otherwise, and ``GPLVMImputer`` with its default model
(``UnscentedGPLVM(n_components=min(5, d), n_inducing=20, normalize_X="standardize")``) and
``random_state=0``.

Data: oil flow (the 1000-row Netlab training split, 12 columns; Bishop & James 1993) and the
red wine quality set (UCI, 1599 rows, the 11 physico-chemical columns), from the offline
dataset folder (``$SKLEARN_LVGP_DATA``, else ``../shared/data`` beside the repository).

Downstream (oil flow, 30 % missing): the leave-one-out 1-NN accuracy of the flow regime in the
2-D latent space of an ``UnscentedGPLVM(n_components=2)`` fitted to the incomplete data (and to
the complete data), and 5-fold cross-validated accuracy of
``Pipeline(imputer, LogisticRegression)`` with the GPLVM and the BayesianRidge iterative
imputer.

Run standalone: ``python benchmarks/bench_impute.py [--quick]`` (``--quick``: oil flow only, one
fraction). Writes ``benchmarks/results/impute.json`` and prints the markdown tables.
"""

import argparse
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
from sklearn_lvgp.datasets import fetch_oil_flow  # noqa: E402

NAME = "impute"
FRACTIONS = (0.1, 0.3, 0.5)
DATA = Path(os.environ.get("SKLEARN_LVGP_DATA") or REPO.parent / "shared" / "data")


def datasets(quick=False):
    """``{name: (X, y)}`` of the benchmark's data sets."""
    X, y = fetch_oil_flow(subset="train", data_home=DATA, download_if_missing=False,
                          return_X_y=True)
    out = {"oil flow (1000 × 12)": (X, y)}
    if not quick:
        wine = np.loadtxt(DATA / "uci_hl" / "wine_red.csv.gz", delimiter=",", skiprows=1)
        out["wine red (1599 × 11)"] = (wine[:, :11], wine[:, 11].astype(int))
    return out


def imputers():
    """The imputers compared, fresh instances."""
    return {
        "mean": SimpleImputer(),
        "KNN (k=5)": KNNImputer(),
        "iterative BayesianRidge": IterativeImputer(BayesianRidge(), random_state=0),
        "iterative ExtraTrees": IterativeImputer(
            ExtraTreesRegressor(n_estimators=50, random_state=0, n_jobs=1), random_state=0),
        "GPLVMImputer": GPLVMImputer(UnscentedGPLVM(normalize_X="standardize", n_components=5,
                                                    random_state=0)),
    }


def mcar(X, p, seed):
    """A mask with each entry missing with probability ``p`` (no column left empty)."""
    r = np.random.default_rng(seed)
    mask = r.random(X.shape) < p
    for j in np.flatnonzero(mask.all(axis=0)):
        mask[r.integers(X.shape[0]), j] = False
    return mask


def run_imputation(quick=False):
    """RMSE (standardised), coverage and time of every imputer, data set and fraction."""
    rows = []
    for data_name, (X, _) in datasets(quick).items():
        scale = X.std(axis=0)
        for p in ((0.3,) if quick else FRACTIONS):
            mask = mcar(X, p, seed=0)
            Xm = np.where(mask, np.nan, X)
            for name, imp in imputers().items():
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


def run_downstream():
    """1-NN accuracy in the 2-D latent space, and Pipeline accuracies, on oil flow at 30 %."""
    X, y = fetch_oil_flow(subset="train", data_home=DATA, download_if_missing=False,
                          return_X_y=True)
    Xm = np.where(mcar(X, 0.3, seed=0), np.nan, X)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for tag, data in (("complete", X), ("30 % missing", Xm)):
            Z = UnscentedGPLVM(n_components=2, n_inducing=30, random_state=0).fit_transform(data)
            knn = KNeighborsClassifier(1)
            cv = StratifiedKFold(10, shuffle=True, random_state=0)
            out[f"1-NN accuracy in 2-D latent space, {tag}"] = float(
                np.mean(cross_val_score(knn, Z, y, cv=cv)))
        cv = StratifiedKFold(5, shuffle=True, random_state=0)
        for tag, imp in (("GPLVMImputer", GPLVMImputer(UnscentedGPLVM(
                n_components=5, normalize_X="standardize", random_state=0))),
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
            + markdown_table(["data", "missing"] + names + ["GPLVM 90 % coverage"], table))
    times = [[r["data"], f"{r['fraction']:.0%}", r["imputer"], f"{r['seconds']:.1f}"]
             for r in rows]
    text += "\n\nfit_transform seconds (one run, indicative)\n\n" + markdown_table(
        ["data", "missing", "imputer", "s"], times)
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
    fig, axes = plt.subplots(1, len(data), figsize=(4.2 * len(data), 3.4), squeeze=False)
    for ax, d in zip(axes[0], data, strict=True):
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-downstream", action="store_true")
    parser.add_argument("--plot", default=None, help="write the RMSE figure to this path")
    args = parser.parse_args()
    with threads(1):
        res = {"machine": machine_info(), "threads": 1,
               "imputation": run_imputation(args.quick)}
        res["downstream"] = None if (args.quick or args.no_downstream) else run_downstream()
    write_json(NAME, res, quick=args.quick)
    text = report(res)
    print(text)
    if not args.quick:
        (Path(__file__).resolve().parent / "results" / "impute.md").write_text(text + "\n")
    if args.plot:
        plot(res, args.plot)


if __name__ == "__main__":
    main()
