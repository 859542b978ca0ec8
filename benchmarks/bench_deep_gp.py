"""DeepGP benchmarks: seconds per Adam step by depth, and the layer backward against numpy.

``adam_step`` is the analogue of Salimbeni (2020), Table 2.4: one minibatch ELBO + gradient
evaluation and Adam update for SGP (= DGP 1) and DGP 2..5, M = 100 inducing points per layer,
batch = N = 10,000, D = 8 inputs (inner width 8), one sample, whitened, full ``q_sqrt`` per output,
RBF-ARD kernels, Gaussian likelihood, on synthetic data, with 1 thread. Ratios to the SGP step are
formed per interleaved repeat (paper, CPU: 2.6×, 3.5×, 4.6×, 6.2× for DGP 2..5).

The same step of GPyTorch's ``DeepGP`` and of GPflux's ``DeepGP`` is timed in the same interleaved
repeats, on the same standardised arrays (handed over in a temporary ``.npz``) and from the same
start as ours (k-means inducing inputs, unit length scales and variance, ``q_mu = 0``, whitened
``q_sqrt = I`` for the last layer and ``1e-5 I`` for inner layers, identity inner means, noise
0.05), each in float64 with one thread, and in float32 as extra columns (full runs; see
:func:`run_adam_step`). Each runs in its own interpreter (``_gpytorch_dgp_worker.py``,
``_gpflux_dgp_worker.py``): ``LVGP_TORCH_PYTHON`` / ``LVGP_TF_PYTHON``, else ``../venv-torch`` /
``../venv-tf`` next to the repository, else this interpreter; a library that cannot be imported
there is reported "absent (not importable)" and the benchmark goes on without it. Neither is a
dependency. Reported per library: ms per step, the per-repeat ratio to that library's own SGP
step and ours ÷ the peer's; and as sanity checks the ELBO at the common start and after 5 Adam
steps (lr 0.01) of every library, and the norm of each layer's kernel/inducing-input gradient
(the whitened KL does not depend on them, so a non-zero value shows the data term's gradient
reaches that layer).

``layer_backward`` times, at M = 100, P = 10⁴, D = 8 (a performance check of our reproduction
protocol):

* the RBF-ARD backward of ``K_uf`` (to Z, H, length scales and variance): the package's kernel
  VJP (recomputing ``K``, and from the cached ``K``) against a pure-numpy reference written from
  the kernel's derivatives directly, 1 and 2 threads;
* the whole layer backward (``marginals`` + ``layer_vjp``, 8 outputs) with the package's kernel
  against the same layer with the numpy kernel.

``latent_step`` times one bound + gradient evaluation of the latent-variable models of
Salimbeni (2020, ch. 5) (LV-GP-GP with VI, and with the importance-weighted bound, K = 5, joint
or independent inner draws) against DGP 2 at the ch. 5 settings (minibatch 512, M = 128).

Run standalone (``python benchmarks/bench_deep_gp.py [--quick] [--peer-float32 0|1]``) or through
``run.py`` (``--only deep_gp_adam_step`` and so on).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
from _common import (
    REPO,
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
from sklearn_lvgp._core.parallel import threads  # noqa: E402
from sklearn_lvgp._core.workspace import Workspace  # noqa: E402
from sklearn_lvgp.kernels import RBF, KernelVJP  # noqa: E402
from sklearn_lvgp.variational import SVGPLayer, layer_forward, layer_vjp  # noqa: E402


def _problem(N, D, seed=0):
    rs = np.random.RandomState(seed)
    X = rs.randn(N, D)
    y = np.sin(X @ rs.randn(D)) + 0.1 * rs.randn(N)
    return X, y


# ---------------------------------------------------------------------------------- adam_step
#: Peer libraries of ``adam_step``: interpreter variable, side venv next to the repo, worker.
PEERS = {"GPyTorch": ("LVGP_TORCH_PYTHON", "venv-torch", "_gpytorch_dgp_worker.py"),
         "GPflux": ("LVGP_TF_PYTHON", "venv-tf", "_gpflux_dgp_worker.py")}
#: Adam steps taken from the common start before the ELBO sanity check (every library).
SANITY_STEPS = 5
ELBO_DRAWS = 5


def _peer_runs(quick, float32):
    """(label, library, dtype) of the peer runs: float64, plus float32 unless switched off."""
    if float32 is None:
        float32 = os.environ.get("LVGP_PEER_FLOAT32", "0" if quick else "1") != "0"
    runs = [(name, name, "float64") for name in PEERS]
    if float32:
        runs += [(f"{name} float32", name, "float32") for name in PEERS]
    return runs


def peer_python(name):
    """Interpreter for a peer library: its variable, ``../<venv>/bin/python``, or this one."""
    var, venv, _ = PEERS[name]
    if os.environ.get(var):
        return os.environ[var]
    path = REPO.parent / venv / "bin" / "python"
    return str(path) if path.exists() else sys.executable


def _peer_env():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "TF_CPP_MIN_LOG_LEVEL": "2"})
    return env


class StepPeer:
    """A peer worker in ``--serve`` mode: ``peer.runner(L)()`` times one step of depth ``L``.

    The worker answers ``time L`` with the seconds it measured itself, so its steps can be
    interleaved with ours in the same repeats.
    """

    def __init__(self, name, data_path, depths, dtype="float64"):
        worker = REPO / "benchmarks" / PEERS[name][2]
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.proc, self.info = None, None
        try:
            self.proc = subprocess.Popen(
                [peer_python(name), str(worker), str(data_path), "--serve", "--dtype", dtype,
                 "--depths", ",".join(str(d) for d in depths)],
                env=_peer_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=self._stderr, text=True, bufsize=1)
        except OSError as exc:
            self.info = {"error": f"{type(exc).__name__}: {exc}"}

    def wait_ready(self):
        """The worker's start message (versions and sanity checks), or ``{"error": ...}``."""
        if self.info is None:
            self.info = self._read()
        return self.info

    def _read(self):
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self._stderr.seek(0)
                tail = [ln for ln in self._stderr.read().strip().splitlines()
                        if "Error" in ln or "error" in ln][-2:]
                return {"error": "worker exited: " + " / ".join(tail)}
            if line.startswith("@@"):
                return json.loads(line[2:])

    def runner(self, L):
        def run():
            self.proc.stdin.write(f"time {L}\n")
            self.proc.stdin.flush()
            msg = self._read()
            if "t" not in msg:
                raise RuntimeError(f"benchmark worker failed: {msg}")
            if not msg["finite"]:
                raise FloatingPointError(f"non-finite ELBO in the peer's depth-{L} step")
            return msg["t"]

        return run

    def close(self):
        """Stop the worker (it exits on ``quit``)."""
        if self.proc is not None:
            try:
                if self.proc.poll() is None:
                    self.proc.stdin.write("quit\n")
                    self.proc.stdin.flush()
                    self.proc.stdin.close()
                    self.proc.wait(timeout=60)
            except (OSError, subprocess.SubprocessError):
                self.proc.kill()
        self._stderr.close()


def _label(L):
    return "SGP" if L == 1 else f"DGP {L}"


def _our_steps(X, y, N, M, depths, rs):
    """Our step runners by depth, and the ELBO at the start and after a few Adam steps."""
    runners, sanity = {}, {}
    for L in depths:
        m = DeepGP(tol=None, n_layers=L, n_inducing=M, max_iter=SANITY_STEPS, batch_size=N,
                   learning_rate=0.01, inner_layer_init="collapsed", random_state=0).fit(X, y)
        model, x0 = m._model, m._x.copy()
        Xs = (X - m.X_mean_) / m.X_scale_
        Ys = ((y - m.y_mean_) / m.y_scale_)[:, None]
        x_init = m._build(Xs, 1, np.random.RandomState(0))[1]
        er = np.random.RandomState(1)
        sanity[str(L)] = {
            "elbo_init": float(np.mean([model.elbo(x_init, Xs, Ys, 1.0, 1, er)[0]
                                        for _ in range(ELBO_DRAWS)])),
            "elbo_after_steps": float(np.mean([model.elbo(x0, Xs, Ys, 1.0, 1, er)[0]
                                               for _ in range(ELBO_DRAWS)])),
            "n_params": int(x0.size)}

        # per-layer buffers reused from step to step, as ``DeepGP.fit`` passes them
        ws = [Workspace() for _ in range(model.n_layers)]

        def step(model=model, x0=x0, Xs=Xs, Ys=Ys, ws=ws):
            f, g = model.elbo(x0, Xs, Ys, 1.0, 1, rs, workspaces=ws)
            return x0 - 0.01 * np.sign(g)

        runners[_label(L)] = timed(step)
    return runners, sanity


def _other_settings(quick, repeats):
    """Ours only: the main size at 2 threads, and the autograd prototype's size (N = 397, D = 10).

    An independent autograd prototype, written to calibrate our reproduction protocol, took
    2.2× / 2.9× (DGP 2 / DGP 3 ÷ SGP) at M = 100, N = 397, D = 10, full batch (Salimbeni 2020,
    Table 2.4: 2.6× / 3.5×); the 2-thread rows show how the ratio moves when BLAS
    and numba get both cores.
    """
    configs = [("2 threads", 2000 if quick else 10_000, 8, [1, 2], 2),
               ("N = 397, D = 10", 397, 10, [1, 2, 3], 1)]
    M = 50 if quick else 100
    res = {}
    for name, N, D, depths, n_threads in configs:
        X, y = _problem(N, D, seed=1)
        with threads(1):
            runners, _ = _our_steps(X, y, N, M, depths, np.random.RandomState(0))
        with threads(n_threads):
            times = interleaved(runners, repeats, warmup=1)
        res[name] = {"N": N, "D": D, "M": M, "threads": n_threads, "results": {
            k: {"seconds": summary(t), "ratio_to_sgp": ratio_summary(t, times["SGP"])}
            for k, t in times.items()}}
    return res


def _blas_floor(M, P, widths, repeats):
    """Seconds of the triangular and general products one step makes, per depth (1 thread).

    Per layer our step makes, besides O(M P) work: two ``trsm`` with ``L_u`` on an ``(M, P)``
    block (``A1`` forward, ``dK_uf`` backward) and one ``(M, P) x (P, M)`` GEMM (``dL_u``);
    per output one ``trmm`` forward (``B_d = L_d^T A``), one GEMM (``A (B_d dv_d)^T``) and one
    ``trmm`` backward (``L_d (B_d dv_d)``). ``widths[L]`` lists the output widths of the ``L``
    layers. Each kind is timed alone (median of ``repeats``) and the floor is the weighted sum:
    no model can take less with these products, so floor ratios bound what ``÷ SGP`` can be.
    """
    from sklearn_lvgp._core.linalg import lower_matmul, lower_solve

    rng = np.random.RandomState(0)
    L = np.linalg.cholesky(np.cov(rng.standard_normal((M, 3 * M))) + np.eye(M))
    B = rng.standard_normal((M, P))
    ops = {"trsm": lambda: lower_solve(L, B), "trmm": lambda: lower_matmul(L, B, trans=True),
           "gemm": lambda: B @ B.T}
    with threads(1):
        t = {k: float(np.median(v)) for k, v in interleaved(
            {k: timed(f) for k, f in ops.items()}, repeats, warmup=2).items()}
    floor = {}
    for depth, outs in widths.items():
        floor[_label(depth)] = len(outs) * (2 * t["trsm"] + t["gemm"]) + sum(outs) * (
            2 * t["trmm"] + t["gemm"])
    return {"op_seconds": t, "floor_seconds": floor,
            "floor_ratio_to_sgp": {k: v / floor["SGP"] for k, v in floor.items()}}


def run_adam_step(quick=False, repeats=None, peer_float32=None):
    """Time one Adam step (ELBO + gradient + update) for depths 1..5, ours and the peers'.

    GPyTorch and GPflux run in their own interpreters (:func:`peer_python`) on the same
    standardised arrays and from the same starting values as ours, interleaved with our steps
    in the same repeats; a peer that cannot be imported is reported absent. Both also run in
    float32 (extra columns) unless ``peer_float32`` is false; by default that is
    ``LVGP_PEER_FLOAT32`` (``0`` or ``1``), else on for full runs and off with ``quick``.
    """
    N = 2000 if quick else 10_000
    M = 50 if quick else 100
    repeats = repeats or (3 if quick else 7)
    depths = list(range(1, 6))
    X, y = _problem(N, 8)
    rs = np.random.RandomState(0)
    out = {"N": N, "batch": N, "D": 8, "M": M, "repeats": repeats, "threads": 1,
           "sanity_steps": SANITY_STEPS, "elbo_draws": ELBO_DRAWS, "results": {}, "peers": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning after a few steps
        with tempfile.TemporaryDirectory() as tmp:
            # the peers start first (their set-up overlaps ours) from our start
            # (Salimbeni 2020, §2.2 and §2.4)
            m = DeepGP(n_layers=2, n_inducing=M, max_iter=1, batch_size=N, random_state=0)
            m.fit(X, y)
            Xs = (X - m.X_mean_) / m.X_scale_
            Ys = ((y - m.y_mean_) / m.y_scale_)[:, None]
            layers, noise, _ = m._model.unpack(m._build(Xs, 1, np.random.RandomState(0))[1])
            path = os.path.join(tmp, "dgp_problem.npz")
            np.savez(path, X=Xs, Y=Ys, Z=layers[0].Z, noise=noise,
                     inner_sqrt=float(layers[0].q_sqrt[0, 0, 0]), lr=0.01,
                     sanity_steps=SANITY_STEPS)
            started = {label: (name, StepPeer(name, path, depths, dtype))
                       for label, name, dtype in _peer_runs(quick, peer_float32)}
            try:
                with threads(1):
                    runners, out["sanity"] = _our_steps(X, y, N, M, depths, rs)
                peers = {}
                for label, (name, peer) in started.items():
                    info = dict(peer.wait_ready(), python=peer_python(name))
                    if "error" in info:
                        out["peers"][label] = {"status": "absent (not importable)", **info}
                        continue
                    peers[label] = peer
                    out["peers"][label] = {"status": "ok", **info, "results": {}}
                    for L in depths:
                        runners[f"{label} {_label(L)}"] = peer.runner(L)
                with threads(1):
                    times = interleaved(runners, repeats, warmup=1)
            finally:
                for _, peer in started.values():
                    peer.close()
    out["other_settings"] = _other_settings(quick, repeats)
    out["blas_floor"] = _blas_floor(M, N, {L: [8] * (L - 1) + [1] for L in depths},
                                    5 if quick else 21)
    for L in depths:
        t = times[_label(L)]
        out["results"][_label(L)] = {"seconds": summary(t), "ratio_to_sgp": ratio_summary(
            t, times["SGP"]), "raw": t.tolist()}
        for name in peers:
            tp = times[f"{name} {_label(L)}"]
            out["peers"][name]["results"][_label(L)] = {
                "seconds": summary(tp),
                "ratio_to_own_sgp": ratio_summary(tp, times[f"{name} SGP"]),
                "ours_over_peer": ratio_summary(t, tp), "raw": tp.tolist()}
    return out


def _peer_table(res, peers, with_paper):
    """Rows by depth: ours, then per peer ms, ÷ its own SGP and ours ÷ peer."""
    paper = {"SGP": "1", "DGP 2": "2.6×", "DGP 3": "3.5×", "DGP 4": "4.6×", "DGP 5": "6.2×"}
    header = ["model", "ours ms: median [min–max]", "ours ÷ SGP"]
    for name in peers:
        header += [f"{name} ms", f"{name} ÷ its SGP", f"ours ÷ {name}"]
    rows = []
    for name, e in res["results"].items():
        row = [name, fmt_ms(e["seconds"]), fmt_ratio(e["ratio_to_sgp"])]
        for p in peers.values():
            pe = p["results"][name]
            row += [fmt_ms(pe["seconds"]), fmt_ratio(pe["ratio_to_own_sgp"]),
                    fmt_ratio(pe["ours_over_peer"])]
        rows.append(row + ([paper[name]] if with_paper else []))
    return markdown_table(header + (["thesis Table 2.4 CPU"] if with_paper else []), rows)


def report_adam_step(res):
    """Markdown tables of :func:`run_adam_step`: timings, then the ELBO/gradient checks."""
    ok = {k: v for k, v in res.get("peers", {}).items() if v.get("status") == "ok"}
    f64 = {k: v for k, v in ok.items() if v["dtype"] == "float64"}
    f32 = {k: v for k, v in ok.items() if v["dtype"] == "float32"}
    text = (f"### deep_gp adam_step — one Adam step, N = batch = {res['batch']}, D = {res['D']}, "
            f"M = {res['M']}, S = 1, float64, {res['threads']} thread, {res['repeats']} "
            "interleaved repeats (peers in the same repeats, ratios per repeat)\n\n"
            + _peer_table(res, f64, True))
    if f32:
        text += ("\n\nThe peers in float32 (same repeats; ours is float64 throughout):\n\n"
                 + _peer_table(res, f32, False))
    notes = []
    for name, p in res.get("peers", {}).items():
        if p.get("status") != "ok":
            notes.append(f"- {name}: {p['status']} — {p.get('error', '')[:200]} "
                         f"(interpreter {p.get('python')})")
        elif p["dtype"] == "float64":
            keys = [k for k in ("gpytorch", "linear_operator", "torch", "gpflux", "gpflow",
                                "tensorflow", "tensorflow_probability", "tf_keras") if k in p]
            notes.append(f"- {name}: " + ", ".join(f"{k} {p[k]}" for k in keys)
                         + f", numpy {p['numpy']}, Python {p['python_version']}")
    if notes:
        text += "\n\nPeers:\n" + "\n".join(notes)
    if res.get("other_settings"):
        orows = [[cfg, str(o["N"]), str(o["D"]), str(o["threads"]), k, fmt_ms(e["seconds"]),
                  fmt_ratio(e["ratio_to_sgp"])]
                 for cfg, o in res["other_settings"].items() for k, e in o["results"].items()]
        text += ("\n\nOurs at other settings (M = {}, full batch, S = 1):\n\n".format(
            next(iter(res["other_settings"].values()))["M"])
            + markdown_table(["setting", "N", "D", "threads", "model", "ms per step",
                              "÷ SGP (per repeat)"], orows))
    if "blas_floor" in res:
        bf = res["blas_floor"]
        frows = [[k, f"{1e3 * v:.1f}", f"{bf['floor_ratio_to_sgp'][k]:.2f}×",
                  fmt_ratio(res["results"][k]["ratio_to_sgp"])]
                 for k, v in bf["floor_seconds"].items()]
        ops = ", ".join(f"{k} {1e3 * v:.2f} ms" for k, v in bf["op_seconds"].items())
        text += ("\n\nBLAS floor (the triangular and general products of one step, each kind "
                 f"timed alone at M = {res['M']}, P = {res['batch']}: {ops}):\n\n"
                 + markdown_table(["model", "floor ms", "floor ÷ SGP floor", "measured ÷ SGP"],
                                  frows))
    if "sanity" in res:
        libs = {"ours": res["sanity"]} | {n: p["sanity"] for n, p in f64.items()}
        sh = (["model"] + [f"{n} ELBO start" for n in libs]
              + [f"{n} ELBO after {res['sanity_steps']} steps" for n in libs]
              + [f"{n} ‖∂/∂(kernel, Z)‖ per layer" for n in f64])
        srows = []
        for L in res["sanity"]:
            srows.append([_label(int(L))] + [f"{s[L]['elbo_init']:.1f}" for s in libs.values()]
                         + [f"{s[L]['elbo_after_steps']:.1f}" for s in libs.values()]
                         + [" / ".join(f"{g:.2g}" for g in p["sanity"][L][
                             "grad_norm_kernel_Z_per_layer"]) for p in f64.values()])
        text += (f"\n\nSanity (same data, same start; ELBO = mean of {res['elbo_draws']} "
                 "one-sample estimates, Adam lr 0.01):\n\n" + markdown_table(sh, srows))
    return text


# ----------------------------------------------------------------------------- layer_backward
def numpy_rbf_vjp(dK, Z, H, ls, var, K=None):
    """Pure-numpy RBF-ARD backward of ``K = k(Z, H)`` (the kernel's derivatives written out).

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

    def vjp_cached(self, dL_dK, cache, overwrite_dK=False):
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
    """Kernel backward and whole-layer backward: the package vs numpy, 1 and 2 threads.

    The package's RBF is one vectorised jitted loop and, backward, a jitted pass for the weights
    plus products (``kernels/_stationary._stationary_vjp_from_weights``); the reference is plain
    numpy broadcasting.
    """
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
    runners = {"kernel VJP, package (recomputes K)": timed(lambda: fast.vjp(dK, Z, H)),
               "kernel VJP, numpy (recomputes K)": timed(lambda: numpy_rbf_vjp(dK, Z, H, ls, 1.3)),
               "kernel VJP from cached K, package": timed(lambda: fast.vjp_cached(dK, kcache)),
               "kernel VJP from cached K, numpy": timed(
                   lambda: numpy_rbf_vjp(dK, Z, H, ls, 1.3, K)),
               "layer fwd+bwd, package kernel": layer(fast),
               "layer fwd+bwd, numpy kernel": layer(slow)}
    groups = [(lambda n=n: threads(n), {f"{k}, {n} thr": v for k, v in runners.items()})
              for n in (1, 2)]
    times = interleaved_groups(groups, repeats, warmup=1)
    out = {"M": M, "P": P, "D": D, "repeats": repeats, "max_abs_diff_vs_numpy": err,
           "results": {}}
    for name, t in times.items():
        base = name.replace("package", "numpy")
        entry = {"seconds": summary(t), "raw": t.tolist()}
        if "package" in name:
            entry["speedup_vs_numpy"] = ratio_summary(times[base], t)
        out["results"][name] = entry
    return out


def report_layer_backward(res):
    """Markdown table of :func:`run_layer_backward`."""
    rows = [[name, fmt_ms(e["seconds"]),
             fmt_ratio(e["speedup_vs_numpy"]) if "speedup_vs_numpy" in e else ""]
            for name, e in res["results"].items()]
    head = (f"### deep_gp layer_backward — M = {res['M']}, P = {res['P']}, D = {res['D']}, "
            f"{res['repeats']} interleaved repeats (package vs numpy max |diff| "
            f"{res['max_abs_diff_vs_numpy']:.1e})\n\n")
    return head + markdown_table(["configuration", "ms: median [min–max]",
                                  "numpy ÷ package (per repeat)"], rows)


# ------------------------------------------------------------------------------- latent_step
def run_latent_step(quick=False, repeats=None):
    """Bound + gradient per step of the latent-variable models (Salimbeni 2020, ch. 5 settings).

    DGP 2 against LV-GP-GP with VI (one sample) and IW (K = 5 proposals, joint inner draw of
    Salimbeni 2020, §5.2.3, and the reference code's independent draw), minibatch 512, M = 128,
    D = 8.
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

        # per-layer buffers reused from step to step, as ``DeepGP.fit`` passes them
        ws = [Workspace() for _ in range(model.n_layers)]

        def step(model=model, x0=x0, Xs=Xs, Ys=Ys, ws=ws):
            f, g = model.elbo(x0, Xs, Ys, 1.0, 1, rs, workspaces=ws)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--peer-float32", choices=("0", "1"), default=None,
                        help="also time the peers in float32 (default: full runs only)")
    args = parser.parse_args()
    if args.peer_float32 is not None:
        os.environ["LVGP_PEER_FLOAT32"] = args.peer_float32
    for name, (run, report) in {"deep_gp_adam_step": (run_adam_step, report_adam_step),
                                "deep_gp_layer_backward": (run_layer_backward,
                                                           report_layer_backward),
                                "deep_gp_latent_step": (run_latent_step,
                                                        report_latent_step)}.items():
        res = run(quick=args.quick, repeats=args.repeats)
        write_json(name, res, quick=args.quick)
        print(report(res), "\n")


if __name__ == "__main__":
    main()
