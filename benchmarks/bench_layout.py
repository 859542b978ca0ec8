"""Single-thread bound + gradient at N = 10³ of every chunked objective, for a before/after
comparison of a refactor: run it with one checkout's package on ``PYTHONPATH``, then the other's,
interleaved, and compare the medians (``--out`` writes the JSON). ``--n-rows`` sets N (the deep
GP's too), ``--threads`` the thread count.

    PYTHONPATH=<checkout> python benchmarks/bench_layout.py --out <file>.json

It imports the objectives from their current module paths, or from those before the package's
layout by concept (commit 47aa8ee), so the same script times both.
"""

import argparse
import importlib
import json
import time

import numpy as np


def _first(*paths):
    """The first of ``paths`` that the package on the path defines. An editable install of
    another checkout can answer a module path this checkout lacks, so a module from outside
    the imported package's folder is refused."""
    import os

    import sklearn_lvgp

    root = os.path.dirname(sklearn_lvgp.__file__)
    for path in paths:
        module, _, name = path.rpartition(".")
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        if hasattr(mod, name) and os.path.realpath(mod.__file__).startswith(root):
            return getattr(mod, name)
    raise ImportError(paths)


def _cases(N=1000):
    from sklearn_lvgp.kernels import RBF, Matern32

    psi_bound = _first("sklearn_lvgp.bounds._collapsed.CollapsedPsiBound",
                       "sklearn_lvgp._engine._collapsed.CollapsedPsiBound")
    kernel_bound = _first("sklearn_lvgp.bounds._collapsed.CollapsedKernelBound",
                          "sklearn_lvgp._engine._collapsed.CollapsedKernelBound")
    make_rule = _first("sklearn_lvgp.expectations.make_rule", "sklearn_lvgp._psi.make_rule")
    r = np.random.default_rng(0)
    D, Q, M = 12, 5, 50
    Y = r.standard_normal((N, D))
    mu, S = r.standard_normal((N, Q)), r.uniform(0.1, 0.5, (N, Q))
    Z = r.standard_normal((M, Q))
    rbf = RBF(length_scale=np.ones(Q)).initialize(Q, np.random.RandomState(0))
    mat = Matern32(length_scale=np.ones(Q)).initialize(Q, np.random.RandomState(0))
    X = r.uniform(-2, 2, (N, Q))
    cases = {}
    for name, kernel, rule in (("collapsed Psi, analytic RBF", rbf, "analytic"),
                               ("collapsed Psi, unscented Matern32", mat, "unscented")):
        bound = psi_bound(Y)
        rl = make_rule(rule, kernel, Q)[1]
        cases[name] = (lambda b=bound, k=kernel, rl=rl:
                       b.evaluate(k, Z, mu, S, 0.3, rl))
    kb = kernel_bound(X, Y)
    cases["collapsed kernel (SGPR)"] = lambda: kb.evaluate(rbf, Z, 0.3)
    return cases


def _deep_gp_case(N=1000):
    import warnings

    from sklearn_lvgp import DeepGP

    r = np.random.default_rng(1)
    X = r.uniform(-2, 2, (N, 4))
    y = np.sin(X[:, 0]) + 0.1 * r.standard_normal(N)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DeepGP(n_layers=2, n_inducing=50, max_iter=1, random_state=0).fit(X[:1000],
                                                                                  y[:1000])
    Xs = (X - model.X_mean_) / model.X_scale_
    Ys = ((y[:, None] - model.y_mean_) / model.y_scale_)
    return lambda: model._model.elbo(model._x, Xs, Ys, 1.0, 1, np.random.RandomState(0))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out")
    parser.add_argument("--n-rows", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    cases = _cases(args.n_rows)
    cases["DeepGP bound + gradient (2 layers)"] = _deep_gp_case(args.n_rows)
    out = {}
    thr = _first("sklearn_lvgp._core.parallel.threads", "sklearn_lvgp._parallel.threads")
    with thr(args.threads):
        for name, fn in cases.items():
            fn()
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            out[name] = {"median_ms": 1e3 * float(np.median(times)),
                         "min_ms": 1e3 * float(np.min(times))}
            print(f"{name:40s} {out[name]['median_ms']:8.2f} ms")  # noqa: T201
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
