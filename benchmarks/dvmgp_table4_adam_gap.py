"""Why the dissertation's Adam schedule gives our DVMGP a larger Table 4 RMSE (a diagnostic).

de Souza (2020), Table 4, reports one DVMGP fit with RMSE 0.129 on the two-parabola test split;
our fit with the same Adam schedule (lr 0.01, 2000 steps with the noise fixed, then 5000) from
the same K-means seed scores 0.26-0.28. This script scores the Adam schedule from several
K-means seeds, the L-BFGS-B schedule, and two emulations of details of the authors' GPflow 1
code that differ from ours, and it splits each RMSE into the test points where the two
clusters overlap and the rest:

* ``softplus``: Adam on GPflow 1's positive transform ``softplus(r) + 1e-6`` of the W-kernel
  variances and length scales, the q(V) Cholesky diagonal, σ_f and σ², instead of their logs;
* ``jitter``: GPflow 1's absolute jitter 1e-6 on ``σ² K_u + Ψ2`` (in the authors' units, where
  ``K_u`` has unit variance), which enters the log-determinant and the solve of the collapsed
  bound but not its trace term;
* ``both``: the two together.

Both emulations wrap private functions of the package for the duration of one fit; they are
diagnostics, not options of the estimator.

The reference is the Bayes-optimal prediction, the mixture mean of the two parabolas under the
known generating process (cluster posterior of each test input).

Usage::

    python benchmarks/dvmgp_table4_adam_gap.py [--processes 2] [--out PATH.md]

17 fits of 30-110 s each (about 12 minutes on two cores).
"""

import argparse
import json
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np
from sklearn.model_selection import KFold

SEED = 19960111
ADAM = dict(optimizer="adam", learning_rate=0.01, n_iter_fixed_noise=2000, max_iter=5000)
LBFGS = dict(optimizer="lbfgs", n_iter_fixed_noise=500, max_iter=2000)
RUNS = ([("adam", s, "none") for s in (SEED, 0, 1, 2, 3, 4, 5, 6, 7, 8)]
        + [("lbfgs", SEED, "none")]
        + [("adam", s, e) for e in ("softplus", "jitter", "both") for s in (SEED, 3)])
LOWER = 1e-6  # GPflow 1: transforms.positive = Log1pe(lower=1e-6); settings.jitter = 1e-6


def split():
    """The Table 4 split, with each test point's posterior probability of cluster 2."""
    from sklearn_lvgp.datasets import make_two_parabolas

    X, y = make_two_parabolas()
    train, test = next(iter(KFold(2, shuffle=True, random_state=SEED).split(X)))
    Xt = X[test]
    d1 = ((Xt - [-1.0, 1.0]) ** 2).sum(axis=1)
    d2 = ((Xt - [2.0, 1.0]) ** 2).sum(axis=1)
    p2 = 1.0 / (1.0 + np.exp(-(d1 - d2) / (2 * 0.4)))
    bayes = (1 - p2) * (Xt[:, 0] ** 2 + Xt[:, 0]) + p2 * (Xt[:, 1] ** 2 + Xt[:, 1])
    return X[train], Xt, y[train], y[test], p2, bayes


def _softplus_adam(module, packer):
    """Adam on softplus(r) + 1e-6 in place of log for the positive blocks."""
    orig = module.minimize_adam
    idx = np.concatenate([np.arange(packer.size)[packer.slice(b)]
                          for b in ("c_diag", "wtheta", "signal_std", "noise")])

    def sp(r):
        return np.logaddexp(0.0, r)

    def to_x(r):
        x = r.copy()
        x[idx] = np.log(sp(r[idx]) + LOWER)
        return x

    def wrapped(fun, x0, **kw):
        r0 = x0.copy()
        v = np.exp(x0[idx]) - LOWER
        r0[idx] = v + np.log(-np.expm1(-v))

        def f(r):
            value, g = fun(to_x(r))
            g = g.copy()
            g[idx] *= (1.0 / (1.0 + np.exp(-r[idx]))) / (sp(r[idx]) + LOWER)
            return value, g

        res = orig(f, r0, **kw)
        return res._replace(x=to_x(res.x))

    module.minimize_adam = wrapped


def _absolute_jitter(bound_module):
    """The collapsed bound with 1e-6 I on σ² K_u + Ψ2 (authors' units; here times σ_f²)."""
    from sklearn_lvgp._core.linalg import solve_lower

    orig_bound, orig_vjp = bound_module.collapsed_bound_from_stats, bound_module.collapsed_stats_vjp
    last = {}

    def bound(N, D, psi0, PY, Psi2, YY, Kuu, s2, *, jitter=1e-6, max_tries=0):
        M = Kuu.shape[0]
        eps = LOWER * float(np.trace(Kuu)) / M
        F, post = orig_bound(N, D, psi0, PY, Psi2 + eps * np.eye(M), YY, Kuu, s2,
                             jitter=jitter, max_tries=max_tries)
        Li = solve_lower(post.L, np.eye(M))
        Kinv = Li.T @ Li
        # the shifted Ψ2 also entered tr(K_u⁻¹Ψ2)/σ², which the authors' bound leaves unjittered
        C = -0.5 * D * eps * float(np.trace(Kinv)) / float(s2)
        last.update(post=post, Kinv=Kinv, eps=eps, s2=float(s2), D=D, M=M, jit=jitter, C=C)
        return F + C, post

    def vjp(post):
        adj = orig_vjp(post)
        L = last
        s2, D, M = L["s2"], L["D"], L["M"]
        G = 0.5 * D * L["eps"] / s2 * (L["Kinv"] @ L["Kinv"])
        dK = G + L["jit"] * np.trace(G) / M * np.eye(M)
        deps = float(np.trace(adj.Psi2)) - 0.5 * D * float(np.trace(L["Kinv"])) / s2
        dK += deps * LOWER / M * np.eye(M)
        return adj._replace(Kuu=adj.Kuu + dK, noise_variance=adj.noise_variance - L["C"] / s2)

    bound_module.collapsed_bound_from_stats, bound_module.collapsed_stats_vjp = bound, vjp


def fit(run):
    import sklearn_lvgp.bounds._dvmgp as bound_module
    import sklearn_lvgp.models._dvmgp as model_module
    from sklearn_lvgp import DVMGP

    schedule, seed, emulate = run
    if emulate in ("softplus", "both"):
        _softplus_adam(model_module, DVMGP()._packer(2, 2, 50, 25))
    if emulate in ("jitter", "both"):
        _absolute_jitter(bound_module)
    Xtr, Xte, ytr, yte, p2, _ = split()
    t0 = time.perf_counter()
    model = DVMGP(random_state=seed, **(ADAM if schedule == "adam" else LBFGS)).fit(Xtr, ytr)
    mean = model.predict(Xte)
    err = yte - mean
    overlap = np.minimum(p2, 1 - p2) > 0.05
    return dict(schedule=schedule, seed=seed, emulate=emulate,
                nlpd=-float(np.mean(model.predict_log_density(Xte, yte))),
                mrae=float(np.mean(np.abs(err) / np.abs(yte))),
                rmse=float(np.sqrt(np.mean(err ** 2))),
                rmse_rest=float(np.sqrt(np.mean(err[~overlap] ** 2))),
                overlap_abs_err=np.round(np.sort(np.abs(err[overlap]))[::-1][:3], 2).tolist(),
                elbo=float(model.elbo_history_[-1]), noise=float(model._params["noise"]),
                seconds=time.perf_counter() - t0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "examples"
                                         / "output" / "dvmgp_synthetic_table4_adam_gap.md"))
    args = ap.parse_args(argv)
    _, Xte, _, yte, p2, bayes = split()
    overlap = np.minimum(p2, 1 - p2) > 0.05
    with Pool(args.processes, maxtasksperchild=1) as pool:  # the emulations patch modules
        rows = pool.map(fit, RUNS, chunksize=1)
    Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=1))
    lines = ["| schedule | K-means seed | emulation | NLPD | MRAE | RMSE | RMSE without the "
             f"{int(overlap.sum())} overlap points | largest overlap errors | final bound | "
             "noise (normalised) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['schedule']} | {r['seed']} | {r['emulate']} | {r['nlpd']:.3f} | "
                     f"{r['mrae']:.3f} | {r['rmse']:.3f} | {r['rmse_rest']:.3f} | "
                     f"{r['overlap_abs_err']} | {r['elbo']:.1f} | {r['noise']:.1e} |")
    berr = yte - bayes
    lines.append(f"| Bayes-optimal mixture mean | — | — | — | "
                 f"{np.mean(np.abs(berr) / np.abs(yte)):.3f} | {np.sqrt(np.mean(berr ** 2)):.3f} | "
                 f"{np.sqrt(np.mean(berr[~overlap] ** 2)):.3f} | "
                 f"{np.round(np.sort(np.abs(berr[overlap]))[::-1][:3], 2).tolist()} | — | — |")
    lines.append("| dissertation DVMGP (one fit, Adam) | 19960111 | — | -1.883 | 0.040 | 0.129 "
                 "| — | — | — | — |")
    cmd = "python benchmarks/dvmgp_table4_adam_gap.py"
    text = ("\n".join(lines) + f"\n\nCommand: `{cmd}`. Overlap points: test inputs whose "
            "posterior probability of either cluster under the generating process exceeds "
            "0.05. Adam: lr 0.01, 2000 steps (noise fixed) + 5000; L-BFGS-B: 500 + 2000.\n")
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
