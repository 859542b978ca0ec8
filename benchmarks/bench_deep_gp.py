"""DeepGP benchmarks: seconds per Adam step by depth, and the layer backward against numpy.

``adam_step`` is the Table 2.4 analogue of seed 003 (spec ``deep_gp.md`` §7.4, §9.2 item 5): one
minibatch ELBO + gradient evaluation and Adam update for SGP (= DGP 1) and DGP 2..5, M = 100
inducing points per layer, batch 10,000, D = 8 inputs (inner width 8), one sample, on synthetic
data, with 1 thread. Ratios to the SGP step are formed per interleaved repeat (paper, CPU: 2.6×,
3.5×, 4.6×, 6.2× for DGP 2..5).

``layer_backward`` times, at M = 100, P = 10⁴, D = 8 (spec §9.2 item 5):

* the RBF-ARD backward of ``K_uf`` (to Z, H, length scales and variance): the package's jitted
  kernel VJP against a pure-numpy reference written from spec §3.3 step 11, 1 and 2 threads;
* the whole layer backward (``marginals`` + ``layer_vjp``, 8 outputs) with the jitted kernel
  against the same layer with the numpy kernel.

``latent_step`` times one bound + gradient evaluation of the latent-variable models of spec §5
(LV-GP-GP with VI, and with the importance-weighted bound, K = 5, joint or independent inner
draws) against DGP 2 at the ch. 5 settings (minibatch 512, M = 128).

GPyTorch's DeepGP and GPflux would be timed on the same data when importable; neither is a
dependency, and the benchmark reports them as absent otherwise.

Run standalone (``python benchmarks/bench_deep_gp.py [--quick]``) or through ``run.py`` once
registered there.
"""

import argparse
import importlib.util

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
    write_json,
)

ensure_repo_on_path()

from sklearn_lvgp import DeepGP  # noqa: E402
from sklearn_lvgp._parallel import threads  # noqa: E402
from sklearn_lvgp._svgp import SVGPLayer, layer_forward, layer_vjp  # noqa: E402
from sklearn_lvgp.kernels import RBF, KernelVJP  # noqa: E402


def _problem(N, D, seed=0):
    rs = np.random.RandomState(seed)
    X = rs.randn(N, D)
    y = np.sin(X @ rs.randn(D)) + 0.1 * rs.randn(N)
    return X, y


# ---------------------------------------------------------------------------------- adam_step
def run_adam_step(quick=False, repeats=None):
    """Time one Adam step (bound + gradient + update) for depths 1..5."""
    N = 2000 if quick else 10_000
    M = 50 if quick else 100
    repeats = repeats or (3 if quick else 7)
    X, y = _problem(N, 8)
    rs = np.random.RandomState(0)
    runners = {}
    for L in range(1, 6):
        m = DeepGP(n_layers=L, n_inducing=M, max_iter=1, batch_size=N, random_state=0).fit(X, y)
        model, x0 = m._model, m._x.copy()
        Xs = (X - m.X_mean_) / m.X_scale_
        Ys = ((y - m.y_mean_) / m.y_scale_)[:, None]

        def step(model=model, x0=x0, Xs=Xs, Ys=Ys):
            f, g = model.elbo(x0, Xs, Ys, 1.0, 1, rs)
            return x0 - 0.01 * np.sign(g)

        runners["SGP" if L == 1 else f"DGP {L}"] = timed(step)
    with threads(1):
        times = interleaved(runners, repeats, warmup=1)
    out = {"N": N, "batch": N, "D": 8, "M": M, "repeats": repeats, "threads": 1, "results": {}}
    for name, t in times.items():
        out["results"][name] = {"seconds": summary(t), "ratio_to_sgp": ratio_summary(
            t, times["SGP"]), "raw": t.tolist()}
    return out


def report_adam_step(res):
    """Markdown table of :func:`run_adam_step`."""
    paper = {"SGP": "1", "DGP 2": "2.6×", "DGP 3": "3.5×", "DGP 4": "4.6×", "DGP 5": "6.2×"}
    rows = [[name, fmt_ms(e["seconds"]), fmt_ratio(e["ratio_to_sgp"]), paper[name]]
            for name, e in res["results"].items()]
    head = (f"### deep_gp adam_step — one Adam step, N = batch = {res['batch']}, D = {res['D']}, "
            f"M = {res['M']}, S = 1, {res['threads']} thread, {res['repeats']} interleaved "
            "repeats\n\n")
    return head + markdown_table(["model", "ms per step: median [min–max]", "÷ SGP (per repeat)",
                                  "thesis Table 2.4 CPU"], rows)


# ----------------------------------------------------------------------------- layer_backward
def numpy_rbf_vjp(dK, Z, H, ls, var, K=None):
    """Pure-numpy RBF-ARD backward of ``K = k(Z, H)`` (spec §3.3 step 11).

    Returns adjoints of Z, H, log length scales and log variance. ``K`` is the forward matrix
    when the caller kept it (as the package's ``K_cached`` / ``vjp_cached`` pair does).
    """
    r = (Z[:, None, :] - H[None, :, :]) / ls  # (M, P, D) scaled differences
    if K is None:
        K = var * np.exp(-0.5 * np.sum(r * r, axis=2))
    W = dK * K
    t = W[:, :, None] * r / ls
    dZ = -t.sum(axis=1)
    dH = t.sum(axis=0)
    dlogls = np.einsum("mp,mpd->d", W, r * r)
    dlogvar = float(np.sum(W))
    return dZ, dH, dlogls, dlogvar


class NumpyRBF(RBF):
    """RBF-ARD with a pure-numpy forward and backward (the benchmark's reference)."""

    def K(self, X, Z=None):
        Zc = X if Z is None else Z
        r = (X[:, None, :] - Zc[None, :, :]) / self.length_scale
        return self.variance * np.exp(-0.5 * np.sum(r * r, axis=2))

    def K_cached(self, X, Z=None):
        K = self.K(X, Z)
        return K, (X, Z, K)

    def vjp_cached(self, dL_dK, cache):
        return self.vjp(dL_dK, *cache)

    def vjp(self, dL_dK, X, Z=None, K=None):
        Zc = X if Z is None else Z
        dX, dZ, dlogls, dlogvar = numpy_rbf_vjp(dL_dK, X, Zc, self.length_scale,
                                                 self.variance, K)
        if Z is None:
            dX, dZ = dX + dZ, None
        return KernelVJP(dX, dZ, self._pack_theta_grad({"variance": dlogvar,
                                                        "length_scale": dlogls}))


def run_layer_backward(quick=False, repeats=None):
    """Kernel backward and whole-layer backward: jitted vs numpy, 1 and 2 threads."""
    M, P, D = (50, 2000, 8) if quick else (100, 10_000, 8)
    repeats = repeats or (3 if quick else 7)
    rs = np.random.RandomState(0)
    Z, H = rs.randn(M, D), rs.randn(P, D)
    ls = 1.0 + rs.rand(D)
    dK = rs.randn(M, P)
    fast = RBF(length_scale=ls.copy(), variance=1.3)
    slow = NumpyRBF(length_scale=ls.copy(), variance=1.3)
    ref = numpy_rbf_vjp(dK, Z, H, ls, 1.3)
    got = fast.vjp(dK, Z, H)
    err = max(float(np.max(np.abs(got.X - ref[0]))), float(np.max(np.abs(got.Z - ref[1]))))
    q_mu, q_sqrt = rs.randn(M, D), np.tril(0.1 * rs.randn(D, M, M)) + np.eye(M)
    dmu, dvar = rs.randn(P, D), rs.randn(P, D)

    def layer(kernel):
        lay = SVGPLayer(kernel, Z, q_mu, q_sqrt, None, True)

        def run():
            _, _, _, cache = layer_forward(lay, H)
            layer_vjp(dmu, dvar, -1.0, cache)

        return timed(run)

    K, kcache = fast.K_cached(Z, H)
    got = fast.vjp_cached(dK, kcache)
    err = max(err, float(np.max(np.abs(got.X - ref[0]))), float(np.max(np.abs(got.Z - ref[1]))))
    runners = {"kernel VJP, jitted": timed(lambda: fast.vjp(dK, Z, H)),
               "kernel VJP, numpy": timed(lambda: numpy_rbf_vjp(dK, Z, H, ls, 1.3)),
               "kernel VJP from cached K, jitted": timed(lambda: fast.vjp_cached(dK, kcache)),
               "kernel VJP from cached K, numpy": timed(
                   lambda: numpy_rbf_vjp(dK, Z, H, ls, 1.3, K)),
               "layer fwd+bwd, jitted kernel": layer(fast),
               "layer fwd+bwd, numpy kernel": layer(slow)}
    groups = [(lambda n=n: threads(n), {f"{k}, {n} thr": v for k, v in runners.items()})
              for n in (1, 2)]
    times = interleaved_groups(groups, repeats, warmup=1)
    out = {"M": M, "P": P, "D": D, "repeats": repeats, "max_abs_diff_vs_numpy": err,
           "results": {}}
    for name, t in times.items():
        base = name.replace("jitted", "numpy")
        entry = {"seconds": summary(t), "raw": t.tolist()}
        if "jitted" in name:
            entry["speedup_vs_numpy"] = ratio_summary(times[base], t)
        out["results"][name] = entry
    return out


def report_layer_backward(res):
    """Markdown table of :func:`run_layer_backward`."""
    rows = [[name, fmt_ms(e["seconds"]),
             fmt_ratio(e["speedup_vs_numpy"]) if "speedup_vs_numpy" in e else ""]
            for name, e in res["results"].items()]
    head = (f"### deep_gp layer_backward — M = {res['M']}, P = {res['P']}, D = {res['D']}, "
            f"{res['repeats']} interleaved repeats (jitted vs numpy max |diff| "
            f"{res['max_abs_diff_vs_numpy']:.1e})\n\n")
    return head + markdown_table(["configuration", "ms: median [min–max]",
                                  "numpy ÷ jitted (per repeat)"], rows)


# ------------------------------------------------------------------------------- latent_step
def run_latent_step(quick=False, repeats=None):
    """Bound + gradient per step of the latent-variable models (spec §5, ch. 5 settings).

    DGP 2 against LV-GP-GP with VI (one sample) and IW (K = 5 proposals, joint inner draw of
    §5.4, and the reference code's independent draw), minibatch 512, M = 128, D = 8.
    """
    B = 256 if quick else 512
    M = 50 if quick else 128
    repeats = repeats or (3 if quick else 7)
    X, y = _problem(B, 8)
    rs = np.random.RandomState(0)
    configs = {"DGP 2": {}, "LV-GP-GP VI": {"latent_dim": 1},
               "LV-GP-GP IW K=5 (joint)": {"latent_dim": 1, "inference": "iwvi"},
               "LV-GP-GP IW K=5 (independent)": {"latent_dim": 1, "inference": "iwvi"}}
    runners = {}
    for name, kw in configs.items():
        m = DeepGP(n_layers=2, n_inducing=M, max_iter=1, batch_size=B, random_state=0,
                   **kw).fit(X, y)
        model, x0 = m._model, m._x.copy()
        if "independent" in name:
            model.joint_inner = False
        Xs = (X - m.X_mean_) / m.X_scale_
        Ys = ((y - m.y_mean_) / m.y_scale_)[:, None]

        def step(model=model, x0=x0, Xs=Xs, Ys=Ys):
            f, g = model.elbo(x0, Xs, Ys, 1.0, 1, rs)
            return x0 - 0.01 * np.sign(g)

        runners[name] = timed(step)
    with threads(1):
        times = interleaved(runners, repeats, warmup=1)
    out = {"batch": B, "D": 8, "M": M, "repeats": repeats, "threads": 1, "results": {}}
    for name, t in times.items():
        out["results"][name] = {"seconds": summary(t), "ratio_to_dgp2": ratio_summary(
            t, times["DGP 2"]), "raw": t.tolist()}
    return out


def report_latent_step(res):
    """Markdown table of :func:`run_latent_step`."""
    rows = [[name, fmt_ms(e["seconds"]), fmt_ratio(e["ratio_to_dgp2"])]
            for name, e in res["results"].items()]
    head = (f"### deep_gp latent_step — bound + gradient, batch = {res['batch']}, D = {res['D']}, "
            f"M = {res['M']}, {res['threads']} thread, {res['repeats']} interleaved repeats\n\n")
    return head + markdown_table(["model", "ms per step: median [min–max]",
                                  "÷ DGP 2 (per repeat)"], rows)


def other_libraries():
    """Which of the comparison libraries can be imported here."""
    return {name: importlib.util.find_spec(mod) is not None
            for name, mod in (("GPyTorch DeepGP", "gpytorch"), ("GPflux", "gpflux"))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    for name, (run, report) in {"deep_gp_adam_step": (run_adam_step, report_adam_step),
                                "deep_gp_layer_backward": (run_layer_backward,
                                                           report_layer_backward),
                                "deep_gp_latent_step": (run_latent_step,
                                                        report_latent_step)}.items():
        res = run(quick=args.quick, repeats=args.repeats)
        write_json(name, res, quick=args.quick)
        print(report(res), "\n")
    for lib, present in other_libraries().items():
        print(f"{lib}: {'importable but not timed here' if present else 'not installed; skipped'}")


if __name__ == "__main__":
    main()
