"""Benchmark ``dvmgp_bound_grad``: one DVMGP bound + gradient against the GPLVM bound of that size.

What is timed is what the optimiser calls once per iteration inside
:meth:`sklearn_lvgp.models._dvmgp.DVMGP.fit`: unpack the flat unconstrained vector, evaluate the
ELBO
(projection layer → latent Gaussians → closed-form RBF Ψ → collapsed bound, minus KL(q(V))) and
its gradient, and pack the gradient. The baseline, timed in the same interleaved repeats, is the
analytic-RBF :class:`~sklearn_lvgp.UnscentedGPLVM` objective (``bench_fit.make_objective``) with
the same N, Q, M and one output column: the two share the Ψ-statistics and the bound, so the ratio
is the cost of the projection layer (Q GPs with m_v = 25 inducing inputs over D inputs, de
Souza 2020, §4.3.1 and app. A).

Sizes: the synthetic experiment (N = 250, D = Q = 2, m_u = 50) and a UCI-like one (N = 1000,
D = Q = 8, m_u = 50), 1 thread. Run standalone (``python benchmarks/bench_dvmgp.py [--quick]``) or
through ``run.py`` once registered there.
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

import bench_fit  # noqa: E402

from sklearn_lvgp._core.parallel import threads  # noqa: E402
from sklearn_lvgp.bounds._dvmgp import dvmgp_objective as _elbo_and_grads  # noqa: E402
from sklearn_lvgp.models._dvmgp import DVMGP  # noqa: E402

NAME = "dvmgp_bound_grad"
SIZES = [(250, 2, 50, 25), (1000, 8, 50, 25)]
QUICK_SIZES = [(250, 2, 50, 25), (500, 8, 30, 15)]


def dvmgp_objective(N, D, M, m_v, qv_covariance="diag", seed=0):
    """The DVMGP optimiser objective at a mid-optimisation point; plus ``x0``."""
    rs = np.random.RandomState(seed)
    X = rs.standard_normal((N, D))
    Y = np.sin(X @ rs.standard_normal(D))[:, None] + 0.1 * rs.standard_normal((N, 1))
    Q = D
    packer = DVMGP(qv_covariance=qv_covariance)._packer(Q, D, M, m_v)
    p = {"zeta": rs.standard_normal((M, Q)), "Xi": X[rs.choice(N, m_v, replace=False)],
         "mu": rs.standard_normal((Q, m_v, D)) / np.sqrt(D),
         "c_diag": rs.uniform(0.05, 0.5, (Q, m_v)),
         "c_off": 0.01 * rs.standard_normal((Q, m_v * (m_v - 1) // 2)),
         "wtheta": np.column_stack([np.zeros(Q), np.full((Q, D), np.log(np.sqrt(D / 2.0)))]),
         "signal_std": 1.0, "noise": 0.05}
    x0 = packer.pack(p)

    def objective(flat):
        q = packer.unpack(flat)
        value, grads, _ = _elbo_and_grads(X, Y, q, 1e-6, qv_covariance)
        return -value, -packer.pack_grad(grads, q)

    return objective, x0


def gplvm_objective(N, Q, M, seed=0):
    """The analytic-RBF GPLVM objective with the same N, Q, M and one output column."""
    prob = bench_fit.make_problem(N=N, D=1, Q=Q, M=M, seed=seed)
    return bench_fit.make_objective("RBF", "analytic", prob)


def run(quick=False, repeats=None):
    """Interleaved timings of both objectives at each size (1 thread)."""
    repeats = repeats or (3 if quick else 15)
    out = {"repeats": repeats, "threads": 1, "sizes": []}
    for N, D, M, m_v in (QUICK_SIZES if quick else SIZES):
        runners = {}
        for name, (fun, x0) in {
            "GPLVM (analytic RBF)": gplvm_objective(N, D, M),
            "DVMGP diag q(V)": dvmgp_objective(N, D, M, m_v, "diag"),
            "DVMGP full q(V)": dvmgp_objective(N, D, M, m_v, "full"),
        }.items():
            runners[name] = timed(lambda fun=fun, x0=x0: fun(x0))
        with threads(1):
            times = interleaved(runners, repeats, warmup=2)
        base = times["GPLVM (analytic RBF)"]
        out["sizes"].append({
            "N": N, "D": D, "Q": D, "M": M, "m_v": m_v,
            "results": {name: {"seconds": summary(t), "ratio_to_gplvm": ratio_summary(t, base),
                               "raw": t.tolist()} for name, t in times.items()}})
    return out


def report(res):
    """Markdown table of :func:`run`."""
    rows = []
    for size in res["sizes"]:
        tag = f"N={size['N']}, D=Q={size['D']}, m_u={size['M']}, m_v={size['m_v']}"
        for name, e in size["results"].items():
            rows.append([tag, name, fmt_ms(e["seconds"]), fmt_ratio(e["ratio_to_gplvm"])])
    head = (f"### dvmgp_bound_grad — one bound + gradient, {res['threads']} thread, "
            f"{res['repeats']} interleaved repeats\n\n")
    return head + markdown_table(["size", "objective", "ms: median [min–max]",
                                  "÷ GPLVM (per repeat)"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    res = run(quick=args.quick, repeats=args.repeats)
    write_json(NAME, res, quick=args.quick)
    print(report(res))


if __name__ == "__main__":
    main()
