"""Benchmark ``scaling``: threads and memory of the chunked objective engine.

Two measurements, each runnable alone (``--part``):

``threads``
    One bound + gradient evaluation, exactly what L-BFGS-B calls in a fit, for
    ``UnscentedGPLVM`` (analytic RBF and unscented Matérn 3/2; N rows, D = 12, Q = 5, M = 100)
    and ``SparseGPRegressor`` (deterministic inputs, Q = 8, M = 200), at every thread count of
    ``--threads``. Thread counts are timed *interleaved* (each repeat runs every count once), and
    the speed-up of ``n`` threads is the per-repeat ratio to 1 thread, summarised by its median
    (min, max). ``--source DIR`` times another checkout of the package (for a before/after
    table: ``git worktree add /tmp/before <commit>``); the evaluation is called the way that
    version's fit calls it.
``deepgp``
    One ``DeepGP`` ELBO + gradient (what an Adam step evaluates: 2 layers, D = 8, M =
    ``--gplvm-inducing``, Monte Carlo) per minibatch size of ``--deepgp-batches`` at every
    thread count of ``--threads``, interleaved repeats after a warm-up round.
``ldgd``
    One LDGD training-objective gradient (D = 12, K = 3, Q = 7, M = ``--ldgd-inducing`` on
    both paths, unscented points) per batch size of ``--ldgd-batches`` out of ``--n-rows``
    rows, at every thread count of ``--threads``.
``gpcde``
    One ``GPCDE`` bound + gradient of the default model with 100 quadrature nodes (the default
    is 20) on scikit-learn's diabetes data (442 rows, the full batch an Adam step of the
    default ``batch_size`` sees).
``dvmgp``
    One ``DVMGP`` bound + gradient (D = 8, Q = 2, m_v = 10, m_u = 30) on ``--n-rows`` rows, with
    the chunk workspaces a fit keeps across evaluations.
``dask``
    One bound + gradient evaluation of ``SparseGPRegressor`` (M = ``--sgpr-inducing``), one
    global evaluation of the ``UnscentedGPLVM`` bound (q(x_n) held on the workers) and one
    ``DeepGP`` minibatch gradient (10 000 rows, 2 layers) on a
    ``LocalCluster`` of 1 and 2 single-threaded worker processes (``--dask-workers``), the rows
    in ``--dask-partitions`` partitions; the driver's global steps run with one thread, as in a
    fit with the default ``n_jobs``.
``chunks``
    Where the threads' time goes in the ``threads`` part's evaluations (both GPLVM ones and
    ``SparseGPRegressor``'s) and the ``deepgp`` part's 10 000-row minibatch: for each thread
    count of ``--threads`` (3 repeats after a warm-up, the median repeat printed), each chunk
    pass's wall time, its number of chunks, the mean and largest chunk time, the chunks' thread
    CPU time, the utilisation (sum of chunk times over threads × pass wall time) and the time
    outside the passes. A chunk time that grows with the thread count is contention inside the
    chunks: waits for the GIL where the thread CPU time does not grow with it, shared caches,
    memory bandwidth or clock speed where it does; a utilisation below one is idle workers.
    With ``--parallel-global-steps`` (any part) the global steps between the passes may open
    numba parallel regions, as before the engine held them serial: see below.
``ceiling``
    What the machine allows: the throughput of four jitted, GIL-free kernels, one private copy
    per Python thread, at 1, 2, 4, 8, 12 and 16 threads (a scalar ``exp`` loop bound by
    latency, a vectorised ``exp`` loop on an L2-sized array, a 256 × 256 dgemm on one BLAS
    thread, a copy-add over two 32 MB arrays): ``n`` threads' work over the time of one
    thread's, the best of 3.
``rss``
    Peak resident memory of a short ``UnscentedGPLVM`` fit (default kernel and optimiser: from
    10⁵ rows the alternating one; ``--rss-iter`` iterations or rounds, ``--rss-inner-iter``
    iterations per step) against N, for each M of ``--rss-inducing``; each fit runs in a fresh
    process (``resource.getrusage``), and the table also gives the RSS of that process before
    the data were made, and the slope between the largest two N.

``--parallel-min-work W`` (every part) sets the work below which jitted twins run serially
(the library's ``PARALLEL_MIN_WORK``, 10⁵; ``1e9``: no numba parallel region anywhere).
``--parallel-global-steps`` (every part) lets the engine's global steps take the parallel
twins again (``sklearn_lvgp.engine._executor.serial_global_steps`` holds them serial): at
M = 100 their M × M kernel matrices then open numba parallel regions, whose OpenMP threads
spin for some milliseconds beside the next pass's workers. It is the baseline of that choice,
measured in the same run. ``--pointset-chunks`` (every part) sends the unscented rule's engine
chunks through the point-set path (about fifteen numpy calls per chunk) instead of one jitted
call per chunk and pass: the baseline of that path.

Usage::

    python benchmarks/bench_scaling.py --part threads --n-rows 50000 --threads 1,2
    python benchmarks/bench_scaling.py --part threads --n-rows 1000 --threads 1,2
    python benchmarks/bench_scaling.py --part chunks --n-rows 50000 --threads 1,16
    python benchmarks/bench_scaling.py --part ceiling
    python benchmarks/bench_scaling.py --part rss --rss-rows 100000,200000,400000 \\
        --rss-inducing 100,300

Results go to ``benchmarks/results/scaling_<part>_<label>.json`` and the markdown tables are
printed. Run it on a quiet machine.
"""

import argparse
import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _import_path(source):
    sys.path.insert(0, str(Path(source).resolve() if source else REPO))


# ------------------------------------------------------------------------------- threads

def _gplvm_evaluation(kind, N, M, Q=5, D=12, seed=0):
    """A callable running one UnscentedGPLVM bound + gradient at a fixed random state."""
    import numpy as np

    from sklearn_lvgp import UnscentedGPLVM
    from sklearn_lvgp.expectations import make_rule
    from sklearn_lvgp.kernels import RBF, Matern32

    rng = np.random.RandomState(seed)
    Y = rng.standard_normal((N, D))
    p = {"mu": rng.standard_normal((N, Q)), "S": np.full((N, Q), 0.1),
         "Z": rng.standard_normal((M, Q)), "noise": 0.1}
    kernel = (RBF if kind == "rbf" else Matern32)(length_scale=np.ones(Q)).initialize(Q, rng)
    rule = make_rule("analytic" if kind == "rbf" else "unscented", kernel, Q)[1]
    est = UnscentedGPLVM(n_components=Q)
    try:  # the engine's bound object (this version) or the workspace (earlier versions)
        from sklearn_lvgp.bounds._collapsed import CollapsedPsiBound

        extra = {"bound": CollapsedPsiBound(Y)}
    except ImportError:
        from sklearn_lvgp._core.workspace import Workspace

        extra = {"workspace": Workspace()}
    if not hasattr(est, "_elbo_and_grads"):  # the estimator calls its bound directly now
        bound = extra["bound"]
        return lambda: bound.elbo(kernel, p["Z"], p["mu"], p["S"], p["noise"], rule, jitter=1e-6)
    return lambda: est._elbo_and_grads(kernel, Y, p, rule, 1e-6, **extra)


def _sgpr_evaluation(N, M, Q=8, seed=0):
    """A callable running one SparseGPRegressor bound + gradient (deterministic inputs)."""
    import numpy as np

    from sklearn_lvgp.kernels import RBF
    from sklearn_lvgp.models import _sgpr

    rng = np.random.RandomState(seed)
    X = rng.uniform(-2, 2, (N, Q))
    Y = (np.sin(X[:, :1]) + 0.1 * rng.standard_normal((N, 1)))
    Z = X[:M] + 0.01
    kernel = RBF(length_scale=np.ones(Q)).initialize(Q, rng)
    extra = {}
    if hasattr(_sgpr, "_make_bound"):
        extra = {"bound": _sgpr._make_bound(X, Y, None)}
    return lambda: _sgpr.sgpr_bound_and_grads(kernel, X, Y, Z, 0.1, **extra)


def run_threads(args):
    import numpy as np

    from sklearn_lvgp._core.parallel import threads

    thread_counts = [int(t) for t in args.threads.split(",")]
    N = args.n_rows
    configs = {
        f"UnscentedGPLVM analytic RBF, M={args.gplvm_inducing}":
            _gplvm_evaluation("rbf", N, args.gplvm_inducing),
        f"UnscentedGPLVM UT Matérn 3/2, M={args.gplvm_inducing}":
            _gplvm_evaluation("matern32", N, args.gplvm_inducing),
        f"SparseGPRegressor, M={args.sgpr_inducing}": _sgpr_evaluation(N, args.sgpr_inducing),
    }
    out = {}
    for name, evaluate in configs.items():
        times = {n: [] for n in thread_counts}
        for n in thread_counts:  # warm-up: compile, buffers, the pool's threads
            with threads(n):
                evaluate()
        for r in range(args.repeats):
            order = thread_counts[r % len(thread_counts):] + thread_counts[:r % len(thread_counts)]
            for n in order:
                with threads(n):
                    t0 = time.perf_counter()
                    evaluate()
                    times[n].append(time.perf_counter() - t0)
        base = np.asarray(times[thread_counts[0]])
        out[name] = {
            str(n): {"median_s": float(np.median(t)),
                     "speedup_median": float(np.median(base / np.asarray(t))),
                     "speedup_min": float(np.min(base / np.asarray(t))),
                     "speedup_max": float(np.max(base / np.asarray(t)))}
            for n, t in times.items()}
        print(f"{name}: " + "  ".join(
            f"{n}: {v['median_s'] * 1e3:.1f} ms ({v['speedup_median']:.2f}x)"
            for n, v in out[name].items()), flush=True)
    header = [f"evaluation (N = {N})"] + [f"{n} thr" for n in thread_counts]
    rows = [[name] + [f"{v['median_s'] * 1e3:.1f} ms ({v['speedup_median']:.2f}x)"
                      for v in res.values()] for name, res in out.items()]
    _print_table(header, rows)
    return {"n_rows": N, "threads": thread_counts, "repeats": args.repeats, "results": out}


# ------------------------------------------------------- one evaluation against threads

def _thread_curve(fn, thread_counts, repeats, label):
    """Median time of ``fn()`` per thread count (interleaved, after a warm-up round) and the
    median per-repeat speed-up over the first count; prints one line."""
    import numpy as np

    from sklearn_lvgp._core.parallel import threads

    times = {n: [] for n in thread_counts}
    for rep in range(repeats + 1):
        for n in (thread_counts if rep % 2 == 0 else thread_counts[::-1]):
            with threads(n):
                t0 = time.perf_counter()
                fn()
                if rep:  # the first round is the warm-up
                    times[n].append(time.perf_counter() - t0)
    base = np.asarray(times[thread_counts[0]])
    out = {str(n): {"median_s": float(np.median(t)),
                    "speedup_median": float(np.median(base / np.asarray(t)))}
           for n, t in times.items()}
    print(f"{label}: " + "  ".join(f"{n}: {v['median_s'] * 1e3:.1f} ms "
                                   f"({v['speedup_median']:.2f}x)" for n, v in out.items()),
          flush=True)
    return out


# ------------------------------------------------------------------------- chunk profile

def run_chunks(args):
    import threading

    import numpy as np

    from sklearn_lvgp._core.parallel import threads
    from sklearn_lvgp.engine import _executor

    records, passes = [], []  # (pass, thread, start, stop) per chunk; (pass, start, stop, n)
    # the chunk pass is ChunkExecutor.run (ChunkExecutor._run before the pairwise sums)
    method = "_run" if hasattr(_executor.ChunkExecutor, "_run") else "run"
    run = getattr(_executor.ChunkExecutor, method)

    def timed_run(self, fn, chunks, consume):
        index = len(passes)

        def timed(i, a, b):
            t0, c0 = time.perf_counter(), time.thread_time()
            result = fn(i, a, b)
            records.append((index, threading.get_ident(), t0, time.perf_counter(),
                            time.thread_time() - c0))
            return result

        t0 = time.perf_counter()
        run(self, timed, chunks, consume)
        passes.append((index, t0, time.perf_counter(), len(chunks)))

    setattr(_executor.ChunkExecutor, method, timed_run)
    thread_counts = [int(t) for t in args.threads.split(",")]
    out = {}
    evaluations = {kind: functools.partial(_gplvm_evaluation, kind, args.n_rows,
                                           args.gplvm_inducing) for kind in ("rbf", "matern32")}
    evaluations["sgpr"] = functools.partial(_sgpr_evaluation, args.n_rows, args.sgpr_inducing)
    evaluations["deepgp"] = functools.partial(_deepgp_evaluation, 10_000, args.gplvm_inducing)
    for kind, make in evaluations.items():
        evaluate = make()
        for n in thread_counts:  # warm-up
            with threads(n):
                evaluate()
        for n in thread_counts:
            repeats = []
            for _ in range(3):
                records.clear()
                passes.clear()
                with threads(n):
                    t0 = time.perf_counter()
                    evaluate()
                    wall = time.perf_counter() - t0
                per_pass = []
                for index, start, stop, n_chunks in passes:
                    d = np.array([r[3] - r[2] for r in records if r[0] == index])
                    cpu = np.array([r[4] for r in records if r[0] == index])
                    per_pass.append({
                        "wall_ms": (stop - start) * 1e3, "chunks": n_chunks,
                        "chunk_sum_ms": float(d.sum()) * 1e3,
                        "chunk_cpu_sum_ms": float(cpu.sum()) * 1e3,
                        "chunk_mean_ms": float(d.mean()) * 1e3,
                        "chunk_max_ms": float(d.max()) * 1e3,
                        "threads_used": len({r[1] for r in records if r[0] == index}),
                        "util": float(d.sum()) / (min(n, n_chunks) * (stop - start))})
                repeats.append({"wall_ms": wall * 1e3, "passes": per_pass,
                                "outside_passes_ms":
                                    (wall - sum(p[2] - p[1] for p in passes)) * 1e3})
            out[f"{kind} {n}"] = repeats
            r = sorted(repeats, key=lambda r: r["wall_ms"])[1]
            print(f"{kind} n={n}: wall {r['wall_ms']:.1f} ms, outside passes "
                  f"{r['outside_passes_ms']:.1f} ms; " + "; ".join(
                      f"pass of {p['chunks']} chunks: wall {p['wall_ms']:.1f} ms, chunk mean "
                      f"{p['chunk_mean_ms']:.2f} max {p['chunk_max_ms']:.2f} ms, thread CPU "
                      f"{p['chunk_cpu_sum_ms'] / p['chunk_sum_ms']:.0%} of the chunks' wall "
                      f"time, utilisation {p['util']:.2f}" for p in r["passes"]), flush=True)
    setattr(_executor.ChunkExecutor, method, run)
    return {"n_rows": args.n_rows, "threads": thread_counts, "results": out}


# ------------------------------------------------------------------------ machine ceiling

def run_ceiling(args):
    import threading

    import numba
    import numpy as np
    from threadpoolctl import threadpool_limits

    @numba.njit(nogil=True)
    def latency(x, reps):
        s = 0.0
        for r in range(reps):
            for i in range(x.shape[0]):
                s += np.exp(-0.5 * x[i] * x[i] * (1.0 + 1e-9 * r))
        return s

    @numba.njit(nogil=True, fastmath=True)
    def vector(x, y, reps):
        for _ in range(reps):
            for i in range(x.shape[0]):
                y[i] = np.exp(-0.5 * x[i] * x[i]) * y[i] + x[i]
        return y[0]

    def gemm(a, b, reps):
        c = np.empty_like(a)
        for _ in range(reps):
            np.matmul(a, b, out=c)

    @numba.njit(nogil=True)
    def stream(a, b, reps):
        for _ in range(reps):
            for i in range(a.shape[0]):
                b[i] = a[i] * 1.0000001 + b[i]
        return b[0]

    rng = np.random.default_rng(0)
    cases = {
        "latency-bound exp loop": (latency, lambda: (rng.random(4096),), 3000),
        "vectorised exp (L2)": (vector, lambda: (rng.random(16384), rng.random(16384)), 3000),
        "dgemm 256 (1 BLAS thread)":
            (gemm, lambda: (rng.random((256, 256)), rng.random((256, 256))), 150),
        "stream 2x32MB": (stream, lambda: (rng.random(4_000_000), np.zeros(4_000_000)), 15),
    }

    def timed(fn, make, n, reps):
        data = [make() for _ in range(n)]
        fn(*data[0], 1)  # compile
        workers = [threading.Thread(target=fn, args=(*d, reps)) for d in data]
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return time.perf_counter() - t0

    counts = [1, 2, 4, 8, 12, 16]
    out = {}
    with threadpool_limits(1):
        for name, (fn, make, reps) in cases.items():
            base = None
            out[name] = {}
            for n in counts:
                t = min(timed(fn, make, n, reps) for _ in range(3))
                base = base or t
                out[name][str(n)] = {"time_ms": t * 1e3, "throughput": n * base / t}
            print(f"{name}: " + "  ".join(f"{n}: {v['throughput']:.2f}x"
                                          for n, v in out[name].items()), flush=True)
    return {"threads": counts, "results": out}


# ------------------------------------------------------------------------------- deep GP

def _deepgp_evaluation(batch, n_inducing):
    """One Adam step's ELBO + gradient of a 2-layer ``DeepGP`` (D = 8) on a ``batch``-row
    minibatch, Monte Carlo with one sample, as a callable."""
    import warnings

    import numpy as np

    from sklearn_lvgp import DeepGP

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (batch, 8))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(batch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DeepGP(n_layers=2, n_inducing=n_inducing, max_iter=1, batch_size=batch,
                   random_state=0).fit(X[:2000], y[:2000])
    Xs = (X - m.X_mean_) / m.X_scale_
    Ys = (y[:, None] - m.y_mean_) / m.y_scale_
    return lambda: m._model.elbo(m._x, Xs, Ys, 1.0, 1, np.random.RandomState(0))


def run_deepgp(args):
    thread_counts = [int(t) for t in args.threads.split(",")]
    out = {}
    for batch in [int(b) for b in args.deepgp_batches.split(",")]:
        out[str(batch)] = _thread_curve(_deepgp_evaluation(batch, args.gplvm_inducing),
                                        thread_counts, args.repeats, f"DeepGP batch {batch}")
    return {"threads": thread_counts, "repeats": args.repeats, "results": out}


# ---------------------------------------------------------------------------------- LDGD

def run_ldgd(args):
    import numpy as np

    from sklearn_lvgp.bounds._ldgd_objective import preset_factors
    from sklearn_lvgp.bounds._ldgd_problem import TrainingProblem
    from sklearn_lvgp.expectations import unscented_rule
    from sklearn_lvgp.kernels import RBF

    thread_counts = [int(t) for t in args.threads.split(",")]
    N, D, K, Q, M = args.n_rows, 12, 3, 7, args.ldgd_inducing
    r = np.random.default_rng(0)
    Yr = r.standard_normal((N, D))
    Yc = np.eye(K)[np.arange(N) % K]
    kr = RBF(length_scale=np.ones(Q)).initialize(Q, np.random.RandomState(0))
    kc = RBF(length_scale=np.ones(Q)).initialize(Q, np.random.RandomState(1))
    prob = TrainingProblem(Yr, Yc, kr, kc, M, M, Q, (1.0, 1.0) + preset_factors("paper", D, K))
    x = prob.pack({"theta_r": kr.theta, "theta_c": kc.theta, "Z_r": r.standard_normal((M, Q)),
                   "Z_c": r.standard_normal((M, Q)), "qmu_r": r.standard_normal((M, D)),
                   "qmu_c": r.standard_normal((M, K)),
                   "qsqrt_r": np.tile(np.eye(M), (D, 1, 1)), "qsqrt_c": np.tile(np.eye(M),
                                                                                 (K, 1, 1)),
                   "noise": np.ones(D), "mu": r.standard_normal((N, Q)),
                   "sigma": np.full((N, Q), 0.3)})
    rule = unscented_rule(Q)
    out = {}
    for batch in [int(b) for b in args.ldgd_batches.split(",")]:
        idx = np.sort(r.choice(N, batch, replace=False))
        out[str(batch)] = _thread_curve(
            lambda idx=idx: prob.value_and_grad(x, idx, rule.nodes, rule.weights),
            thread_counts, args.repeats, f"LDGD batch {batch}")
    return {"threads": thread_counts, "repeats": args.repeats, "n_rows": N, "inducing": M,
            "results": out}


# --------------------------------------------------------------------------------- GPCDE

def run_gpcde(args):
    import warnings

    import numpy as np
    from sklearn.datasets import load_diabetes

    from sklearn_lvgp import GPCDE

    thread_counts = [int(t) for t in args.threads.split(",")]
    X, y = load_diabetes(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = GPCDE(gh_order=100, max_iter=2, optimizer="adam", random_state=0).fit(X, y)
    Xs = (X - m.X_mean_) / m.X_scale_
    Ys = (y[:, None] - m.y_mean_) / m.y_scale_
    rows = np.arange(X.shape[0])
    out = _thread_curve(
        lambda: m._model.elbo(m._x, Xs, Ys, rows, 1.0, np.random.RandomState(0)),
        thread_counts, args.repeats, "GPCDE (100 quadrature nodes, diabetes, full batch)")
    return {"threads": thread_counts, "repeats": args.repeats, "results": out}


# --------------------------------------------------------------------------------- DVMGP

def run_dvmgp(args):
    import numpy as np

    try:
        from sklearn_lvgp.bounds._dvmgp import dvmgp_objective as _elbo_and_grads
    except ImportError:  # checkouts from before the objective moved beside the bound
        from sklearn_lvgp.models._dvmgp import _elbo_and_grads

    thread_counts = [int(t) for t in args.threads.split(",")]
    N, D, Q, m_v, m_u = args.n_rows, 8, 2, 10, 30
    r = np.random.default_rng(0)
    X = r.standard_normal((N, D))
    Y = np.sin(X[:, :1]) + 0.1 * r.standard_normal((N, 1))
    p = {"zeta": r.standard_normal((m_u, Q)), "Xi": r.standard_normal((m_v, D)),
         "mu": 0.3 * r.standard_normal((Q, m_v, D)), "c_diag": np.full((Q, m_v), 0.5),
         "wtheta": np.zeros((Q, 1 + D)), "signal_std": 1.0, "noise": 0.1}
    # as a fit's objective calls it: with one list of chunk workspaces kept across evaluations
    # (versions without the argument are called without it)
    import inspect

    extra = ({"workspaces": []} if "workspaces" in inspect.signature(_elbo_and_grads).parameters
             else {})
    out = _thread_curve(lambda: _elbo_and_grads(X, Y, p, 1e-6, "diag", **extra), thread_counts,
                        args.repeats, f"DVMGP bound + gradient, N = {N}")
    return {"threads": thread_counts, "repeats": args.repeats, "n_rows": N, "results": out}


# ----------------------------------------------------------------------------------- rss

_RSS_CHILD = r"""
import resource, sys, time, warnings
sys.path.insert(0, sys.argv[1])
import numpy as np
from sklearn_lvgp import UnscentedGPLVM
N, M, iters, n_jobs, inner = (int(a) for a in sys.argv[2:7])
optimizer = sys.argv[7]
if inner > 0:  # L-BFGS-B iterations of the alternating optimiser's steps (memory: the same)
    import sklearn_lvgp.optim._alternating as alternating
    alternating.LOCAL_ITER = alternating.GLOBAL_ITER = inner
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
Y = np.random.RandomState(0).standard_normal((N, 12))
t0 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    UnscentedGPLVM(n_components=5, n_inducing=M, max_iter=iters, random_state=0,
                   n_jobs=n_jobs, optimizer=optimizer).fit(Y)
print(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter() - t0)
"""


def run_rss(args):
    rows = [int(n) for n in args.rss_rows.split(",")]
    inducing = [int(m) for m in args.rss_inducing.split(",")]
    source = str(Path(args.source).resolve() if args.source else REPO)
    out = {}
    for M in inducing:
        out[str(M)] = {}
        for N in rows:
            res = subprocess.run(
                [sys.executable, "-c", _RSS_CHILD, source, str(N), str(M), str(args.rss_iter),
                 str(args.rss_jobs), str(args.rss_inner_iter), args.rss_optimizer],
                capture_output=True, text=True, check=False)
            if res.returncode != 0:
                print(res.stderr[-2000:], file=sys.stderr)
                out[str(M)][str(N)] = None
                continue
            before, peak, seconds = res.stdout.split()[-3:]
            out[str(M)][str(N)] = {"rss_before_MB": int(before) / 1024,
                                   "peak_rss_MB": int(peak) / 1024, "fit_s": float(seconds)}
            print(f"M={M} N={N}: peak {int(peak) / 1024:.0f} MB "
                  f"(process before data {int(before) / 1024:.0f} MB), fit {float(seconds):.1f} s",
                  flush=True)
    header = ["M"] + [f"N = {N:,}" for N in rows] + ["slope (bytes/row)"]
    table = []
    for M, res in out.items():
        cells = [f"{v['peak_rss_MB']:.0f} MB" if v else "failed" for v in res.values()]
        vals = [v for v in res.values() if v]
        slope = "–"
        if len(vals) >= 2:
            n1, n2 = [int(k) for k, v in res.items() if v][-2:]
            slope = f"{(vals[-1]['peak_rss_MB'] - vals[-2]['peak_rss_MB']) * 2**20 / (n2 - n1):.0f}"
        table.append([M] + cells + [slope])
    _print_table(header, table)
    return {"rows": rows, "inducing": inducing, "max_iter": args.rss_iter,
            "optimizer": args.rss_optimizer,
            "n_jobs": args.rss_jobs, "results": out}


# ---------------------------------------------------------------------------------- dask

def run_dask(args):
    import warnings

    import dask.array as da
    import numpy as np
    from distributed import Client, LocalCluster

    from sklearn_lvgp import DeepGP
    from sklearn_lvgp._core.parallel import threads
    from sklearn_lvgp.bounds import CollapsedKernelBound
    from sklearn_lvgp.engine._dask import DaskRows
    from sklearn_lvgp.expectations import make_rule
    from sklearn_lvgp.kernels import RBF
    from sklearn_lvgp.optim._alternating import DaskLocals

    N, workers = args.n_rows, [int(w) for w in args.dask_workers.split(",")]
    rng = np.random.RandomState(0)
    X = rng.uniform(-2, 2, (N, 8))
    y = np.sin(X[:, :1]) + 0.1 * rng.standard_normal((N, 1))
    Y = rng.standard_normal((N, 12))
    mu, S = rng.standard_normal((N, 5)), np.full((N, 5), 0.1)
    k8 = RBF(length_scale=np.ones(8)).initialize(8, rng)
    k5 = RBF(length_scale=np.ones(5)).initialize(5, rng)
    Zx, Zl = X[:args.sgpr_inducing] + 0.01, rng.standard_normal((args.gplvm_inducing, 5))
    rule = make_rule("analytic", k5, 5)[1]
    part = -(-N // args.dask_partitions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dgp = DeepGP(n_layers=2, n_inducing=args.gplvm_inducing, max_iter=1,
                     random_state=0).fit(X[:2000], y[:2000, 0])
    batch = rng.choice(N, 10_000, replace=False)
    out = {}
    for w in workers:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cluster = LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                                   dashboard_address=None, host="127.0.0.1")
            client = Client(cluster)
        try:
            sgpr = CollapsedKernelBound(rows=DaskRows({"X": da.from_array(X, chunks=(part, 8)),
                                                       "y": da.from_array(y, chunks=(part, 1))}))
            gplvm = DaskLocals(DaskRows({"Y": da.from_array(Y, chunks=(part, 12))}))
            gplvm.set_locals(mu, S)
            deep = DaskRows({"X": da.from_array(X, chunks=(part, 8)),
                             "y": da.from_array(y, chunks=(part, 1))})
            runs = {"SparseGPRegressor bound + gradient":
                        functools.partial(sgpr.evaluate, k8, Zx, 0.1),
                    "UnscentedGPLVM global evaluation":
                        functools.partial(gplvm.evaluate, k5, Zl, 0.1, rule),
                    "DeepGP Adam-step gradient (10 000-row minibatch)":
                        lambda deep=deep: dgp._model.evaluate(
                            dgp._x, deep.subset(batch, extra=dgp._model.draw_rows(
                                batch.size, 1, np.random.RandomState(0))), N / batch.size, 1)}
            for name, fn in runs.items():
                times = []
                # the driver's share as in a fit with the default n_jobs (one thread)
                with threads(1):
                    fn()
                    for _ in range(args.repeats):
                        t0 = time.perf_counter()
                        fn()
                        times.append(time.perf_counter() - t0)
                out.setdefault(name, {})[str(w)] = float(np.median(times))
                print(f"{name}, {w} worker(s): {np.median(times) * 1e3:.0f} ms", flush=True)
        finally:
            client.close()
            cluster.close()
    header = [f"evaluation (N = {N:,}, {args.dask_partitions} partitions)"]
    header += [f"{w} worker(s)" for w in workers]
    rows = [[name] + [f"{t[str(w)] * 1e3:.0f} ms ({t[str(workers[0])] / t[str(w)]:.2f}x)"
                      for w in workers] for name, t in out.items()]
    _print_table(header, rows)
    return {"n_rows": N, "workers": workers, "partitions": args.dask_partitions,
            "results": out}


def _print_table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", required=True,
                        choices=("threads", "chunks", "ceiling", "rss", "dask", "deepgp", "ldgd",
                                 "gpcde", "dvmgp"))
    parser.add_argument("--source", default=None, help="checkout to time (default: this one)")
    parser.add_argument("--label", default="current")
    parser.add_argument("--n-rows", type=int, default=50_000)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--gplvm-inducing", type=int, default=100)
    parser.add_argument("--sgpr-inducing", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rss-rows", default="100000,200000,400000,1000000")
    parser.add_argument("--rss-inducing", default="100,300")
    parser.add_argument("--rss-iter", type=int, default=2)
    parser.add_argument("--rss-jobs", type=int, default=-1)
    parser.add_argument("--rss-optimizer", default="auto",
                        help="UnscentedGPLVM optimizer of the fits (auto, lbfgs, alternating)")
    parser.add_argument("--rss-inner-iter", type=int, default=0,
                        help="inner L-BFGS-B iterations of the alternating optimiser (0: "
                             "the library's)")
    parser.add_argument("--deepgp-batches", default="10000,1000")
    parser.add_argument("--ldgd-batches", default="10000,100")
    parser.add_argument("--ldgd-inducing", type=int, default=25)
    parser.add_argument("--dask-workers", default="1,2")
    parser.add_argument("--dask-partitions", type=int, default=8)
    parser.add_argument("--parallel-min-work", default=None,
                        help="work below which jitted twins run serially (default: the "
                             "library's)")
    parser.add_argument("--parallel-global-steps", action="store_true",
                        help="let the engine's global steps open numba parallel regions (the "
                             "baseline of holding them serial)")
    parser.add_argument("--pointset-chunks", action="store_true",
                        help="unscented chunks through the point-set path instead of one "
                             "jitted call per chunk (the baseline of that path)")
    parser.add_argument("--out", default=str(HERE / "results"))
    args = parser.parse_args(argv)
    _import_path(args.source)
    if args.parallel_min_work is not None:
        from sklearn_lvgp._compile import jit as _jit

        _jit.PARALLEL_MIN_WORK = int(float(args.parallel_min_work))
    if args.parallel_global_steps:
        from sklearn_lvgp._compile import jit as _jit

        _jit.twins_held_serial = lambda: False
    if args.pointset_chunks:
        from sklearn_lvgp.bounds import _collapsed

        _collapsed.uses_one_call = lambda kernel, rule, n_chunks: False
    payload = {"threads": run_threads, "chunks": run_chunks, "ceiling": run_ceiling,
               "rss": run_rss, "dask": run_dask,
               "deepgp": run_deepgp, "ldgd": run_ldgd, "gpcde": run_gpcde,
               "dvmgp": run_dvmgp}[args.part](args)
    payload["command"] = "python benchmarks/bench_scaling.py " + " ".join(sys.argv[1:])
    payload["cpu_count"] = os.cpu_count()
    payload["parallel_min_work"] = args.parallel_min_work
    payload["parallel_global_steps"] = args.parallel_global_steps
    payload["pointset_chunks"] = args.pointset_chunks
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = f"scaling_{args.part}_{args.label}.json"
    (out / name).write_text(json.dumps(payload, indent=1) + "\n")
    print(f"wrote {out / name}")


if __name__ == "__main__":
    main()
