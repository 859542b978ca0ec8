"""Compile a fit's numba kernels in a helper process while the fit compiles them too.

numba compiles a jitted function at its first call and caches the machine code on disk
(``cache=True``), one function after another on the calling thread: the first fit of an
estimator in a new environment spends most of its time compiling on one core, and numba's
compiler lock keeps a second thread of the same process from helping. When the on-disk cache
lacks a fit's kernels, :func:`compile_ahead` starts a second Python process that compiles the
fit's *plan* — the jitted functions and signatures a fit uses, in the order it first uses
them, recorded beforehand (``_compile/plans.py``) — from the last entry to the first, into the
same cache. The fit compiles from the first onwards and loads from the cache
every kernel the helper has finished (numba looks in the cache before compiling a new
signature), so the two meet in the middle. When the fit ends the helper stops after its
current compilation; what it finished stays cached.

Results do not change: a kernel loaded from the cache is the code the fit would have compiled.
Nothing starts for a plan of less than ``MIN_PLAN_SECONDS`` of compilation, when the cache
already holds the plan's first and last kernels, when fewer than two CPUs are available, when
numba's cache is unavailable, or when the environment variable ``SKLEARN_LVGP_PRECOMPILE`` is
``0``; a helper that fails to start is ignored.
"""

import importlib
import json
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from numba import types
from numba.core.registry import CPUDispatcher

from .._core.progress import progress

__all__ = ["compile_ahead", "plan_key", "encode_type", "decode_type", "resolve", "locators",
           "plan_status", "compile_plan"]

#: Environment variable that turns the helper off with the value ``0``.
ENV_SWITCH = "SKLEARN_LVGP_PRECOMPILE"

_SCALARS = {str(t): t for t in (types.float64, types.float32, types.int64, types.int32,
                                types.uint8, types.boolean, types.complex128)}

#: Seconds of compilation (as recorded in the plan) below which no helper starts: the helper's
#: own start and numba's internal implementations, which both processes compile, cost more
#: than it saves on a shorter plan (``doc/developers.rst``, "Compile cost").
MIN_PLAN_SECONDS = 5.0

#: Plans whose helper is running, so concurrent fits in threads start one helper per plan.
_RUNNING = set()
_RUNNING_LOCK = threading.Lock()


def encode_type(t):
    """A JSON value for a numba argument type, or None when the plan format has no code for it.

    Scalars are their names; arrays ``["array", dtype, ndim, layout, readonly]``; homogeneous
    tuples ``["unituple", type, count]``; other tuples ``["tuple", [types...]]``.
    """
    if str(t) in _SCALARS and _SCALARS[str(t)] == t:
        return str(t)
    if isinstance(t, types.Array) and str(t.dtype) in _SCALARS and t.aligned:
        return ["array", str(t.dtype), t.ndim, t.layout, not t.mutable]
    if isinstance(t, types.UniTuple):
        inner = encode_type(t.dtype)
        return None if inner is None else ["unituple", inner, t.count]
    if isinstance(t, types.Tuple):
        inner = [encode_type(x) for x in t.types]
        return None if any(x is None for x in inner) else ["tuple", inner]
    return None


def decode_type(code):
    """The numba type of :func:`encode_type`'s ``code``."""
    if isinstance(code, str):
        return _SCALARS[code]
    kind = code[0]
    if kind == "array":
        _, dtype, ndim, layout, readonly = code
        return types.Array(_SCALARS[dtype], ndim, layout, readonly=readonly)
    if kind == "unituple":
        return types.UniTuple(decode_type(code[1]), code[2])
    if kind == "tuple":
        return types.Tuple([decode_type(x) for x in code[1]])
    raise ValueError(f"unknown type code {code!r}")


def plan_key(name, kernel=None, expectation=None):
    """The plan name of a fit: the estimator's class name, its kernel's class (``"default"``
    for ``None``) and its expectation rule (when it has one, a string)."""
    parts = [name, "default" if kernel is None else type(kernel).__name__]
    if isinstance(expectation, str):
        parts.append(expectation)
    return "/".join(parts)


def _find_plan(key):
    """The recorded plan (``compile_s`` and ``entries``) for ``key``, or None.

    An unrecorded configuration gets no helper: another configuration's plan would have the
    helper compile kernels this fit does not use, beside it, which slows the fit down.
    """
    from .plans import PLANS

    return PLANS.get(key)


def locators():
    """Every jitted function of the loaded ``sklearn_lvgp`` modules, by dispatcher object.

    Returns a dict ``{dispatcher: (module, attribute, value, twin)}``: ``twin`` is None for a
    plain ``njit`` function, ``"serial"`` or ``"parallel"`` for a :mod:`sklearn_lvgp._compile.jit`
    twin, and ``value`` the selecting value of a per-value twin (else None). Per-value twins
    appear for the values created so far.
    """
    from .jit import _Twins, _TwinsPerValue

    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("sklearn_lvgp") or module is None:
            continue
        for attr, obj in list(vars(module).items()):
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == name:
                found[obj] = (name, attr, None, None)
            elif isinstance(obj, _Twins) and obj.serial.py_func.__module__ == name:
                found[obj.serial] = (name, attr, None, "serial")
                found[obj.parallel] = (name, attr, None, "parallel")
            elif isinstance(obj, _TwinsPerValue):
                for value, twins in list(obj._twins.items()):
                    if twins.serial.py_func.__module__ == name:
                        found[twins.serial] = (name, attr, value, "serial")
                        found[twins.parallel] = (name, attr, value, "parallel")
    return found


def resolve(entry):
    """The dispatcher and signature of a plan entry ``[module, attribute, value, twin, args]``."""
    module, attr, value, twin, args = entry
    obj = getattr(importlib.import_module(module), attr)
    if value is not None:
        obj = obj.for_value(value)
    if twin is not None:
        obj = getattr(obj, twin)
    if not isinstance(obj, CPUDispatcher):
        raise TypeError(f"{module}.{attr} is not a jitted function")
    return obj, tuple(decode_type(a) for a in args)


def _is_cached(dispatcher, sig):
    """Whether ``sig`` is compiled in this process or in the on-disk cache (None: unknown)."""
    if sig in dispatcher.overloads:
        return True
    try:
        cache = dispatcher._cache
        key = cache._index_key(sig, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:  # a numba without these internals, or no usable cache
        return None


def plan_status(entries):
    """``(cached, missing, unknown)``: how many of a plan's entries the cache holds, lacks, or
    cannot tell about (an entry the code no longer has counts as unknown)."""
    counts = [0, 0, 0]
    for entry in entries:
        try:
            state = _is_cached(*resolve(entry))
        except Exception:  # noqa: BLE001 - an entry the code no longer has
            state = None
        counts[0 if state else 1 if state is False else 2] += 1
    return tuple(counts)


def compile_plan(entries):
    """Compile a plan's entries in this process, first to last (into numba's cache).

    Returns
    -------
    compiled, cached, skipped : int
        Entries compiled now, found compiled or in the cache, and whose function the code no
        longer has (or failed to compile: a fit compiles those itself).
    seconds : float
        Wall time.
    """
    t0 = time.perf_counter()
    compiled = cached = skipped = 0
    for entry in entries:
        try:
            dispatcher, sig = resolve(entry)
            if _is_cached(dispatcher, sig):
                cached += 1
                continue
            dispatcher.compile(sig)
        except Exception:  # noqa: BLE001 - an entry the code no longer has
            skipped += 1
            continue
        compiled += 1
    return compiled, cached, skipped, time.perf_counter() - t0


def _available_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: The folder that holds the ``sklearn_lvgp`` package the fit runs.
_ROOT = Path(__file__).resolve().parents[2]

#: The helper's program: ``sklearn_lvgp`` as a bare namespace (its ``__init__``, which imports
#: the estimators and scikit-learn, is not run), then :func:`helper_main`.
_HELPER_CODE = ("import sys, types; package = types.ModuleType('sklearn_lvgp'); "
                "package.__path__ = [{path!r}]; sys.modules['sklearn_lvgp'] = package; "
                "from sklearn_lvgp._compile.precompile import helper_main; helper_main()")


def _bare_packages(modules):
    """Put empty stand-ins for the parent packages of ``modules`` that are not imported yet.

    The helper imports only the modules that define jitted functions; they import numba, numpy
    and one another, not the estimators, so their packages' ``__init__`` (and scikit-learn,
    a second of the helper's start) need not run. Their qualified names, and so numba's cache
    entries, are the ones a fit uses.
    """
    for module in modules:
        parts = module.split(".")
        for i in range(1, len(parts)):
            name = ".".join(parts[:i])
            if name not in sys.modules:
                package = ModuleType(name)
                package.__path__ = [str(_ROOT.joinpath(*parts[:i]))]
                sys.modules[name] = package


def _helper_command():
    env = dict(os.environ)
    from numba.core import config

    if config.CACHE_DIR:
        env["NUMBA_CACHE_DIR"] = config.CACHE_DIR
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    code = _HELPER_CODE.format(path=str(_ROOT / "sklearn_lvgp"))
    return [sys.executable, "-c", code], env


def start_helper(entries):
    """Start a helper process compiling ``entries`` last to first; None if it cannot start.

    The helper stops after its current compilation once its standard input closes, which
    :func:`stop_helper` does (and the end of this process).
    """
    if not sys.executable or getattr(sys, "frozen", False):
        return None
    command, env = _helper_command()
    try:
        proc = subprocess.Popen(command, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proc.stdin.write((json.dumps(entries) + "\n").encode())
        proc.stdin.flush()
    except (OSError, ValueError):
        return None
    return proc


def stop_helper(proc):
    """Ask the helper to stop (it finishes the kernel it is compiling); does not wait.

    A daemon thread collects the helper's exit status when it comes.
    """
    try:
        proc.stdin.close()
    except OSError:
        pass
    threading.Thread(target=proc.wait, daemon=True).start()


def _should_start(entries):
    if os.environ.get(ENV_SWITCH, "1").strip() == "0" or _available_cpus() < 2:
        return False
    try:
        cached = [_is_cached(*resolve(entries[i])) for i in (0, -1)]
    except Exception:  # a plan older than the code: nothing to gain
        return False
    # the fit's first kernel and the helper's first: both cached after any finished fit
    return None not in cached and False in cached


@contextmanager
def compile_ahead(key, name, verbose=0):
    """Around a fit of the plan ``key`` (by the estimator ``name``): with a cold numba cache,
    compile the plan in a helper process."""
    plan = _find_plan(key)
    entries = plan["entries"] if plan and plan["compile_s"] >= MIN_PLAN_SECONDS else None
    with _RUNNING_LOCK:
        start = bool(entries) and key not in _RUNNING and _should_start(entries)
        if start:
            _RUNNING.add(key)
    proc = start_helper(entries) if start else None
    if proc is not None and verbose > 0:
        progress(f"{name}: a helper process compiles part of the numba "
                 "kernels alongside this fit")
    try:
        yield
    finally:
        if proc is not None:
            stop_helper(proc)
        if start:
            with _RUNNING_LOCK:
                _RUNNING.discard(key)


def helper_main():
    """The helper process: read a plan from standard input, compile it last entry first."""
    entries = json.loads(sys.stdin.readline())
    _bare_packages(entry[0] for entry in entries)
    stop = threading.Event()

    def watch_stdin():
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    for entry in reversed(entries):
        if stop.is_set():
            break
        try:
            dispatcher, sig = resolve(entry)
            dispatcher.compile(sig)
        except Exception:  # noqa: S112 - an entry the code no longer has; the fit compiles it
            continue
