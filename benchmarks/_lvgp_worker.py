"""Worker: times one sklearn_lvgp bound + gradient configuration in a process of its own.

Run as ``python benchmarks/_lvgp_worker.py PROBLEM.npz KERNEL EXPECTATION N_THREADS``.
``bench_fit`` starts one such process per configuration and thread count, so every
configuration runs in a process that does nothing else: the same memory-allocator state as a
real ``fit``. Interleaving all configurations in one process would let the large temporaries of
one configuration leave heap space behind that makes another configuration look faster.

The protocol is the one of ``_gpy_worker.py``. Each line this worker writes is one JSON object
prefixed with ``@@``. At start it writes ``{"ready": true, ...}`` after three warm-up calls. For
each ``time`` it reads on stdin, it makes one call of the objective and answers
``{"t": seconds, "faults": minor page faults, "f": objective, "finite": bool}``. For each
``burst K`` it makes K calls back to back and answers ``{"ts": [seconds, ...], "finite": bool}``
(``_peer_protocol.burst``). ``quit`` ends the worker.
"""

import json
import resource
import sys
import time

from _peer_protocol import burst


def _send(obj):
    sys.stdout.write("@@" + json.dumps(obj) + "\n")
    sys.stdout.flush()


def main(path, kernel_name, expectation, n_threads):
    """Build the objective and answer timing requests on stdin."""
    import numpy as np
    from _common import ensure_repo_on_path

    ensure_repo_on_path()
    from bench_fit import make_objective

    from sklearn_lvgp._core.parallel import threads

    data = np.load(path)
    prob = {k: data[k] for k in data.files}
    prob["variance"] = float(prob["variance"])
    prob["noise"] = float(prob["noise"])
    objective, x0 = make_objective(kernel_name, expectation, prob)
    x1 = x0 + 1e-9 * np.random.RandomState(1).standard_normal(x0.shape)
    with threads(int(n_threads)) as n:
        f0, g0 = objective(x0)
        for _ in range(2):
            objective(x1)
        _send({"ready": True, "elbo": float(-f0), "n_params": int(g0.size), "threads": n})
        calls = 0
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "quit":
                break
            if cmd.startswith("burst "):  # K calls back to back, as an optimiser makes them
                k = int(cmd.split()[1])
                _send(burst(objective, (x0, x1), calls, k,
                            lambda f, g: np.isfinite(f) and np.all(np.isfinite(g))))
                calls += k
                continue
            if cmd != "time":
                _send({"error": f"unknown command {cmd!r}"})
                continue
            x = x1 if calls % 2 else x0
            calls += 1
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter()
            f, g = objective(x)
            dt = time.perf_counter() - t0
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
            _send({"t": dt, "faults": int(faults), "f": float(f),
                   "finite": bool(np.isfinite(f) and np.all(np.isfinite(g)))})
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
