"""Why our Monte Carlo GPLVM scores higher on oil flow than de Souza et al. (2021), Table 1.

de Souza et al. (2021, ``souza2021learning``), Table 1, report 1-NN accuracies on the 100-point
oil-flow subset with the Matérn-3/2 kernel of 85.6 % (Monte Carlo, 10 samples) and 87.9 % (32
samples) against 100.0 % for the unscented transform; our run of the table
(``examples/plot_unscented_gplvm_oil_flow.py``) gives 97.1 % and 97.7 % for the Monte Carlo rows.
The protocol already matches what the authors' public code does in the places read for this
script (GitHub ``spectraldani/UnscentedGPLVM``: ``library/expectations.py``,
``library/gplvm.py``, ``dimred.ipynb``): the Monte Carlo nodes are redrawn at every objective
evaluation (reparameterised) and the fit is Adam at learning rate 0.01 for 5000 steps, ten runs;
Q = 5, M = 20, noise 0.01, latent variances 0.1, unwhitened PCA start, raw data. What differs:

* ``Q``: the notebook's final state builds the Matérn model with ``input_dim`` 10 and draws
  ``{2Q, 2**Q, 200}`` Monte Carlo samples (20, 1024, 200), while Table 1 lists 10, 32 and 200
  (2Q and 2**Q at Q = 5);
* the positive parameters: GPflow 1.x optimises them through a softplus, we through a log; Adam's
  step is a fixed size in the unconstrained coordinate, so the two follow different paths;
* the start: the notebook reseeds before every run, so its ten runs share one start (inducing
  inputs a seeded permutation of the PCA rows) and differ only in the Monte Carlo stream; ours
  draw the inducing rows with each run's ``random_state``.

Each ``--configs`` entry tests one of these on the 100-point subset with the Matérn-3/2 kernel,
5000 Adam steps at lr 0.01, the paper's scoring (5-fold 1-NN accuracy on the two most relevant
latent dimensions, ``KFold(5, shuffle=True, random_state=42)``, mean ± std over folds × runs):

``est``
    ``UnscentedGPLVM`` as in the example (log parameterisation, run ``r`` uses
    ``random_state=r``);
``log`` / ``softplus``
    the same collapsed bound and Adam from this package, written out here so that the positive
    parameters (latent variances, kernel variance and length scales, noise) can go through a
    softplus as in GPflow 1.x; one shared start as in the notebook (Z: rows of the PCA start
    permuted with seed 42, unit length scales and variance), run ``r`` draws the Monte Carlo
    stream from seed ``r``. ``log`` is the control of the same loop. ``softplus_S``,
    ``softplus_pos`` and ``softplus_noise`` put the softplus on one block only (latent
    variances; the kernel's variance and length scales; the noise variance), the log on the
    others.

Entries are ``mode:Q:rule:samples:runs`` (``rule`` ``mc``, ``ut`` or ``ut-adam``: the unscented
rule fitted with the Monte Carlo rows' Adam instead of L-BFGS-B; ``log`` and ``softplus`` always
use Adam). Subset: runs per entry as given
(the paper: ten), the Matérn rows only.

Usage::

    python benchmarks/seed_oil_mc.py [--configs est:5:mc:10:10,...] [--steps 5000]

Writes ``benchmarks/results/seed_oil_mc.json`` (each run's fold accuracies and time) and
``examples/output/seed_oil_mc.md``.
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS_DIR, ensure_repo_on_path, write_json  # noqa: E402

ensure_repo_on_path()

from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from sklearn_lvgp import UnscentedGPLVM  # noqa: E402
from sklearn_lvgp._core.init import pca_latents, select_inducing  # noqa: E402
from sklearn_lvgp._core.params import ParamPacker  # noqa: E402
from sklearn_lvgp.bounds._collapsed_masked import collapsed_psi_bound  # noqa: E402
from sklearn_lvgp.datasets import fetch_oil_flow  # noqa: E402
from sklearn_lvgp.expectations import make_rule, monte_carlo_rule  # noqa: E402
from sklearn_lvgp.kernels import Matern32  # noqa: E402
from sklearn_lvgp.optim._lbfgsb import minimize_adam  # noqa: E402
from sklearn_lvgp.utils.evaluation import knn_accuracy  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"
OUT = REPO / "examples" / "output" / "seed_oil_mc.md"
#: Table 1 of the paper, Matérn 3/2 rows (mean, std of 1-NN accuracy, %)
PAPER = {("ut", 10): (100.0, 0.0), ("mc", 10): (85.6, 8.7), ("mc", 32): (87.9, 5.4),
         ("mc", 200): (95.4, 3.0)}
DEFAULT = ("est:5:mc:10:10,est:5:mc:32:5,est:5:ut-adam:10:1,log:5:mc:10:10,softplus:5:mc:10:10,"
           "softplus:5:mc:32:5,softplus:5:ut:10:1,est:10:ut:20:1,est:10:mc:20:10,est:10:mc:200:2")


def _softplus(u):
    return np.logaddexp(0.0, u)


def _softplus_inv(v):
    return v + np.log(-np.expm1(-v))


def estimator_run(Y, Q, rule, samples, run, steps):
    """``UnscentedGPLVM`` with the example's settings; returns latent means and relevance."""
    expectation = {"mc": "monte_carlo", "ut": "unscented", "ut-adam": "unscented"}[rule]
    model = UnscentedGPLVM(
        n_components=Q, n_inducing=20, kernel=Matern32(np.ones(Q)), expectation=expectation,
        n_samples=samples, init="pca_unscaled", latent_variance_init=0.1,
        noise_variance_init=0.01, normalize_X="none", max_iter=steps, learning_rate=0.01,
        optimizer="adam" if rule == "ut-adam" else "auto", random_state=run)
    model.fit(Y)
    return model.latent_mean_, model.relevance_


def loop_run(Y, Q, rule, samples, run, steps, transform):
    """The collapsed bound under Adam with ``transform`` on the positive parameters.

    One start for every run (as the authors' notebook reseeds before each): PCA scores, Z = 20
    rows of them permuted with seed 42, unit variance and length scales, S = 0.1, noise 0.01.
    """
    N = Y.shape[0]
    mu0 = pca_latents(Y, Q)
    Z0 = select_inducing(mu0, 20, np.random.RandomState(42))
    kernel = Matern32(np.ones(Q)).initialize(Q, np.random.RandomState(0))
    bound = collapsed_psi_bound(Y)
    stream = np.random.RandomState(run)
    fixed = None if rule == "mc" else make_rule("unscented", kernel, Q, n_points=N)[1]
    # "softplus" on every positive block, "softplus_<block>" on that block only (S: latent
    # variances, pos: kernel variance and length scales, noise), the log on the others
    tr = {b: "softplus" if transform in ("softplus", f"softplus_{b}") else "log"
          for b in ("S", "pos", "noise")}
    packer = ParamPacker([("mu", (N, Q)), ("S", (N, Q), tr["S"]), ("Z", Z0.shape),
                          ("pos", (kernel.n_theta,), tr["pos"]), ("noise", (), tr["noise"])])
    work = kernel.clone()

    def objective(flat):
        p = packer.unpack(flat)
        work.theta = np.log(p["pos"])  # the kernel's theta is the log of its positive values
        r = monte_carlo_rule(samples, Q, stream, n_points=N) if fixed is None else fixed
        value, grads, _ = bound.elbo(work, p["Z"], p["mu"], p["S"], float(p["noise"]), r,
                                     jitter=1e-6)
        grads["pos"] = grads.pop("theta") / p["pos"]
        return -value, -packer.pack_grad(grads, p)

    x0 = packer.pack({"mu": mu0, "S": np.full((N, Q), 0.1), "Z": Z0,
                      "pos": np.exp(kernel.theta), "noise": 0.01})
    res = minimize_adam(objective, x0, learning_rate=0.01, max_iter=steps, tol=None)
    p = packer.unpack(res.x)
    work.theta = np.log(p["pos"])
    return p["mu"], work.relevance(Q)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", default=DEFAULT)
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--name", default="seed_oil_mc")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--report-only", action="store_true",
                    help="write the table of the rows already in the JSON, fit nothing")
    args = ap.parse_args(argv)
    data = {"data_home": SHARED, "download_if_missing": False} if SHARED.is_dir() else {}
    Y, labels = fetch_oil_flow(subset="gplvm100", return_X_y=True, **data)
    # rows of earlier invocations are kept (an entry run again replaces its row)
    path = RESULTS_DIR / f"{args.name}.json"
    rows = json.loads(path.read_text())["rows"] if path.exists() else []
    for entry in [] if args.report_only else args.configs.split(","):
        mode, Q, rule, samples, runs = entry.split(":")
        Q, samples, runs = int(Q), int(samples), int(runs)
        folds, seconds = [], []
        for run in range(runs):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                if mode == "est":
                    mu, rel = estimator_run(Y, Q, rule, samples, run, args.steps)
                else:
                    mu, rel = loop_run(Y, Q, rule, samples, run, args.steps, mode)
            top = np.argsort(-np.asarray(rel), kind="stable")[:2]
            acc = knn_accuracy(mu[:, top], labels)
            folds.append((100 * acc).tolist())
            seconds.append(time.perf_counter() - t0)
            print(f"{entry} run {run}: {100 * acc.mean():.1f} ({seconds[-1]:.1f} s)", flush=True)
        acc = np.asarray(folds).ravel()
        rows = [r for r in rows if (r["entry"], r["steps"]) != (entry, args.steps)]
        rows.append({"entry": entry, "mode": mode, "Q": Q, "rule": rule, "samples": samples,
                     "runs": runs, "steps": args.steps, "mean": float(acc.mean()),
                     "std": float(acc.std(ddof=1)), "run_means": np.mean(folds, 1).tolist(),
                     "folds": folds, "seconds": seconds})
        write_json(args.name, {"kernel": "Matern32", "data": "oil flow gplvm100", "rows": rows})
    label = {"est": "UnscentedGPLVM (log, start per run)",
             "log": "same bound, log, one shared start",
             "softplus": "same bound, softplus (GPflow 1.x), one shared start",
             "softplus_S": "as above, softplus on the latent variances only",
             "softplus_pos": "as above, softplus on the kernel's variance and length scales",
             "softplus_noise": "as above, softplus on the noise variance only"}
    lines = ["| parameterisation and start | Q | rule | # evals | runs | ours (%) | run means "
             "min–max | paper (%) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rule = {"mc": "Monte Carlo", "ut": "unscented, L-BFGS-B" if r["mode"] == "est" else
                "unscented, Adam", "ut-adam": "unscented, Adam"}[r["rule"]]
        # the paper's row with the same rule and optimiser (its unscented rows: L-BFGS-B)
        same = r["Q"] == 5 and (r["rule"] == "mc" or (r["rule"], r["mode"]) == ("ut", "est"))
        paper = PAPER.get((r["rule"], r["samples"])) if same else None
        paper = f"{paper[0]:.1f} ± {paper[1]:.1f}" if paper else "–"
        lines.append(f"| {label[r['mode']]} | {r['Q']} | {rule} | {r['samples']} | {r['runs']} "
                     f"| {r['mean']:.1f} ± {r['std']:.1f} | {min(r['run_means']):.1f}–"
                     f"{max(r['run_means']):.1f} | {paper} |")
    text = ("Oil flow, 100-point subset, Matérn 3/2, " f"{args.steps} steps "
            "(de Souza et al. 2021, Table 1, Monte Carlo rows): "
            "`python benchmarks/seed_oil_mc.py`\n\n" + "\n".join(lines) + "\n")
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
