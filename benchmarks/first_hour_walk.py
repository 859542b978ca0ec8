"""The first hour of a new user, step by step: what each step prints, warns and scores.

Run in a fresh numba cache, as a new user gets it::

    PYTHONPATH=. NUMBA_CACHE_DIR=$(mktemp -d) MPLBACKEND=Agg python benchmarks/first_hour_walk.py \
        --out examples/output/first_hour_walk.md

Each step records its wall time (compilation included where it happens), the warnings it
raised (category, the file they are attributed to, the first line of their text), the
log lines of the package (first-compile notices, progress) and its outcome. Figures go to
``examples/output/first_hour_*.png``.
"""

import argparse
import contextlib
import io
import logging
import os
import time
import warnings

import numpy as np


class _Step:
    def __init__(self, rows, name):
        self.rows, self.name = rows, name

    def __enter__(self):
        self.t0 = time.perf_counter()
        self.caught = warnings.catch_warnings(record=True)
        self.warned = self.caught.__enter__()
        warnings.simplefilter("always")
        self.log = io.StringIO()
        self.handler = logging.StreamHandler(self.log)
        logging.getLogger("sklearn_lvgp").addHandler(self.handler)
        self.err = contextlib.redirect_stderr(io.StringIO())
        self.stderr = self.err.__enter__()
        self.outcome = ""
        return self

    def __exit__(self, *exc):
        seconds = time.perf_counter() - self.t0
        self.err.__exit__(*exc)
        logging.getLogger("sklearn_lvgp").removeHandler(self.handler)
        self.caught.__exit__(*exc)
        warned = [f"{w.category.__name__} at {os.path.basename(w.filename)}:{w.lineno}: "
                  f"{str(w.message).splitlines()[0][:160]}" for w in self.warned]
        lines = [ln for ln in (self.log.getvalue() + self.stderr.getvalue()).splitlines()
                 if ln.strip()]
        self.rows.append((self.name, seconds, self.outcome, warned, lines))
        return False


def main(out):
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
    from sklearn.gaussian_process.kernels import RBF, WhiteKernel
    from sklearn.metrics import log_loss
    from sklearn.model_selection import GridSearchCV, cross_val_score, train_test_split
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_lvgp import GPCDE, LDGD, SparseGPRegressor, UnscentedGPLVM
    from sklearn_lvgp.inspection import LatentSpaceDisplay, PredictiveDensityDisplay

    rows = []
    here = os.path.dirname(os.path.abspath(out))

    X, y = load_digits(return_X_y=True)
    with _Step(rows, "digits: Pipeline(StandardScaler, UnscentedGPLVM(2), 1-NN), 3-fold CV") as s:
        pipe = make_pipeline(StandardScaler(), UnscentedGPLVM(n_components=2, random_state=0),
                             KNeighborsClassifier(1))
        acc = cross_val_score(pipe, X[:600], y[:600], cv=3)
        s.outcome = f"accuracy {acc.mean():.3f} (folds {', '.join(f'{a:.3f}' for a in acc)})"
    with _Step(rows, "digits: LatentSpaceDisplay of a fitted UnscentedGPLVM") as s:
        model = UnscentedGPLVM(n_components=2, random_state=0).fit(X[:600])
        disp = LatentSpaceDisplay.from_estimator(model, y=y[:600])
        disp.figure_.savefig(os.path.join(here, "first_hour_digits_latent.png"), dpi=80)
        s.outcome = "first_hour_digits_latent.png"

    Xd, yd = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(Xd, yd, random_state=0)
    grid = "diabetes: GridSearchCV(SparseGPRegressor, scoring='log_predictive_density')"
    with _Step(rows, grid) as s:
        search = GridSearchCV(SparseGPRegressor(normalize_y=True, random_state=0),
                              {"n_inducing": [10, 30]}, scoring="log_predictive_density",
                              cv=3).fit(Xtr, ytr)
        s.outcome = (f"best {search.best_params_}, CV log density {search.best_score_:.3f}, "
                     f"test log density {search.score(Xte, yte):.3f} per row")
    with _Step(rows, "diabetes: SparseGPRegressor(kernel=RBF()), default normalize_y") as s:
        r2 = SparseGPRegressor(kernel=RBF(), random_state=0).fit(Xtr, ytr).score(Xte, yte)
        s.outcome = f"test R² {r2:.3f}"
    with _Step(rows, "diabetes: SparseGPRegressor(kernel=RBF() + WhiteKernel())") as s:
        r2 = SparseGPRegressor(kernel=RBF() + WhiteKernel(), random_state=0).fit(
            Xtr, ytr).score(Xte, yte)
        s.outcome = f"test R² {r2:.3f}"

    Xb, yb = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(Xb, yb, random_state=0, stratify=yb)
    with _Step(rows, "breast cancer: LDGD() defaults") as s:
        clf = LDGD(random_state=0).fit(Xtr, ytr)
        p = clf.predict_proba(Xte)
        s.outcome = (f"accuracy {clf.score(Xte, yte):.3f}, log loss {log_loss(yte, p):.3f}, "
                     f"least probability {p.min():.2e}")

    rng = np.random.RandomState(0)
    x = rng.uniform(-2, 2, 400)
    yb2 = np.where(rng.rand(400) < 0.5, np.sin(2 * x), -np.sin(2 * x)) + 0.05 * rng.randn(400)
    with _Step(rows, "bimodal toy: GPCDE() and PredictiveDensityDisplay") as s:
        cde = GPCDE(random_state=0).fit(x[:, None], yb2)
        disp = PredictiveDensityDisplay.from_estimator(cde, x[:, None], yb2)
        disp.figure_.savefig(os.path.join(here, "first_hour_gpcde_density.png"), dpi=80)
        base = SparseGPRegressor(random_state=0).fit(x[:, None], yb2)
        s.outcome = (f"mean log density {cde.predict_log_density(x[:, None], yb2).mean():.3f} "
                     f"(SparseGPRegressor {base.predict_log_density(x[:, None], yb2).mean():.3f});"
                     " first_hour_gpcde_density.png")
    with _Step(rows, "verbose=1 fit (UnscentedGPLVM on 300 digits, max_iter=30)") as s:
        UnscentedGPLVM(random_state=0, verbose=1, max_iter=30).fit(X[:300])
        s.outcome = "see the lines"

    with open(out, "w") as f:
        f.write("# The first-hour walk (`benchmarks/first_hour_walk.py`)\n\n")
        f.write("Command: `PYTHONPATH=. NUMBA_CACHE_DIR=$(mktemp -d) MPLBACKEND=Agg python "
                "benchmarks/first_hour_walk.py --out examples/output/first_hour_walk.md` "
                "(a fresh numba cache: the first fits compile).\n\n")
        for name, seconds, outcome, warned, lines in rows:
            f.write(f"## {name}\n\n- time: {seconds:.1f} s\n- outcome: {outcome}\n")
            f.write("- warnings: " + ("none" if not warned else "") + "\n")
            for w in warned:
                f.write(f"  - {w}\n")
            if lines:
                f.write("- package output (first 12 lines):\n\n")
                for ln in lines[:12]:
                    f.write(f"      {ln}\n")
            f.write("\n")
    print(open(out).read())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="examples/output/first_hour_walk.md")
    main(parser.parse_args().out)
