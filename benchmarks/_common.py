"""Shared helpers of the benchmarks: interleaved timing, summaries, tables and machine facts.

Every benchmark times its configurations *interleaved*: each repeat runs every configuration once
(in a rotated order), so a burst of load from other processes on the machine hits all of them
alike. Ratios are formed per repeat against a baseline timed in the same repeat and then
summarised by their median (with min and max), never as a ratio of two separately taken medians.
"""

import contextlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

__all__ = [
    "REPO", "RESULTS_DIR", "ensure_repo_on_path", "timed", "interleaved", "interleaved_groups",
    "summary",
    "ratio_summary", "markdown_table", "fmt_ms", "fmt_ratio", "machine_info", "write_json",
]

#: Repository root (the parent of ``benchmarks/``).
REPO = Path(__file__).resolve().parent.parent
#: Where ``run.py`` writes ``<name>.json``.
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def ensure_repo_on_path():
    """Import ``sklearn_lvgp`` from this checkout, even when another copy is installed.

    Benchmarks measure the code they sit next to: an older ``pip install`` in site-packages
    would otherwise be timed instead (this happened once and hid a 2.7x speed-up).
    """
    # first on the path, not just on it: an editable install's ``.pth`` puts this checkout
    # after site-packages, where a copy from a later ``pip install .`` sits
    while str(REPO) in sys.path:
        sys.path.remove(str(REPO))
    sys.path.insert(0, str(REPO))


def timed(fn):
    """Wrap ``fn()`` into a callable that returns its wall time in seconds."""

    def run():
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    return run


def interleaved(runners, repeats, warmup=2, min_repeats=None, budget_s=None, pause_s=0.0):
    """Time several configurations in interleaved repeats.

    Parameters
    ----------
    runners : dict of str to callable
        Each callable performs one measured run and returns its duration in seconds (wrap plain
        functions with :func:`timed`; a peer process can report its own timing).
    repeats : int
        Measured repeats; every repeat runs every configuration once.
    warmup : int, default=2
        Unmeasured runs of each configuration first (JIT compilation, caches, thread pools).
    min_repeats, budget_s : int and float, default=None
        Optional time budget; see :func:`interleaved_groups`.
    pause_s : float, default=0.0
        Idle time before each measured run (outside the measurement), so that the spinning
        worker threads of the previous run (OpenBLAS, OpenMP) have gone to sleep.

    Returns
    -------
    dict of str to ndarray of shape (n,)
        Seconds per run, index ``r`` being repeat ``r`` for every configuration; ``n <= repeats``.
    """
    return interleaved_groups([(contextlib.nullcontext, runners)], repeats, warmup,
                              min_repeats=min_repeats, budget_s=budget_s, pause_s=pause_s)


def interleaved_groups(groups, repeats, warmup=2, min_repeats=None, budget_s=None,
                       pause_s=0.0):
    """Like :func:`interleaved` for groups of runners that each need a context (e.g. threads).

    Parameters
    ----------
    groups : list of (callable, dict of str to callable)
        ``(context_factory, runners)``; every repeat enters ``context_factory()`` once per group
        (outside the timed region) and runs that group's runners inside it. Runner names must be
        unique across groups.
    repeats : int
        Measured repeats.
    warmup : int, default=2
        Unmeasured runs of each runner first, inside its group's context.
    min_repeats : int, default=None
        With ``budget_s``: never stop before this many repeats.
    budget_s : float, default=None
        Stop after the first repeat that ends more than ``budget_s`` seconds after the measured
        repeats began (and at least ``min_repeats`` are done). A loaded machine can make some
        configurations (several threads fighting other processes for 2 cores) 10-100× slower;
        this keeps the whole run within its time budget.
    pause_s : float, default=0.0
        Idle time before each measured run, outside the measurement.

    Returns
    -------
    dict of str to ndarray of shape (n,)
        Seconds per run, index ``r`` being repeat ``r`` for every runner; ``n <= repeats``.
    """
    out = {}
    for context, runners in groups:
        for name in runners:
            if name in out:
                raise ValueError(f"duplicate runner name {name!r}")
            out[name] = np.empty(repeats)
        with context():
            for run in runners.values():
                for _ in range(warmup):
                    run()
    start = time.perf_counter()
    done = 0
    for r in range(repeats):
        if (budget_s is not None and done >= (min_repeats or 1)
                and time.perf_counter() - start > budget_s):
            break
        done += 1
        gshift = r % len(groups)
        for context, runners in groups[gshift:] + groups[:gshift]:
            names = list(runners)
            shift = r % len(names)
            with context():
                for name in names[shift:] + names[:shift]:
                    if pause_s:
                        time.sleep(pause_s)
                    out[name][r] = runners[name]()
    return {name: t[:done] for name, t in out.items()}


def summary(seconds):
    """Median, min and max (in seconds) and the number of runs."""
    s = np.asarray(seconds, dtype=float)
    return {"median": float(np.median(s)), "min": float(np.min(s)), "max": float(np.max(s)),
            "n": int(s.size)}


def ratio_summary(num, den):
    """Median, min and max of the per-repeat ratios ``num[r] / den[r]``."""
    r = np.asarray(num, dtype=float) / np.asarray(den, dtype=float)
    return {"median": float(np.median(r)), "min": float(np.min(r)), "max": float(np.max(r)),
            "n": int(r.size)}


def fmt_ms(s):
    """``median [min–max]`` in milliseconds from a :func:`summary` dict."""
    return f"{1e3 * s['median']:.3g} [{1e3 * s['min']:.3g}–{1e3 * s['max']:.3g}]"


def fmt_ratio(s):
    """``median× [min–max]`` from a :func:`ratio_summary` dict."""
    return f"{s['median']:.3g}× [{s['min']:.3g}–{s['max']:.3g}]"


def markdown_table(header, rows):
    """A GitHub-flavoured markdown table as a string."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _command(args):
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=30,
                              check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_info():
    """Facts about the machine and software a result depends on (JSON-serialisable)."""
    import numba
    import scipy
    import sklearn
    from threadpoolctl import threadpool_info

    import sklearn_lvgp
    from sklearn_lvgp._core.parallel import threads

    # a tiny parallel call so that numba has chosen its threading layer
    @numba.njit(parallel=True)
    def _touch(n):
        s = 0.0
        for i in numba.prange(n):
            s += i
        return s

    with threads(-1):
        _touch(1000)
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = "unknown"
    lscpu = _command(["lscpu"])
    keep = ("Architecture", "Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket",
            "Socket(s)", "CPU max MHz", "L1d cache", "L2 cache", "L3 cache", "Flags")
    lscpu_lines = [ln for ln in lscpu.splitlines() if ln.split(":")[0].strip() in keep]
    lscpu_lines = [ln if not ln.startswith("Flags") else
                   "Flags (SIMD): " + " ".join(f for f in ln.split()[1:]
                                               if f.startswith(("avx", "fma", "sse4")))
                   for ln in lscpu_lines]
    try:
        blas = np.show_config(mode="dicts").get("Build Dependencies", {})
    except TypeError:  # numpy < 1.26
        blas = {}
    git = _command(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"])
    # uncommitted changes to the library itself (benchmarks/ and examples do not count)
    dirty = bool(_command(["git", "-C", str(REPO), "status", "--porcelain", "--",
                           "sklearn_lvgp"]))
    try:
        meminfo = Path("/proc/meminfo").read_text().splitlines()[0]
    except OSError:
        meminfo = ""
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "lscpu": lscpu_lines,
        "memory": meminfo,
        "nproc": os.cpu_count(),
        "loadavg": list(os.getloadavg()),
        "versions": {"numpy": np.__version__, "scipy": scipy.__version__,
                     "numba": numba.__version__, "scikit-learn": sklearn.__version__,
                     "sklearn_lvgp": sklearn_lvgp.__version__},
        "git": f"{git}{' (uncommitted library changes)' if dirty else ''}",
        "numpy_blas": {k: {kk: v.get(kk) for kk in ("name", "version", "openblas configuration")
                           if kk in v} for k, v in blas.items()},
        "threadpools": [{k: i.get(k) for k in ("internal_api", "version", "num_threads",
                                                "threading_layer", "architecture", "filepath")}
                        for i in threadpool_info()],
        "numba_threading_layer": layer,
        "numba_num_threads": int(numba.config.NUMBA_NUM_THREADS),
        "env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                           "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
                                           "NUMBA_THREADING_LAYER", "OMP_WAIT_POLICY")
                if k in os.environ},
    }


def write_json(name, payload, quick=False):
    """Write ``payload`` to ``benchmarks/results/<name>.json`` (``results/quick/`` for smoke
    runs, so that they never overwrite a measurement); returns the path."""
    folder = RESULTS_DIR / "quick" if quick else RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n")
    return path
