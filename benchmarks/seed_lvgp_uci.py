"""Latent-variable deep GPs on UCI with VI and IWVI (Table 5.1 of Salimbeni 2020, reduced).

Salimbeni (2020, ``salimbeni2020deep``), Table 5.1, compares GP, deep GP and latent-variable
deep GP models (LV-GP, LV-GP-GP, ...) trained with the variational bound (VI) and the
importance-weighted one (IW), on 41 data sets, 5 splits, 100 000 steps. This script fits
``DeepGP(latent_dim=1)`` with one layer (LV-GP) and two layers (LV-GP-GP), each with
``inference="vi"`` and ``"iwvi"`` (``n_importance=5``), on ``--datasets`` (default boston,
concrete, energy) and published ``uci_hl`` splits ``--splits`` (default 0), for ``--iters``
steps (default 1500).

Settings: those of ``examples/plot_deep_gp_latent.py`` (ch. 5 of the thesis and its public
IWVI code): M = 128, noise 0.01, minibatch 512 (the full batch here), Adam 5e-3 and natural
gradients γ = 0.01 on the last layer, both × 0.98 every 1000 steps, ``inner_layer_init=
"collapsed"``, 200 prediction paths, ``random_state=split``. Test log-likelihood per point in
standardised target units (training-set std), from the mixture over prediction paths
(the thesis: a KDE of 2000 samples, full-data standardisation).

The thesis's values as extracted (its text kept six of nine columns per row, dropping different
ones in different rows): only its GP column is reliable; the others are shown as indicative.

Usage::

    python benchmarks/seed_lvgp_uci.py [--datasets boston,concrete,energy] [--splits 0]
        [--iters 1500] [--models "LV-GP VI,LV-GP IW,LV-GP-GP VI,LV-GP-GP IW"]
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ensure_repo_on_path  # noqa: E402

ensure_repo_on_path()

from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from sklearn_lvgp import DeepGP  # noqa: E402
from sklearn_lvgp.datasets import uci_hl_splits  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"
OUT = REPO / "examples" / "output" / "seed_lvgp_uci.md"
JSON = REPO / "benchmarks" / "results" / "seed_lvgp_uci.json"
MODELS = {"LV-GP VI": dict(n_layers=1, latent_dim=1),
          "LV-GP IW": dict(n_layers=1, latent_dim=1, inference="iwvi", n_importance=5),
          "LV-GP-GP VI": dict(n_layers=2, latent_dim=1),
          "LV-GP-GP IW": dict(n_layers=2, latent_dim=1, inference="iwvi", n_importance=5)}
#: Table 5.1 as extracted: GP column (reliable) and extracted columns 4-6 (indicative).
PAPER = {"boston": (0.02, -0.04, -0.07, 0.06), "concrete": (-0.43, -0.32, -0.32, -0.35),
         "energy": (1.71, 1.86, 1.92, 2.00)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="boston,concrete,energy")
    ap.add_argument("--splits", default="0")
    ap.add_argument("--iters", type=int, default=1500)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--json", type=Path, default=JSON)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    data = {"data_home": SHARED, "download_if_missing": False} if SHARED.is_dir() else {}
    records = json.loads(args.json.read_text()) if args.json.exists() else []
    for ds in [] if args.report_only else args.datasets.split(","):
        for split in [int(s) for s in args.splits.split(",")]:
            (_, Xtr, ytr, Xte, yte), = uci_hl_splits(ds, split, 1, **data)
            sy = float(np.std(ytr))
            for name in args.models.split(","):
                kw = MODELS[name]
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model = DeepGP(tol=None, n_inducing=128, noise_variance_init=0.01,
                                   max_iter=args.iters, batch_size=512, learning_rate=5e-3,
                                   natgrad_gamma=0.01, learning_rate_schedule="staircase",
                                   n_predict_samples=200, inner_layer_init="collapsed",
                                   random_state=split, **kw).fit(Xtr, ytr)
                ll = float(model.predict_log_density(Xte, yte).mean() + np.log(sy))
                rec = {"dataset": ds, "split": split, "model": name, "iters": args.iters,
                       "ll": ll, "seconds": time.perf_counter() - t0}
                print(json.dumps(rec), flush=True)
                records.append(rec)
                args.json.parent.mkdir(exist_ok=True)
                args.json.write_text(json.dumps(records, indent=1) + "\n")
    lines = ["| dataset | splits | steps | " + " | ".join(MODELS)
             + " | thesis GP | thesis extracted c4 / c5 / c6 (indicative) |",
             "|---|---|---|" + "---|" * len(MODELS) + "---|---|"]
    for ds in dict.fromkeys(r["dataset"] for r in records):
        rs = [r for r in records if r["dataset"] == ds]
        cells = []
        for name in MODELS:
            v = [r["ll"] for r in rs if r["model"] == name]
            cells.append(f"{np.mean(v):.3f}" if v else "not run")
        p = PAPER.get(ds, (np.nan,) * 4)
        splits = sorted({r["split"] for r in rs})
        lines.append(f"| {ds} | {','.join(map(str, splits))} | "
                     f"{','.join(str(s) for s in sorted({r['iters'] for r in rs}))} | "
                     + " | ".join(cells) + f" | {p[0]:.2f} | {p[1]:.2f} / {p[2]:.2f} / "
                     f"{p[3]:.2f} |")
    lines += ["", "Test log-likelihood per point, standardised units (training std), mixture "
              "over 200 prediction paths. Command: `python benchmarks/seed_lvgp_uci.py`."]
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
