"""Benchmarks of the Ψ-statistics alone: ``psi_scaling`` (cost vs Q) and ``psi2_gemm`` (Ψ2 rate).

``psi_scaling`` reproduces the timing study of de Souza et al. (2021, §3.3 and Fig. 1; de Souza
2020, Fig. 1): RBF (ℓ=1, σ²=1) Ψ-statistics at N=40, M=20 with means and inducing inputs drawn from
N(0, I) and variances S ~ U(0.05, 0.15) (S/ℓ² ≈ 0.1), for Q = 1…10 with the closed form, the
unscented transform (2Q points), Gauss–Hermite of order 2 (2^Q points) and Monte Carlo with 200
points, and Q = 11…30 for the unscented transform alone. One timed call is ``psi_statistics``
followed by ``psi_vjp`` (forward and backward, as one objective evaluation needs), with one thread.
Reported: time per call, its ratio to the closed form in the same repeat (min/median/max), and the
relative Frobenius error of Ψ1 and Ψ2 against the closed form.

``psi2_gemm`` measures the throughput of the unscented forward pass (ψ0, Ψ1 and Ψ2) at
N=10⁵, M=100, Q=10 — its Ψ2 is the symmetric product Ksᵀ diag(w) Ks of the (N·2Q × M) matrix of
kernel values — against one plain ``X.T @ X`` of a (N·2Q × M) matrix, the GEMM floor of that
Ψ2, with 1 and 2 threads, and (1 thread) against evaluating the kernel matrix k(x_nk, Z) alone,
chunked like the forward pass.
"""

import numpy as np
from _common import (
    ensure_repo_on_path,
    fmt_ms,
    fmt_ratio,
    interleaved,
    interleaved_groups,
    markdown_table,
    ratio_summary,
    summary,
    timed,
)

ensure_repo_on_path()

# ------------------------------------------------------------------------------- psi_scaling


def _rel_err(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _fit_linear(q, t):
    """Least-squares ``t ≈ a + b q``; returns a, b and R²."""
    A = np.column_stack([np.ones_like(q), q])
    coef, *_ = np.linalg.lstsq(A, t, rcond=None)
    resid = t - A @ coef
    r2 = 1.0 - float(resid @ resid) / float(((t - t.mean()) ** 2).sum())
    return float(coef[0]), float(coef[1]), r2


def _scaling_point(Q, rules, N, M, repeats, seed):
    """Time forward+backward of each rule at one Q; errors against the closed form."""
    from sklearn_lvgp.expectations import make_rule, psi_statistics, psi_vjp
    from sklearn_lvgp.kernels import RBF

    rng = np.random.RandomState(seed + Q)
    mu = rng.standard_normal((N, Q))
    Z = rng.standard_normal((M, Q))
    S = rng.uniform(0.05, 0.15, (N, Q))
    kernel = RBF(length_scale=np.ones(Q), variance=1.0)
    d0 = 0.3
    d1 = rng.standard_normal((N, M))
    d2 = rng.standard_normal((M, M))
    resolved = {}
    for label, (expectation, kwargs) in rules.items():
        _, rule = make_rule(expectation, kernel, Q, random_state=np.random.RandomState(seed),
                            **kwargs)
        resolved[label] = rule
    stats = {label: psi_statistics(kernel, Z, mu, S, rule)[0] for label, rule in
             resolved.items()}
    ref = stats["analytic"]
    errors = {label: {"Psi1": _rel_err(s.Psi1, ref.Psi1), "Psi2": _rel_err(s.Psi2, ref.Psi2)}
              for label, s in stats.items() if label != "analytic"}

    def one(rule):
        def f():
            _, cache = psi_statistics(kernel, Z, mu, S, rule)
            psi_vjp(d0, d1, d2, cache)
        return f

    # several calls per measured run so that each run lasts ≳ 5 ms (timer resolution, noise)
    runners = {}
    for label, rule in resolved.items():
        f = one(rule)
        f()
        single = min(timed(f)() for _ in range(3))
        number = int(max(1, min(2000, np.ceil(5e-3 / max(single, 1e-7)))))

        def loop(f=f, number=number):
            for _ in range(number):
                f()

        runners[label] = (timed(loop), number)
    times = interleaved({k: v[0] for k, v in runners.items()}, repeats, warmup=1)
    out = {"Q": Q, "points": {label: int(rule.n_points) if rule != "analytic" else None
                              for label, rule in resolved.items()}}
    for label in resolved:
        per_call = times[label] / runners[label][1]
        out[label] = {"seconds": summary(per_call), "calls_per_run": runners[label][1]}
        if label != "analytic":
            out[label]["ratio_to_analytic"] = ratio_summary(times[label] / runners[label][1],
                                                            times["analytic"]
                                                            / runners["analytic"][1])
            out[label]["error"] = errors[label]
    return out


def run_scaling(quick=False, repeats=None):
    """``psi_scaling``: Ψ cost and accuracy against Q (JSON-serialisable dict)."""
    from sklearn_lvgp._core.parallel import threads

    N, M = 40, 20
    repeats = repeats or (5 if quick else 21)
    q_all = range(1, 7) if quick else range(1, 11)
    q_ut = range(7, 11) if quick else range(11, 31)
    full = {"analytic": ("analytic", {}), "UT": ("unscented", {}),
            "GH(2)": ("gauss_hermite", {"gh_order": 2}),
            "MC(200)": ("monte_carlo", {"n_samples": 200})}
    ut_only = {"analytic": full["analytic"], "UT": full["UT"]}
    points = []
    with threads(1):
        for Q in q_all:
            points.append(_scaling_point(Q, full, N, M, repeats, seed=0))
        for Q in q_ut:
            points.append(_scaling_point(Q, ut_only, N, M, repeats, seed=0))
    med = {label: (np.array([p["Q"] for p in points if label in p], float),
                   np.array([p[label]["seconds"]["median"] for p in points if label in p]))
           for label in full}
    shape = {}
    q, t = med["UT"]
    a, b, r2 = _fit_linear(q, t)
    shape["UT_linear_fit"] = {"intercept_s": a, "slope_s_per_Q": b, "r2": r2,
                              "Q_range": [int(q.min()), int(q.max())]}
    # log-log slope of the UT time between Q=5 and the largest Q (1 = linear, 2 = quadratic)
    i5 = int(np.flatnonzero(q == 5)[0])
    shape["UT_loglog_slope_Q5_to_max"] = float(np.log(t[-1] / t[i5]) / np.log(q[-1] / q[i5]))
    q, t = med["GH(2)"]
    tail = q >= min(6, q.max() - 2)
    slope = np.polyfit(q[tail], np.log(t[tail]), 1)[0]
    shape["GH_growth_per_Q"] = {"factor": float(np.exp(slope)),
                                "Q_range": [int(q[tail].min()), int(q[tail].max())],
                                "step_ratios": (t[1:] / t[:-1]).tolist()}
    return {"name": "psi_scaling", "quick": quick, "repeats": repeats, "N": N, "M": M,
            "S_range": [0.05, 0.15], "lengthscale": 1.0, "threads": 1, "points": points,
            "shape": shape}


def report_scaling(res):
    """Markdown tables of :func:`run_scaling`."""
    labels = ["UT", "GH(2)", "MC(200)"]
    head = (f"### psi_scaling — RBF Ψ forward+backward, N={res['N']}, M={res['M']}, "
            f"S ~ U{tuple(res['S_range'])}, ℓ=1, 1 thread ({res['repeats']} repeats)\n\n")
    header = ["Q", "analytic ms"] + [f"{lb} ms (÷ analytic)" for lb in labels] + \
        [f"{lb} Ψ1 / Ψ2 rel. err" for lb in labels]
    rows = []
    for p in res["points"]:
        row = [p["Q"], f"{1e3 * p['analytic']['seconds']['median']:.3g}"]
        for lb in labels:
            row.append(f"{1e3 * p[lb]['seconds']['median']:.3g} "
                       f"({fmt_ratio(p[lb]['ratio_to_analytic'])})" if lb in p else "—")
        for lb in labels:
            row.append(f"{p[lb]['error']['Psi1']:.1e} / {p[lb]['error']['Psi2']:.1e}"
                       if lb in p else "—")
        rows.append(row)
    s = res["shape"]
    lin = s["UT_linear_fit"]
    gh = s["GH_growth_per_Q"]
    notes = [
        "\n",
        f"- UT time vs Q (Q={lin['Q_range'][0]}…{lin['Q_range'][1]}): linear fit "
        f"{1e3 * lin['intercept_s']:.3g} ms + {1e3 * lin['slope_s_per_Q']:.3g} ms·Q, "
        f"R² = {lin['r2']:.3f}; log-log slope from Q=5 to Q={lin['Q_range'][1]}: "
        f"{s['UT_loglog_slope_Q5_to_max']:.2f} (1 = linear, 2 = quadratic).",
        f"- GH(2) time grows ×{gh['factor']:.2f} per added Q (fit over Q={gh['Q_range'][0]}…"
        f"{gh['Q_range'][1]}; 2.0 = doubling).",
    ]
    return head + markdown_table(header, rows) + "\n".join(notes)


# --------------------------------------------------------------------------------- psi2_gemm


def run_gemm(quick=False, repeats=None):
    """``psi2_gemm``: UT Ψ forward at large N against a GEMM of the same size."""
    from contextlib import contextmanager

    from sklearn_lvgp._core.parallel import threads
    from sklearn_lvgp.expectations import make_rule, psi_statistics
    from sklearn_lvgp.expectations._pointset import chunk_rows
    from sklearn_lvgp.kernels import RBF

    N = 10_000 if quick else 100_000
    M, Q = 100, 10
    default = 3 if quick else 5
    requested = repeats or default
    # at least 3 repeats; no more after 200 s (2-thread BLAS on a loaded box can be 50× slower)
    min_repeats, budget = (None, None) if (quick or repeats) else (3, 200.0)
    rng = np.random.RandomState(0)
    mu = rng.standard_normal((N, Q))
    S = rng.uniform(0.05, 0.2, (N, Q))
    Z = rng.standard_normal((M, Q))
    kernel = RBF(length_scale=np.linspace(1.0, 3.0, Q), variance=1.0)
    _, rule = make_rule("unscented", kernel, Q)
    K = rule.n_points
    X = rng.random_sample((N * K, M))
    chunk = chunk_rows(K, M)
    pts = (mu[:, None, :] + np.sqrt(S)[:, None, :] * rule.nodes).reshape(-1, Q)

    def forward():
        psi_statistics(kernel, Z, mu, S, rule)

    def gemm():
        X.T @ X

    def kernel_only():
        for a in range(0, N, chunk):
            kernel.K(pts[a * K:min(N, a + chunk) * K], Z)

    @contextmanager
    def ctx(n):
        with threads(n):
            yield

    # compile/warm on a small slice instead of unmeasured full-size runs (each is seconds)
    for n in (1, 2):
        with threads(n):
            psi_statistics(kernel, Z, mu[:2000], S[:2000], rule)
            kernel.K(pts[:2000 * K], Z)
            X[:2000].T @ X[:2000]

    # the kernel-only breakdown is taken with 1 thread (it is what explains the 1-thread ratio)
    groups = [((lambda: ctx(1)), {"UT forward|1": timed(forward), "GEMM|1": timed(gemm),
                                  "kernel K|1": timed(kernel_only)}),
              ((lambda: ctx(2)), {"UT forward|2": timed(forward), "GEMM|2": timed(gemm)})]
    # one block per thread count (spinning pool threads must not leak into 1-thread timings)
    times = {}
    for group in groups:
        times.update(interleaved_groups([group], requested, warmup=0, min_repeats=min_repeats,
                                        budget_s=budget))
    repeats = {str(n): len(times[f"GEMM|{n}"]) for n in (1, 2)}
    flops = float(N) * K * M * M  # multiply-adds of the symmetric product (one triangle ×2)
    out = {"name": "psi2_gemm", "quick": quick, "repeats": repeats,
           "repeats_requested": requested, "N": N, "M": M, "Q": Q,
           "points_per_row": K, "gemm_shape": [N * K, M], "results": {}}
    for n in (1, 2):
        g = times[f"GEMM|{n}"]
        r = {}
        for label in ("UT forward", "GEMM", "kernel K"):
            if f"{label}|{n}" not in times:
                continue
            t = times[f"{label}|{n}"]
            r[label] = {"seconds": summary(t), "ratio_to_gemm": ratio_summary(t, g)}
        r["GEMM"]["gflops"] = 2 * flops / np.median(g) / 1e9
        r["UT forward"]["psi2_equiv_gflops"] = 2 * flops / r["UT forward"]["seconds"]["median"] \
            / 1e9
        out["results"][n] = r
    return out


def report_gemm(res):
    """Markdown table of :func:`run_gemm`."""
    head = (f"### psi2_gemm — UT RBF forward (ψ0, Ψ1, Ψ2) at N={res['N']:,}, M={res['M']}, "
            f"Q={res['Q']} vs `X.T @ X` with X of shape {tuple(res['gemm_shape'])} "
            f"({res['repeats']['1']} repeats with 1 thread, {res['repeats']['2']} with 2)\n\n")
    header = ["what", "threads", "ms: median [min–max]", "÷ GEMM (same repeat)"]
    rows = []
    for label in ("UT forward", "kernel K", "GEMM"):
        for n, r in res["results"].items():
            if label not in r:
                continue
            rows.append([label, n, fmt_ms(r[label]["seconds"]),
                         fmt_ratio(r[label]["ratio_to_gemm"])])
    notes = ["\n"]
    for n, r in res["results"].items():
        notes.append(f"- {n} thread(s): GEMM {r['GEMM']['gflops']:.1f} GFLOP/s; the UT forward "
                     f"delivers Ψ2 at {r['UT forward']['psi2_equiv_gflops']:.1f} "
                     "GEMM-equivalent GFLOP/s.")
    return head + markdown_table(header, rows) + "\n".join(notes)


if __name__ == "__main__":
    import sys

    import run as _run

    sys.exit(_run.main(["--only", "psi_scaling", "--only", "psi2_gemm", *sys.argv[1:]]))
