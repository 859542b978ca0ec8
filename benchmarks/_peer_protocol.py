"""The ``@@``-JSON-lines protocol shared by the peer-library step workers.

Imported by ``_gpytorch_dgp_worker.py`` and ``_gpflux_dgp_worker.py``, which run in side
interpreters without sklearn_lvgp (the script's folder is on their ``sys.path``), so this module
uses the standard library only.
"""

import argparse
import json
import math
import sys
import time


def parse_args(argv=None):
    """Command line shared by the workers: data file, depths, repeats, dtype, serve mode."""
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("--depths", default="1,2,3,4,5")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    parser.add_argument("--serve", action="store_true")
    return parser.parse_args(argv)


def send(obj):
    """Write one ``@@``-prefixed JSON line and flush."""
    sys.stdout.write("@@" + json.dumps(obj) + "\n")
    sys.stdout.flush()


def serve(timed, depths, ready, repeats, serve_stdin):
    """Answer timing requests, or time every depth ``repeats`` times and report once.

    Parameters
    ----------
    timed : callable
        ``timed(L) -> (seconds, objective)`` for one step of the depth-``L`` model.
    depths : list of int
        Depths the worker built.
    ready : dict
        The worker's start-up report (versions, sanity checks).
    repeats : int
        Repeats of the one-shot mode (depth order rotated per repeat).
    serve_stdin : bool
        Answer ``time L`` / ``quit`` lines on stdin instead (interleaved with the caller's runs).

    Returns
    -------
    int
        Process exit status.
    """
    if not serve_stdin:
        seconds = {str(L): [] for L in depths}
        for r in range(repeats):
            shift = r % len(depths)
            for L in depths[shift:] + depths[:shift]:
                seconds[str(L)].append(timed(L)[0])
        send(dict(ready, seconds=seconds))
        return 0
    send(ready)
    for line in sys.stdin:
        cmd = line.split()
        if cmd == ["quit"]:
            break
        if len(cmd) != 2 or cmd[0] != "time" or not cmd[1].isdigit() or int(cmd[1]) not in depths:
            send({"error": f"unknown command {line.strip()!r}"})
            continue
        t, f = timed(int(cmd[1]))
        send({"t": t, "f": f, "finite": math.isfinite(f)})
    return 0


def burst(evaluate, points, start, calls, finite):
    """``calls`` evaluations made back to back; the ``burst K`` request of the bound workers.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(x) -> (f, g)``.
    points : sequence of two arrays
        The parameter vector and its perturbed copy; call ``i`` uses ``points[i % 2]``.
    start : int
        Number of calls made before this burst (keeps the alternation going).
    calls : int
        Calls in the burst.
    finite : callable
        ``finite(f, g) -> bool``.

    Returns
    -------
    dict
        ``{"ts": seconds of each call, "finite": all finite}``, the message to send.
    """
    ts, ok = [], True
    for i in range(start, start + calls):
        t0 = time.perf_counter()
        f, g = evaluate(points[i % 2])
        ts.append(time.perf_counter() - t0)
        ok = ok and bool(finite(f, g))
    return {"ts": ts, "finite": ok}
