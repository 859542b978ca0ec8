"""Run the sklearn_lvgp benchmarks, write ``benchmarks/results/<name>.json`` and print tables.

Usage::

    python benchmarks/run.py            # everything but the opt-in ones (~3 min quiet, up to
                                        # ~10 min under load)
    python benchmarks/run.py --quick    # smoke run: small sizes, few repeats (1-2 minutes);
                                        # writes results/quick/, never the measured results
    python benchmarks/run.py --only bound_grad --only psi2_gemm

Benchmarks (see ``benchmarks/README.rst``):

``bound_grad``
    One ELBO + gradient evaluation (what L-BFGS-B calls) at N=1000, D=12, Q=5, M=20 for analytic
    RBF, UT RBF, UT Matérn 3/2 and GH(2) Matérn 3/2, 1 and 2 threads, against GPy's
    BayesianGPLVM timed in the same repeats by a peer interpreter (``LVGP_PEER_PYTHON``).
``psi_scaling``
    Ψ-statistics cost and Ψ1/Ψ2 error against Q (UT, GH(2), MC(200) vs the closed form).
``psi2_gemm``
    Unscented Ψ forward throughput at N=10⁵, M=100, Q=10 against a GEMM of the same size.

``sgpr_fit``
    SparseGPRegressor fit + predict (N = 2,000 / 20,000, D = 8, M = 100) against scikit-learn's
    exact GaussianProcessRegressor (N = 2,000) and GPy's SparseGPRegression: time and test NLPD.
``sgpr_kin8nm``
    The 2017 reference notebook's collapsed SGP on its kin8nm split and scaling, from its start:
    bound and test log-likelihood, ours and GPy's, next to the notebook's printed values (needs
    ``../shared/data``; about 15 minutes, most of it GPy; not in the default run).

``dvmgp_bound_grad``, ``deep_gp_adam_step``, ``deep_gp_layer_backward``, ``deep_gp_latent_step``
    See ``bench_dvmgp.py`` and ``bench_deep_gp.py``.

``gpcde_iteration``, ``ldgd_step``, ``ldgd_fit``, ``ldgd_iterations``
    See ``bench_gpcde.py`` and ``bench_ldgd.py``.
``likelihood_step_cost``, ``likelihood_classifier_threads``
    See ``bench_likelihoods.py``.

The machine description goes to ``results/machine.json`` on every run. The markdown printed here
is what ``RESULTS.md`` quotes.
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, ensure_repo_on_path, machine_info, write_json  # noqa: E402

ensure_repo_on_path()

import bench_deep_gp  # noqa: E402
import bench_dvmgp  # noqa: E402
import bench_fit  # noqa: E402
import bench_gpcde  # noqa: E402
import bench_ldgd  # noqa: E402
import bench_likelihoods  # noqa: E402
import bench_psi  # noqa: E402
import bench_sgpr  # noqa: E402

BENCHMARKS = {
    "bound_grad": (bench_fit.run, bench_fit.report),
    "psi_scaling": (bench_psi.run_scaling, bench_psi.report_scaling),
    "psi2_gemm": (bench_psi.run_gemm, bench_psi.report_gemm),
    "sgpr_fit": (bench_sgpr.run, bench_sgpr.report),
    "sgpr_kin8nm": (bench_sgpr.run_kin8nm, bench_sgpr.report_kin8nm),
    "dvmgp_bound_grad": (bench_dvmgp.run, bench_dvmgp.report),
    "deep_gp_adam_step": (bench_deep_gp.run_adam_step, bench_deep_gp.report_adam_step),
    "deep_gp_layer_backward": (bench_deep_gp.run_layer_backward,
                               bench_deep_gp.report_layer_backward),
    "deep_gp_latent_step": (bench_deep_gp.run_latent_step, bench_deep_gp.report_latent_step),
    "gpcde_iteration": (bench_gpcde.run_iteration, bench_gpcde.report_iteration),
    "ldgd_step": (bench_ldgd.run_step, bench_ldgd.report_step),
    "ldgd_fit": (bench_ldgd.run_fit, bench_ldgd.report_fit),
    "ldgd_iterations": (bench_ldgd.run_iterations, bench_ldgd.report_iterations),
    "likelihood_step_cost": (bench_likelihoods.run_step_cost, bench_likelihoods.report_step_cost),
    "likelihood_classifier_threads": (bench_likelihoods.run_classifier_threads,
                                      bench_likelihoods.report_classifier_threads),
}
#: Long reproductions run only when named with ``--only``.
OPT_IN = {"sgpr_kin8nm"}


def _machine_markdown(info):
    lines = ["### machine", "", "```"]
    lines += info["lscpu"]
    lines += [info["memory"], f"platform: {info['platform']}", f"python {info['python']}; "
              + ", ".join(f"{k} {v}" for k, v in info["versions"].items()),
              f"sklearn_lvgp git {info['git']}",
              f"numba threading layer: {info['numba_threading_layer']} "
              f"(NUMBA_NUM_THREADS={info['numba_num_threads']})"]
    for name, dep in info["numpy_blas"].items():
        lines.append(f"numpy {name}: " + ", ".join(f"{k}={v}" for k, v in dep.items()))
    for pool in info["threadpools"]:
        lines.append("threadpool: " + ", ".join(f"{k}={v}" for k, v in pool.items()
                                                if k != "filepath" and v is not None)
                     + f" ({Path(pool['filepath']).name})")
    if info["env"]:
        lines.append("env: " + " ".join(f"{k}={v}" for k, v in info["env"].items()))
    lines.append("load average (1, 5, 15 min) at start: "
                 + ", ".join(f"{v:.2f}" for v in info["loadavg"]))
    lines.append("```")
    return "\n".join(lines)


def main(argv=None):
    """Command-line entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few repeats: a smoke test, not a measurement")
    parser.add_argument("--only", action="append", choices=sorted(BENCHMARKS), metavar="NAME",
                        help=f"run only this benchmark (repeatable): {', '.join(BENCHMARKS)}")
    parser.add_argument("--repeats", type=int, default=None,
                        help="override every benchmark's number of measured repeats")
    args = parser.parse_args(argv)
    names = args.only or [n for n in BENCHMARKS if n not in OPT_IN]

    info = machine_info()
    write_json("machine", info, quick=args.quick)
    print(_machine_markdown(info))
    t_all = time.perf_counter()
    for name in names:
        run, report = BENCHMARKS[name]
        t0 = time.perf_counter()
        load0 = os.getloadavg()[0]
        res = run(quick=args.quick, repeats=args.repeats)
        res["wall_seconds"] = time.perf_counter() - t0
        res["loadavg_1min"] = {"start": load0, "end": os.getloadavg()[0]}
        res["machine"] = {k: info[k] for k in ("versions", "git", "numba_threading_layer",
                                               "nproc")}
        path = write_json(name, res, quick=args.quick)
        print()
        print(report(res))
        print(f"\n({name}: {res['wall_seconds']:.0f} s, 1-min load average "
              f"{load0:.2f} → {res['loadavg_1min']['end']:.2f}; "
              f"wrote {path.relative_to(REPO)})")
    print(f"\nall done in {time.perf_counter() - t_all:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
