"""Benchmark ``bound_grad``: one bound + gradient evaluation, ours against GPy's BayesianGPLVM.

What is timed is exactly what L-BFGS-B calls once per iteration inside
:meth:`sklearn_lvgp.UnscentedGPLVM.fit`: unpack the flat unconstrained vector
(μ, log S, Z, θ, log σ²), evaluate the ELBO (collapsed bound − KL) with the estimator's bound, and
pack the gradient — at N=1000, D=12, Q=5, M=20 for

* analytic RBF (closed-form Ψ-statistics; the baseline of the ratios),
* UT RBF and UT Matérn 3/2 (unscented transform, 2Q = 10 points per row),
* GH(2) Matérn 3/2 (tensor Gauss–Hermite, 2^Q = 32 points per row),

with 1 and 2 threads (``sklearn_lvgp._core.parallel.threads``: numba and BLAS). GPy's
``m._objective_grads(m.optimizer_array)`` (RBF ARD, the same data, means, variances, inducing
inputs and hyperparameters) is timed in the same repeats.

Every configuration runs in a **process of its own** (``_lvgp_worker.py`` with this interpreter;
``_gpy_worker.py`` with the interpreter named by ``LVGP_PEER_PYTHON``, default
``../venv-peers/bin/python`` next to the repository, else this one), as it would in a real fit.
The parent asks the processes for one timed call each in turn, so all of them see the same load.
Separate processes matter: the analytic path allocates and frees a few MB of temporaries per call,
and glibc's malloc then returns that memory to the kernel and page-faults it back on the next
call (about 3000 minor faults per call here) unless some earlier, larger allocation in the same
process has raised malloc's thresholds. The ``+ malloc tuned`` rows (1 thread) rerun our
configurations and GPy with ``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_`` set, which
removes those faults, to show what that costs.

A second measurement times the same 1-thread processes (default malloc) with calls made **back
to back**, as L-BFGS-B makes them inside a fit: each repeat is the median of a burst of
``BURST`` calls, and the bursts of all configurations are interleaved. The first measurement,
one call per request, includes what an idle process pays to resume (caches and, on a VM, the
vCPU); the second does not.

A third measurement, **steady state**, is the loop an optimiser runs: each repeat is one burst of
``STEADY_CALLS`` calls made back to back, of which the first ``STEADY_SKIP`` are its warm-up and
the median of the rest is the repeat's time; bursts of all configurations are interleaved. It is
the closest to what one L-BFGS-B iteration costs inside a fit (hundreds of calls in a row).

If the peer interpreter cannot import GPy the GPy columns say "GPy not installed".
Ratios are per repeat: config / analytic RBF, and GPy / config (how many times faster we are).
"""

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from _common import (
    REPO,
    ensure_repo_on_path,
    fmt_ms,
    fmt_ratio,
    interleaved,
    markdown_table,
    ratio_summary,
    summary,
)

ensure_repo_on_path()

NAME = "bound_grad"
HERE = Path(__file__).resolve().parent
GPY_WORKER = HERE / "_gpy_worker.py"
LVGP_WORKER = HERE / "_lvgp_worker.py"
CONFIGS = [
    ("analytic RBF", "RBF", "analytic"),
    ("UT RBF", "RBF", "unscented"),
    ("UT Matérn 3/2", "Matern32", "unscented"),
    ("GH(2) Matérn 3/2", "Matern32", "gauss_hermite"),
]
BASELINE = "analytic RBF"
TARGET_SPEEDUP = 10.0
THREADS = (1, 2)
#: Environment that stops glibc malloc from returning freed memory to the kernel.
MALLOC_TUNED = {"MALLOC_MMAP_THRESHOLD_": str(2 ** 28), "MALLOC_TRIM_THRESHOLD_": str(2 ** 30)}
TUNED = " + malloc tuned"
#: Idle seconds before each multi-threaded run (OpenBLAS threads spin ~0.1 s after a call).
PAUSE = 0.15
#: Calls per burst and repeats of the back-to-back measurement.
BURST, B2B_REPEATS = 10, 30
#: Steady state: calls per burst, leading calls not counted, repeats.
STEADY_CALLS, STEADY_SKIP, STEADY_REPEATS = 40, 10, 15


def make_problem(N=1000, D=12, Q=5, M=20, seed=0):
    """Synthetic data and a realistic mid-optimisation parameter point (all float64)."""
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((N, Q))
    W = rng.standard_normal((Q, D))
    Y = np.tanh(X @ W) + 0.1 * rng.standard_normal((N, D))
    Y -= Y.mean(axis=0)
    mu = X + 0.1 * rng.standard_normal((N, Q))
    return {
        "Y": Y, "mu": mu, "S": rng.uniform(0.05, 0.2, (N, Q)),
        "Z": mu[rng.choice(N, M, replace=False)] + 0.01 * rng.standard_normal((M, Q)),
        "lengthscale": np.linspace(1.0, 2.0, Q), "variance": 1.0, "noise": 0.1,
    }


def make_objective(kernel_name, expectation, prob):
    """The optimiser's objective closure, as built in ``UnscentedGPLVM._fit``; plus ``x0``."""
    from sklearn_lvgp import UnscentedGPLVM
    from sklearn_lvgp._core.params import ParamPacker
    from sklearn_lvgp.expectations import make_rule
    from sklearn_lvgp.kernels import RBF, Matern32

    kcls = {"RBF": RBF, "Matern32": Matern32}[kernel_name]
    Y, mu, S, Z = prob["Y"], prob["mu"], prob["S"], prob["Z"]
    N, Q = mu.shape
    kernel = kcls(length_scale=np.array(prob["lengthscale"], dtype=float),
                  variance=float(prob["variance"]))
    _, rule = make_rule(expectation, kernel, Q, gh_order=2,
                        random_state=np.random.RandomState(0))
    est = UnscentedGPLVM(n_components=Q, n_inducing=Z.shape[0])
    packer = ParamPacker([("mu", (N, Q)), ("S", (N, Q), "log"), ("Z", Z.shape),
                          ("theta", (kernel.n_theta,)), ("noise", (), "log")])
    x0 = packer.pack({"mu": mu, "S": S, "Z": Z, "theta": kernel.theta,
                      "noise": float(prob["noise"])})
    work = kernel.clone()
    try:  # the fit's chunked bound (reused by every evaluation), as the estimator's fit does
        from sklearn_lvgp.bounds._collapsed import CollapsedPsiBound

        extra = {"bound": CollapsedPsiBound(Y)}
    except ImportError:  # earlier versions: the fit's buffers, where they exist
        try:
            from sklearn_lvgp._core.workspace import Workspace

            extra = {"workspace": Workspace()}
        except ImportError:
            extra = {}

    def objective(flat):
        p = packer.unpack(flat)
        work.theta = p["theta"]
        # returns (elbo, grads) or (elbo, grads, posterior) depending on the library version
        if hasattr(est, "_elbo_and_grads"):
            value, grads = est._elbo_and_grads(work, Y, p, rule, 1e-6, **extra)[:2]
        else:  # the estimator calls its bound directly now
            value, grads = extra["bound"].elbo(work, p["Z"], p["mu"], p["S"], float(p["noise"]),
                                               rule, jitter=1e-6)[:2]
        return -value, -packer.pack_grad(grads, p)

    return objective, x0


def peer_python():
    """The interpreter for the GPy side: ``LVGP_PEER_PYTHON``, ``../venv-peers``, or this one."""
    env = os.environ.get("LVGP_PEER_PYTHON")
    if env:
        return env
    venv = REPO.parent / "venv-peers" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


class Peer:
    """A worker process speaking the ``@@``-JSON-lines protocol of the ``_*_worker.py`` files.

    Calling the object times one evaluation in the worker and returns its seconds; the minor
    page faults of each call are collected in ``faults``.
    """

    def __init__(self, args, env):
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([str(a) for a in args], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                     bufsize=1)
        self.faults = []
        self.info = self._read()

    def _read(self):
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self._stderr.seek(0)
                tail = self._stderr.read().strip().splitlines()[-3:]
                return {"error": "worker exited: " + " / ".join(tail)}
            if line.startswith("@@"):
                return json.loads(line[2:])

    def _request(self, command, key):
        """Send ``command``, return the answer, which must hold ``key`` and a finite value."""
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        msg = self._read()
        if key not in msg:
            raise RuntimeError(f"benchmark worker failed: {msg}")
        if not msg["finite"]:
            raise FloatingPointError("non-finite objective in the benchmark")
        return msg

    def __call__(self):
        msg = self._request("time", "t")
        self.faults.append(msg.get("faults", -1))
        return msg["t"]

    def burst(self, calls, skip=0):
        """Median seconds of ``calls`` evaluations made back to back in the worker, leaving out
        the first ``skip`` of them."""
        return float(np.median(self._request(f"burst {int(calls)}", "ts")["ts"][skip:]))

    def close(self):
        """Stop the worker process (it exits on ``quit`` or end of input)."""
        try:
            if self.proc.poll() is None:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
        except (OSError, subprocess.SubprocessError):
            self.proc.kill()
        self._stderr.close()


def _gpy_env(n_threads, extra=None):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(n_threads)
    env.pop("PYTHONPATH", None)
    env.update(extra or {})
    return env


def _start(peers, key, args, env):
    try:
        peer = Peer(args, env)
    except OSError as exc:  # e.g. the peer interpreter does not exist
        return f"{type(exc).__name__}: {exc}"
    if "error" in peer.info:
        peer.close()
        return peer.info["error"]
    peers[key] = peer
    return None


def run(quick=False, repeats=None):
    """Run the benchmark (``repeats`` overrides the default count); returns a JSON dict."""
    default, warmup = (5, 1) if quick else (40, 1)  # the workers warm up by themselves as well
    requested = repeats or default
    # at least 30 measured repeats; stop adding more after 150 s (2 threads on a loaded box)
    min_repeats, budget = (None, None) if (quick or repeats) else (30, 150.0)
    prob = make_problem()
    N, Q = prob["mu"].shape
    D, M = prob["Y"].shape[1], prob["Z"].shape[0]
    python = peer_python()
    gpy = {"python": python}
    peers = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "problem.npz"
        np.savez(path, **prob)
        try:
            for n in THREADS:
                for tuned in ((False, True) if n == 1 else (False,)):
                    suffix = TUNED if tuned else ""
                    extra = MALLOC_TUNED if tuned else {}
                    err = _start(peers, f"GPy{suffix}|{n}", [python, GPY_WORKER, path],
                                 _gpy_env(n, extra))
                    if err:
                        gpy["error"] = err
                        break
                    info = peers[f"GPy{suffix}|{n}"].info
                    gpy.update({k: v for k, v in info.items() if k != "threadpools"})
                    gpy.setdefault("threadpools", {})[f"{n}{suffix}"] = info.get("threadpools")
                for tuned in ((False, True) if n == 1 else (False,)):
                    suffix = TUNED if tuned else ""
                    env = dict(os.environ, **(MALLOC_TUNED if tuned else {}))
                    for label, kernel, expectation in CONFIGS:
                        err = _start(peers, f"{label}{suffix}|{n}",
                                     [sys.executable, LVGP_WORKER, path, kernel, expectation, n],
                                     env)
                        if err:
                            raise RuntimeError(f"{label} ({n} threads): {err}")
            elbo_ours = peers[f"{BASELINE}|1"].info["elbo"]
            # one block per thread count: the idle-spinning pool threads of a 2-thread process
            # would otherwise slow down the 1-thread process timed right after it
            times = {}
            for n in THREADS:
                block = {k: p for k, p in peers.items() if k.endswith(f"|{n}")}
                times.update(interleaved(block, requested, warmup, min_repeats=min_repeats,
                                         budget_s=budget, pause_s=0.0 if n == 1 else PAUSE))
            faults = {k: float(np.median(p.faults[warmup:])) for k, p in peers.items()}
            # the same processes (1 thread, default malloc), calls made back to back as inside a
            # fit: each repeat is the median of a burst of BURST calls, bursts interleaved
            plain = {k: p for k, p in peers.items() if k.endswith("|1") and TUNED not in k}
            b2b = interleaved({k: functools.partial(p.burst, BURST) for k, p in plain.items()},
                              requested if quick or repeats else B2B_REPEATS, warmup)
            # steady state: the median of a long burst after its own warm-up calls
            steady = interleaved({k: functools.partial(p.burst, STEADY_CALLS, STEADY_SKIP)
                                  for k, p in plain.items()},
                                 requested if quick or repeats else STEADY_REPEATS, warmup)
        finally:
            for peer in peers.values():
                peer.close()
    installed = "GPy|1" in times
    repeats = {n: len(times[f"{BASELINE}|{n}"]) for n in ("1", "2")}
    if installed:
        gpy["elbo_ours_analytic"] = elbo_ours
        gpy["elbo_rel_diff"] = abs(gpy["elbo"] - elbo_ours) / abs(elbo_ours)

    results = {}
    for key, t in times.items():
        label, n = key.rsplit("|", 1)
        suffix = TUNED if label.endswith(TUNED) else ""
        entry = {"seconds": summary(t), "minor_faults_per_call": faults[key],
                 "ratio_to_analytic": ratio_summary(t, times[f"{BASELINE}{suffix}|{n}"]),
                 "raw": t.tolist()}
        if n != "1":
            # different blocks, so a ratio of medians rather than per-repeat ratios
            entry["median_ratio_to_1_thread"] = float(np.median(t)
                                                      / np.median(times[f"{label}|1"]))
        if suffix:
            entry["ratio_to_untuned"] = ratio_summary(t, times[f"{label[:-len(TUNED)]}|{n}"])
        if installed and not label.startswith("GPy"):
            entry["gpy_over_ours"] = ratio_summary(times[f"GPy{suffix}|{n}"], t)
        if key in b2b:
            tb = b2b[key]
            entry["back_to_back"] = {"seconds": summary(tb), "raw": tb.tolist()}
            if installed and not label.startswith("GPy"):
                entry["back_to_back"]["gpy_over_ours"] = ratio_summary(b2b["GPy|1"], tb)
        if key in steady:
            ts_ = steady[key]
            entry["steady_state"] = {"seconds": summary(ts_), "raw": ts_.tolist()}
            if installed and not label.startswith("GPy"):
                entry["steady_state"]["gpy_over_ours"] = ratio_summary(steady["GPy|1"], ts_)
        results.setdefault(label, {})[n] = entry
    target = None
    if installed:
        best = {n: results[BASELINE][n]["gpy_over_ours"]["median"] for n in ("1", "2")}
        tuned = results[BASELINE + TUNED]["1"]["gpy_over_ours"]["median"]
        target = {"required": TARGET_SPEEDUP, "gpy_over_analytic_median": best,
                  "gpy_over_analytic_median_back_to_back":
                      results[BASELINE]["1"]["back_to_back"]["gpy_over_ours"]["median"],
                  "met": {n: bool(v >= TARGET_SPEEDUP) for n, v in best.items()},
                  "gpy_over_analytic_median_steady_state":
                      results[BASELINE]["1"]["steady_state"]["gpy_over_ours"]["median"],
                  "met_steady_state": bool(
                      results[BASELINE]["1"]["steady_state"]["gpy_over_ours"]["median"]
                      >= TARGET_SPEEDUP),
                  "gpy_over_analytic_median_malloc_tuned": tuned}
    return {
        "name": NAME, "quick": quick, "repeats": repeats, "repeats_requested": requested,
        "warmup": warmup, "pause_before_multithreaded_runs_s": PAUSE,
        "design": "one process per configuration; interleaved repeats; one block per thread count",
        "back_to_back": {"calls_per_burst": BURST, "design": "1 thread, default malloc; each "
                         "repeat is the median of a burst of calls made back to back; bursts "
                         "of all configurations interleaved"},
        "steady_state": {"calls_per_burst": STEADY_CALLS, "leading_calls_left_out": STEADY_SKIP,
                         "design": "1 thread, default malloc; each repeat is the median of the "
                         "calls of a burst after its first ones; bursts of all configurations "
                         "interleaved"},
        "malloc_tuned_env": MALLOC_TUNED,
        "problem": {"N": N, "D": D, "Q": Q, "M": M,
                    "S_range": [0.05, 0.2], "lengthscale": prob["lengthscale"].tolist()},
        "threads": list(THREADS), "baseline": BASELINE, "gpy_installed": installed,
        "gpy": gpy, "results": results, "target": target,
    }


def _burst_rows(res, labels, key):
    """Table rows of one burst measurement (``back_to_back`` or ``steady_state``)."""
    rows = []
    for label in labels:
        e = res["results"][label]["1"].get(key)
        if e:
            rows.append([label, fmt_ms(e["seconds"]),
                         fmt_ratio(e["gpy_over_ours"]) if "gpy_over_ours" in e else "—"])
    return rows


def report(res):
    """Markdown tables of a :func:`run` result (also works on the JSON read back)."""
    p = res["problem"]
    head = (f"### bound_grad — ELBO + gradient, N={p['N']}, D={p['D']}, Q={p['Q']}, "
            f"M={p['M']} (interleaved repeats: {res['repeats']['1']} with 1 thread, "
            f"{res['repeats']['2']} with 2; one process per row)\n\n")
    installed = res["gpy_installed"]
    header = ["config", "threads", "ms: median [min–max]", "÷ analytic RBF (same repeat)",
              "GPy ÷ ours" if installed else "GPy", "page faults / call"]
    labels = [c[0] for c in CONFIGS] + (["GPy"] if installed else [])
    rows = []
    for suffix in ("", TUNED):
        for label in labels:
            for n, e in res["results"].get(label + suffix, {}).items():
                if label == "GPy":
                    gpy = "—"
                else:
                    gpy = fmt_ratio(e["gpy_over_ours"]) if installed else "GPy not installed"
                rows.append([label + suffix, n, fmt_ms(e["seconds"]),
                             fmt_ratio(e["ratio_to_analytic"]), gpy,
                             f"{e['minor_faults_per_call']:.0f}"])
    out = [head + markdown_table(header, rows)]
    extra = []
    for label in labels:
        e2 = res["results"][label].get("2")
        et = res["results"].get(label + TUNED, {}).get("1")
        extra.append([label, f"{e2['median_ratio_to_1_thread']:.3g}×" if e2 else "—",
                      fmt_ratio(et["ratio_to_untuned"]) if et else "—"])
    header_b2b = ["config", "ms: median [min–max]", "GPy ÷ ours" if installed else "GPy"]
    b2b_rows = _burst_rows(res, labels, "back_to_back")
    if b2b_rows:
        out += ["", f"Back to back (1 thread; each repeat the median of "
                f"{res['back_to_back']['calls_per_burst']} calls made in a row, as an optimiser "
                "makes them; bursts interleaved):", "", markdown_table(header_b2b, b2b_rows)]
    st_rows = _burst_rows(res, labels, "steady_state")
    if st_rows:
        st = res["steady_state"]
        out += ["", f"Steady state (1 thread; each repeat the median of calls "
                f"{st['leading_calls_left_out'] + 1}–{st['calls_per_burst']} of a burst of "
                f"{st['calls_per_burst']} made in a row, as inside a fit; bursts interleaved):", "",
                markdown_table(header_b2b, st_rows)]
    out += ["", "Ratios (< 1 means faster):", "",
            markdown_table(["config", "2 threads ÷ 1 thread (ratio of medians)",
                            "malloc tuned ÷ default (1 thread, same repeat)"], extra)]
    g = res["gpy"]
    if installed:
        out += ["", f"GPy {g['gpy']} (numpy {g['numpy']}, psicomp {g['psicomp']}) via "
                f"`{g['python']}`; ELBO GPy {g['elbo']:.6f} vs ours (analytic RBF) "
                f"{g['elbo_ours_analytic']:.6f}, relative difference {g['elbo_rel_diff']:.2e}."]
        t = res["target"]
        met = ", ".join(f"{n} thread(s): {t['gpy_over_analytic_median'][str(n)]:.3g}× "
                        f"({'met' if t['met'][str(n)] else 'NOT met'})"
                        for n in res["threads"])
        out.append(f"Target ≥{t['required']:g}× faster than GPy (analytic RBF, median): {met}; "
                   f"both sides malloc-tuned, 1 thread: "
                   f"{t['gpy_over_analytic_median_malloc_tuned']:.3g}×"
                   + (f"; back to back, 1 thread: {t['gpy_over_analytic_median_back_to_back']:.3g}×"
                      if "gpy_over_analytic_median_back_to_back" in t else "")
                   + (f"; steady state, 1 thread: "
                      f"{t['gpy_over_analytic_median_steady_state']:.3g}× "
                      f"({'met' if t['met_steady_state'] else 'NOT met'})"
                      if "gpy_over_analytic_median_steady_state" in t else "") + ".")
    else:
        out += ["", f"GPy not installed (peer interpreter `{g['python']}`: "
                f"{g.get('error', 'unavailable')})."]
    return "\n".join(out)


if __name__ == "__main__":
    import run as _run

    sys.exit(_run.main(["--only", NAME, *sys.argv[1:]]))
