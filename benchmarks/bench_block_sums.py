"""Benchmark ``block_sums``: the engine's pairwise sums and bound-set chunk sizes against the
engine before them, in one process.

The "before" side re-creates the executor of commit fb622f0 inside this checkout: one chunk per
task, partials added left to right into a copy of the first, and chunk plans without a bound's
least work per chunk (``chunk_cost``'s optional fourth element). The "after" side is this
checkout. Calls alternate between the two (after a warm-up call of each plan), so both see the
same machine load; the table gives medians of each side and the median per-repeat ratio, of
the wall time and, with one thread, of the calling thread's CPU time (it runs every chunk
then; on a shared machine the CPU time is the steadier measure).

Cases (``--cases``, comma-separated):

``psi-rbf``, ``psi-mat``, ``sgpr``
    One collapsed bound + gradient (analytic RBF, unscented Matérn 3/2, deterministic SGPR;
    D = 12, Q = 5, M = 50) at ``--n-rows`` rows, as ``bench_layout.py``.
``deepgp-small``
    ``bench_layout.py``'s DeepGP bound + gradient (2 layers, M = 50) at ``--n-rows`` rows.
``deepgp``, ``ldgd``, ``dvmgp``, ``gpcde``, ``gpcde20``
    ``bench_scaling.py``'s minibatch step of DeepGP (10⁴ rows, M = 100), LDGD (a 10⁴-row
    batch of 5·10⁴ rows), DVMGP (N = 5·10⁴), GP-CDE on diabetes with 100 quadrature nodes, and
    with the default 20.

Usage::

    python benchmarks/bench_block_sums.py --cases psi-rbf,psi-mat,sgpr --n-rows 20000 \\
        --threads 1,2 --repeats 15 --label local_2core_20k
"""

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def case(name, n_rows):
    """A callable running one evaluation of the case."""
    import bench_layout
    import bench_scaling

    if name == "deepgp-small":
        return bench_layout._deep_gp_case(n_rows)
    if name in ("psi-rbf", "psi-mat", "sgpr"):
        cases = bench_layout._cases(n_rows)
        return cases[{"psi-rbf": "collapsed Psi, analytic RBF",
                      "psi-mat": "collapsed Psi, unscented Matern32",
                      "sgpr": "collapsed kernel (SGPR)"}[name]]
    if name == "deepgp":
        return bench_scaling._deepgp_evaluation(10_000, 100)
    if name == "ldgd":
        return _ldgd()
    if name in ("gpcde", "gpcde20"):
        return _gpcde(100 if name == "gpcde" else 20)
    if name == "dvmgp":
        return _dvmgp()
    raise ValueError(f"unknown case {name!r}")


def _ldgd():
    from sklearn_lvgp.bounds._ldgd_objective import preset_factors
    from sklearn_lvgp.bounds._ldgd_problem import TrainingProblem
    from sklearn_lvgp.expectations import unscented_rule
    from sklearn_lvgp.kernels import RBF

    N, D, K, Q, M = 50_000, 12, 3, 7, 25
    r = np.random.default_rng(0)
    Yr = r.standard_normal((N, D))
    Yc = np.eye(K)[np.arange(N) % K]
    kr = RBF(length_scale=np.ones(Q)).initialize(Q, np.random.RandomState(0))
    kc = RBF(length_scale=np.ones(Q)).initialize(Q, np.random.RandomState(1))
    prob = TrainingProblem(Yr, Yc, kr, kc, M, M, Q, (1.0, 1.0) + preset_factors("paper", D, K))
    x = prob.pack({"theta_r": kr.theta, "theta_c": kc.theta, "Z_r": r.standard_normal((M, Q)),
                   "Z_c": r.standard_normal((M, Q)), "qmu_r": r.standard_normal((M, D)),
                   "qmu_c": r.standard_normal((M, K)),
                   "qsqrt_r": np.tile(np.eye(M), (D, 1, 1)),
                   "qsqrt_c": np.tile(np.eye(M), (K, 1, 1)),
                   "noise": np.ones(D), "mu": r.standard_normal((N, Q)),
                   "sigma": np.full((N, Q), 0.3)})
    rule = unscented_rule(Q)
    idx = np.sort(r.choice(N, 10_000, replace=False))
    return lambda: prob.value_and_grad(x, idx, rule.nodes, rule.weights)


def _gpcde(gh_order):
    import warnings

    from sklearn.datasets import load_diabetes

    from sklearn_lvgp import GPCDE

    X, y = load_diabetes(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = GPCDE(gh_order=gh_order, max_iter=2, optimizer="adam", random_state=0).fit(X, y)
    Xs = (X - m.X_mean_) / m.X_scale_
    Ys = (y[:, None] - m.y_mean_) / m.y_scale_
    rows = np.arange(X.shape[0])
    return lambda: m._model.elbo(m._x, Xs, Ys, rows, 1.0, np.random.RandomState(0))


def _dvmgp():
    from sklearn_lvgp.models._dvmgp import _elbo_and_grads

    N, D, Q, m_v, m_u = 50_000, 8, 2, 10, 30
    r = np.random.default_rng(0)
    X = r.standard_normal((N, D))
    Y = np.sin(X[:, :1]) + 0.1 * r.standard_normal((N, 1))
    p = {"zeta": r.standard_normal((m_u, Q)), "Xi": r.standard_normal((m_v, D)),
         "mu": 0.3 * r.standard_normal((Q, m_v, D)), "c_diag": np.full((Q, m_v), 0.5),
         "wtheta": np.zeros((Q, 1 + D)), "signal_std": 1.0, "noise": 0.1}
    workspaces = []
    return lambda: _elbo_and_grads(X, Y, p, 1e-6, "diag", workspaces=workspaces)


class _Modes:
    """Switches the engine between this checkout ("after") and the executor before it."""

    def __init__(self):
        from sklearn_lvgp.engine import _executor, _rows

        self.E, self.R = _executor, _rows
        self.new_pass, self.new_plan = _rows.InMemoryRows._pass, _rows.plan_blocks

    def old_plan(self, bound, G, n_rows, chunk_rows=None):
        work, max_rows = bound.chunk_cost(G)[:2]
        return self.E.plan_chunks(n_rows, work,
                                  max_rows=None if max_rows is None else max(1, max_rows),
                                  chunk_rows=chunk_rows)

    def old_pass(self, rows, fn, head, plan, names, backward):
        E = self.E
        names = tuple(rows.arrays) if names is None else names
        locals_ = [None] * len(plan.chunks)

        def chunk(i, a, b):
            out = fn(*head, rows._rows(names, a, b), rows._context(plan, i, a, b))
            if backward:
                locals_[i] = out[0]
                plan.cache[i] = None
                out = out[1]
            return out

        acc = []

        def add(part):
            if acc:
                acc[0] = E._add_into(acc[0], part)
            else:
                acc.append(E._copy(part))

        E.ChunkExecutor(rows.n_threads).run(chunk, plan.chunks, add)
        return acc[0], locals_

    def set(self, mode):
        modes = self
        if mode == "before":
            def old(rows, *args):
                return modes.old_pass(rows, *args)

            self.R.InMemoryRows._pass = old
            self.R.plan_blocks = self.old_plan
        else:
            self.R.InMemoryRows._pass = self.new_pass
            self.R.plan_blocks = self.new_plan
        for obj in gc.get_objects():  # cached plans of the case's row sources
            if isinstance(obj, self.R.InMemoryRows):
                obj._plans.clear()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", required=True)
    parser.add_argument("--n-rows", type=int, default=1000)
    parser.add_argument("--threads", default="1")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--label", default="current")
    parser.add_argument("--out", default=str(HERE / "results"))
    args = parser.parse_args(argv)
    from sklearn_lvgp._core.parallel import threads

    modes = _Modes()
    out = {}
    for name in args.cases.split(","):
        fn = case(name, args.n_rows)
        for n in [int(t) for t in args.threads.split(",")]:
            times = {"before": [], "after": []}
            cpu = {"before": [], "after": []}
            with threads(n):
                for rep in range(args.repeats):
                    for mode in (("before", "after") if rep % 2 == 0 else ("after", "before")):
                        modes.set(mode)
                        fn()  # the plan's first call (workspaces, caches) is not timed
                        t0, c0 = time.perf_counter(), time.thread_time()
                        fn()
                        cpu[mode].append(time.thread_time() - c0)
                        times[mode].append(time.perf_counter() - t0)
            b, a = (np.asarray(times[m]) for m in ("before", "after"))
            key = f"{name} {n} thread{'s' if n > 1 else ''}"
            out[key] = {"before_ms": 1e3 * float(np.median(b)),
                        "after_ms": 1e3 * float(np.median(a)),
                        "ratio_median": float(np.median(a / b)),
                        "before_min_ms": 1e3 * float(b.min()),
                        "after_min_ms": 1e3 * float(a.min())}
            line = (f"{key:28s} before {out[key]['before_ms']:9.2f} ms  after "
                    f"{out[key]['after_ms']:9.2f} ms  ratio {out[key]['ratio_median']:.3f}")
            if n == 1:
                cb, ca = (np.asarray(cpu[m]) for m in ("before", "after"))
                out[key].update(before_cpu_ms=1e3 * float(np.median(cb)),
                                after_cpu_ms=1e3 * float(np.median(ca)),
                                cpu_ratio_median=float(np.median(ca / cb)))
                line += (f"  CPU {out[key]['before_cpu_ms']:9.2f} / "
                         f"{out[key]['after_cpu_ms']:9.2f} ms  ratio "
                         f"{out[key]['cpu_ratio_median']:.3f}")
            print(line, flush=True)  # noqa: T201
    payload = {"command": "python benchmarks/bench_block_sums.py " + " ".join(sys.argv[1:]),
               "n_rows": args.n_rows, "repeats": args.repeats,
               "load_average": list(os.getloadavg()), "results": out}
    path = Path(args.out) / f"block_sums_{args.label}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1) + "\n")
    print(f"wrote {path}")  # noqa: T201


if __name__ == "__main__":
    main()
