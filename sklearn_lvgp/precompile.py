"""Compile the numba kernels of sklearn_lvgp's fits ahead of use.

``python -m sklearn_lvgp.precompile`` compiles the jitted functions that the recorded fit
configurations use (their *plans*, ``sklearn_lvgp/_compile/plans.py``) into numba's on-disk
cache, so the first fit in a new environment (a fresh virtual environment, a container image,
a CI job) loads them instead of compiling them: run it once after installing, or in the image's
build. ``--estimator NAME`` restricts it to one estimator's plans (repeatable), ``--list``
shows the plans and how many of their kernels the cache holds. The cache is numba's: beside
the package's modules, or under ``NUMBA_CACHE_DIR`` when that is set (then set it for the fits
too).

Configurations that have no plan (another kernel, for instance) compile at their first fit.
"""

import argparse
import sys

from ._compile.plans import PLANS
from ._compile.precompile import compile_plan, plan_status

__all__ = ["main"]


def _selected(parser, names):
    """The plan keys of the estimators ``names`` (all plans for None), or a usage error."""
    if not names:
        return list(PLANS)
    known = sorted({key.split("/")[0] for key in PLANS})
    unknown = [name for name in names if name not in known]
    if unknown:
        parser.error(f"no compile plan for estimator {unknown[0]!r}; estimators with plans: "
                     f"{', '.join(known)}")
    return [key for key in PLANS if key.split("/")[0] in names]


def main(argv=None):
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_lvgp.precompile",
        description=__doc__.split("\n\n")[1].replace("``", ""))
    parser.add_argument("--estimator", action="append", metavar="NAME",
                        help="compile only this estimator's plans (e.g. SparseGPRegressor); "
                             "repeat for several")
    parser.add_argument("--list", action="store_true",
                        help="list the plans and how many of their kernels are cached; "
                             "compile nothing")
    args = parser.parse_args(argv)
    keys = _selected(parser, args.estimator)
    width = max(len(key) for key in keys)
    if args.list:
        for key in keys:
            cached, missing, unknown = plan_status(PLANS[key]["entries"])
            total = cached + missing + unknown
            print(f"{key:{width}}  {cached:3d}/{total} kernels cached  "
                  f"(about {PLANS[key]['compile_s']:.0f} s to compile when recorded)")
        return 0
    total_compiled, total_seconds = 0, 0.0
    for key in keys:
        compiled, cached, skipped, seconds = compile_plan(PLANS[key]["entries"])
        total_compiled += compiled
        total_seconds += seconds
        print(f"{key:{width}}  compiled {compiled:3d} kernels in {seconds:5.1f} s, "
              f"{cached} cached" + (f", {skipped} skipped" if skipped else ""), flush=True)
    print(f"compiled {total_compiled} kernels of {len(keys)} plans in {total_seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
