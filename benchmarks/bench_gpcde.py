"""GPCDE benchmark: seconds per training iteration, quadrature vs amortised ``q(w)``.

``iteration`` (issue 6): N = 10,000 rows (synthetic heteroscedastic data, D_x = 4, D_y = 1), M = 100
inducing points (Salimbeni 2020, §4.4), minibatch 512 (the authors' public IWVI code), 1 thread. One
iteration is what ``fit`` does per step: one natural-gradient step on ``q(u)`` plus one bound +
gradient evaluation for Adam, each on its own minibatch. Variants:

* amortised Gaussian ``q(w)``, 1 Monte Carlo sample (the baseline of the ratios);
* amortised with the unscented expectation (2 points);
* quadrature with H = 20 and H = 100 Gauss–Hermite nodes (H times the evaluation points).

Ratios are formed per interleaved repeat against the amortised step measured in the same run.

Run standalone (``python benchmarks/bench_gpcde.py [--quick]``) or through ``run.py`` once
registered there.
"""

import argparse

import numpy as np
from _common import (
    ensure_repo_on_path,
    fmt_ms,
    fmt_ratio,
    interleaved,
    markdown_table,
    ratio_summary,
    summary,
    timed,
    write_json,
)

ensure_repo_on_path()

from sklearn_lvgp import GPCDE  # noqa: E402
from sklearn_lvgp._core.parallel import threads  # noqa: E402

VARIANTS = {"amortised (MC, S=1)": {"q_w": "amortized"},
            "amortised (unscented)": {"q_w": "amortized", "expectation": "unscented"},
            "quadrature H=20": {"q_w": "quadrature", "gh_order": 20},
            "quadrature H=100": {"q_w": "quadrature", "gh_order": 100}}
BASELINE = "amortised (MC, S=1)"


def _problem(N, D, seed=0):
    rs = np.random.RandomState(seed)
    X = rs.randn(N, D)
    f = np.sin(X @ rs.randn(D))
    y = f + (0.1 + 0.5 * np.abs(X[:, 0])) * rs.standard_t(4, N)
    return X, y


def run_iteration(quick=False, repeats=None):
    """Time one fit iteration (natgrad step + bound and gradient) per variant."""
    N = 2000 if quick else 10_000
    M = 50 if quick else 100
    B = 512
    repeats = repeats or (3 if quick else 7)
    X, y = _problem(N, 4)
    runners = {}
    for name, kw in VARIANTS.items():
        m = GPCDE(gh_order=100, n_inducing=M, batch_size=B, max_iter=1, init="prior",
                  optimizer="adam", random_state=0, **kw).fit(X, y)
        model, x0 = m._model, m._x.copy()
        Xs = (X - m.X_mean_) / m.X_scale_
        Ys = ((y - m.y_mean_) / m.y_scale_)[:, None]
        rs = np.random.RandomState(0)

        def step(model=model, x0=x0, Xs=Xs, Ys=Ys, rs=rs):
            i1, i2 = rs.choice(N, B, replace=False), rs.choice(N, B, replace=False)
            x = model.natgrad(x0, Xs[i1], Ys[i1], i1, N / B, 0.1, rs)
            f, g = model.elbo(x, Xs[i2], Ys[i2], i2, N / B, rs)
            return x - 0.01 * np.sign(g)

        runners[name] = timed(step)
    with threads(1):
        times = interleaved(runners, repeats, warmup=1)
    out = {"N": N, "batch": B, "D": 4, "M": M, "repeats": repeats, "threads": 1, "results": {}}
    for name, t in times.items():
        out["results"][name] = {"seconds": summary(t), "ratio_to_amortised": ratio_summary(
            t, times[BASELINE]), "raw": t.tolist()}
    return out


def report_iteration(res):
    """Markdown table of :func:`run_iteration`."""
    rows = [[name, fmt_ms(e["seconds"]), fmt_ratio(e["ratio_to_amortised"])]
            for name, e in res["results"].items()]
    head = (f"### gpcde iteration — natgrad step + bound/gradient, N = {res['N']}, batch = "
            f"{res['batch']}, D = {res['D']}, M = {res['M']}, {res['threads']} thread, "
            f"{res['repeats']} interleaved repeats\n\n")
    return head + markdown_table(["variant", "ms per iteration: median [min–max]",
                                  "÷ amortised (per repeat)"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    res = run_iteration(quick=args.quick, repeats=args.repeats)
    write_json("gpcde_iteration", res, quick=args.quick)
    print(report_iteration(res))


if __name__ == "__main__":
    main()
