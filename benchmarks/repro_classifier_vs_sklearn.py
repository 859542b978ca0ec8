"""``DeepGPClassifier(n_layers=1)`` (the SVGP classifier) against scikit-learn's
``GaussianProcessClassifier``: accuracy, log loss and fit time, and what happens to the latter
on a set of 40,000 rows.

Data (one split each, ``random_state=0``; stratified 80/20 for the two small sets):

* breast cancer: ``sklearn.datasets.load_breast_cancer`` (569 x 30, two classes);
* digits: ``sklearn.datasets.load_digits`` (1797 x 64, ten classes);
* kin40k as a binary task: ``uci_wilson/kin40k`` (40,000 x 8; ``SKLEARN_LVGP_DATA``, else
  ``../shared/data``), class ``y > median of the training y``, its fold 0 (4,000 rows) as the
  test set and the other 36,000 rows for training.

Settings. ``DeepGPClassifier(n_layers=1, max_iter=--max-iter, random_state=0)``, all else its
defaults (100 inducing inputs, Adam at 0.03, batch 10000, ``tol=1e-4``; Bernoulli-probit for two
classes, robust-max for ten); ``max_iter`` is cut from 10000 to 1000 by default to fit the
shared machine's budget. ``GaussianProcessClassifier(kernel=1.0 * RBF(1.0),
random_state=0)`` behind a ``StandardScaler`` (its default kernel has fixed hyperparameters and
would not be fitted; the scaler gives it the standardised inputs ``DeepGPClassifier`` makes for
itself); one-vs-rest for ten classes (its default).

On kin40k, ``GaussianProcessClassifier`` runs in a child process under a hard limit of
``--gpc-timeout`` seconds (default 60; ``--small-timeout``, default 300, on the two small sets)
and ``--gpc-memory`` GiB of address space (default 4), so
that it cannot take the shared machine: the report says whether it finished, ran out of time or
raised ``MemoryError``, next to the memory its dense N x N matrices need (one matrix is
``36000^2 * 8`` bytes = 10.4 GB).

Usage::

    python benchmarks/repro_classifier_vs_sklearn.py [--max-iter 1000] [--gpc-timeout 60]
        [--small-timeout 300] [--gpc-memory 4] [--quick]

Writes ``examples/output/repro_classifier_vs_sklearn.md`` and ``.json`` (``--quick``: 2000-row
large set, 200 steps, nothing written).
"""

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, ensure_repo_on_path, markdown_table  # noqa: E402

ensure_repo_on_path()
os.environ.setdefault("SKLEARN_LVGP_DATA", str(REPO.parent / "shared" / "data"))

from sklearn.datasets import load_breast_cancer, load_digits  # noqa: E402
from sklearn.gaussian_process import GaussianProcessClassifier  # noqa: E402
from sklearn.gaussian_process.kernels import RBF  # noqa: E402
from sklearn.metrics import accuracy_score, log_loss  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklearn_lvgp import DeepGPClassifier  # noqa: E402
from sklearn_lvgp.datasets import fetch_uci  # noqa: E402

OUT = REPO / "examples" / "output"


def load(name, quick=False):
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
    elif name == "digits":
        X, y = load_digits(return_X_y=True)
    else:
        d = fetch_uci("kin40k", collection="wilson", download_if_missing=False)
        test = d.test_masks[:, 0]
        Xtr, Xte, ytr, yte = d.data[~test], d.data[test], d.target[~test], d.target[test]
        thr = np.median(ytr)
        ytr, yte = (ytr > thr).astype(int), (yte > thr).astype(int)
        if quick:
            Xtr, ytr = Xtr[:2000], ytr[:2000]
        return Xtr, Xte, ytr, yte
    return train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)


def make_gpc():
    return make_pipeline(StandardScaler(),
                         GaussianProcessClassifier(kernel=1.0 * RBF(1.0), random_state=0))


def score(model, Xte, yte, fit_s):
    proba = model.predict_proba(Xte)
    return {"accuracy": float(accuracy_score(yte, model.classes_[np.argmax(proba, 1)])),
            "log_loss": float(log_loss(yte, proba, labels=model.classes_)), "fit_s": fit_s}


def fit_svgp(Xtr, ytr, Xte, yte, max_iter):
    params = {"n_layers": 1, "max_iter": max_iter, "random_state": 0}
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning (the quick run's few steps)
        model = DeepGPClassifier(**params).fit(Xtr, ytr)
    out = score(model, Xte, yte, time.perf_counter() - t0)
    out["n_iter"] = int(model.n_iter_)
    return out


def fit_gpc(Xtr, ytr, Xte, yte):
    t0 = time.perf_counter()
    model = make_gpc().fit(Xtr, ytr)
    return score(model, Xte, yte, time.perf_counter() - t0)


def _gpc_child(Xtr, ytr, Xte, yte, memory_gib, queue):
    import resource

    limit = int(memory_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        queue.put(("finished", fit_gpc(Xtr, ytr, Xte, yte)))
    except MemoryError as exc:
        queue.put(("MemoryError", repr(exc)[:300]))
    except Exception as exc:  # noqa: BLE001 - reported as measured
        queue.put((type(exc).__name__, repr(exc)[:300]))


def fit_gpc_limited(Xtr, ytr, Xte, yte, timeout_s, memory_gib):
    """GPC in a child process with a wall-clock and an address-space limit."""
    queue = mp.get_context("fork").Queue()
    proc = mp.get_context("fork").Process(target=_gpc_child,
                                          args=(Xtr, ytr, Xte, yte, memory_gib, queue))
    t0 = time.perf_counter()
    proc.start()
    proc.join(timeout_s)
    elapsed = time.perf_counter() - t0
    if proc.is_alive():
        proc.kill()
        proc.join()
        return {"outcome": f"killed after {timeout_s} s (time limit)", "elapsed_s": elapsed}
    status, detail = queue.get() if not queue.empty() else ("exit code", proc.exitcode)
    return {"outcome": status, "detail": detail, "elapsed_s": elapsed}


def gpc_cell(gpc, args):
    """Table cell of a limited GPC run: its scores, or what stopped it."""
    if gpc["outcome"] == "finished":
        d = gpc["detail"]
        return f"{d['accuracy']:.4f} / {d['log_loss']:.4f} / {d['fit_s']:.1f} s"
    if gpc["outcome"].startswith("killed"):
        return f"did not finish: {gpc['outcome']}"
    return (f"did not finish: {gpc['outcome']} after {gpc['elapsed_s']:.1f} s under a "
            f"{args.gpc_memory:g} GiB address-space limit")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpc-timeout", type=float, default=60.0)
    p.add_argument("--gpc-memory", type=float, default=4.0)
    p.add_argument("--small-timeout", type=float, default=300.0)
    p.add_argument("--max-iter", type=int, default=1000)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    max_iter = 200 if args.quick else args.max_iter
    t_all = time.perf_counter()
    results = {}
    rows = []
    for name in ("breast_cancer", "digits"):
        Xtr, Xte, ytr, yte = load(name)
        svgp = fit_svgp(Xtr, ytr, Xte, yte, max_iter)
        gpc = fit_gpc_limited(Xtr, ytr, Xte, yte, args.small_timeout, args.gpc_memory)
        results[name] = {"n_train": len(ytr), "n_test": len(yte), "svgp": svgp, "gpc": gpc}
        print(name, results[name], flush=True)
        rows.append([name, f"{len(ytr)} / {len(yte)}",
                     f"{svgp['accuracy']:.4f} / {svgp['log_loss']:.4f} / {svgp['fit_s']:.1f} s "
                     f"({svgp['n_iter']} steps)", gpc_cell(gpc, args)])
    Xtr, Xte, ytr, yte = load("kin40k", args.quick)
    n = len(ytr)
    svgp = fit_svgp(Xtr, ytr, Xte, yte, max_iter)
    gpc = fit_gpc_limited(Xtr, ytr, Xte, yte, args.gpc_timeout, args.gpc_memory)
    matrix_gb = n * n * 8 / 1e9
    gpc["one_n_by_n_matrix_gb"] = matrix_gb
    results["kin40k_binary"] = {"n_train": n, "n_test": len(yte), "svgp": svgp, "gpc": gpc,
                                "gpc_timeout_s": args.gpc_timeout,
                                "gpc_memory_gib": args.gpc_memory}
    print("kin40k", results["kin40k_binary"], flush=True)
    gpc_text = (gpc_cell(gpc, args) + f"; one N x N matrix is {matrix_gb:.1f} GB, the kernel "
                f"with its gradient (2 hyperparameters) {3 * matrix_gb:.0f} GB")
    rows.append(["kin40k, y > median", f"{n} / {len(yte)}",
                 f"{svgp['accuracy']:.4f} / {svgp['log_loss']:.4f} / {svgp['fit_s']:.1f} s "
                 f"({svgp['n_iter']} steps)", gpc_text])
    table = markdown_table(["data", "train / test rows",
                            "DeepGPClassifier(n_layers=1): accuracy / log loss / fit time",
                            "GaussianProcessClassifier: accuracy / log loss / fit time"], rows)
    cmd = (f"python benchmarks/repro_classifier_vs_sklearn.py --max-iter {max_iter} "
           f"--gpc-timeout {args.gpc_timeout:g} --small-timeout {args.small_timeout:g} "
           f"--gpc-memory {args.gpc_memory:g}")
    text = (f"# DeepGPClassifier(n_layers=1) against GaussianProcessClassifier\n\n"
            f"Command: `{cmd}` ({time.perf_counter() - t_all:.0f} s on the shared 2-core "
            f"machine; fit times are single runs on that loaded machine).\n\n{table}\n")
    print(text)
    if not args.quick:
        (OUT / "repro_classifier_vs_sklearn.md").write_text(text)
        (OUT / "repro_classifier_vs_sklearn.json").write_text(
            json.dumps({"command": cmd, "results": results}, default=str) + "\n")


if __name__ == "__main__":
    main()
