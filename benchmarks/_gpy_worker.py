"""Peer worker: times GPy's BayesianGPLVM bound + gradient for ``bench_fit`` (run in GPy's venv).

Run as ``PEER_PYTHON benchmarks/_gpy_worker.py PROBLEM.npz``. It needs only numpy and GPy (not
``sklearn_lvgp``), so it can run in a side virtualenv whose numpy suits GPy. BLAS threads are set
by the parent through ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS``/``MKL_NUM_THREADS``.

The problem file holds ``Y``, ``mu``, ``S``, ``Z``, ``lengthscale``, ``variance`` and ``noise``;
the model is set to exactly these values, so its bound can be compared with ours.

Protocol (one JSON object per line, prefixed with ``@@`` so that stray library output on stdout
is ignored): on start, ``{"ready": true, ...}`` or ``{"error": "..."}``; then for each input line
``time`` one call of ``m._objective_grads(x)`` (what GPy's optimisers call), answered with
``{"t": seconds, "faults": minor page faults, "f": objective, "finite": bool}``; for
``burst K``, K calls back to back answered with ``{"ts": [seconds, ...], "finite": bool}``;
``quit`` ends the worker. Successive calls alternate between the parameter vector and a copy
perturbed by 1e-9 so that no cache can serve a repeated point.
"""

import json
import resource
import sys
import time

from _peer_protocol import burst


def _send(obj):
    sys.stdout.write("@@" + json.dumps(obj) + "\n")
    sys.stdout.flush()


def main(path):
    """Build the model from ``path`` and answer timing requests on stdin."""
    try:
        import GPy
        import numpy as np
    except Exception as exc:  # any import failure means "no usable GPy here"
        _send({"error": f"{type(exc).__name__}: {exc}"})
        return 0
    data = np.load(path)
    Y, mu, S, Z = data["Y"], data["mu"], data["S"], data["Z"]
    Q = mu.shape[1]
    kern = GPy.kern.RBF(Q, variance=float(data["variance"]),
                        lengthscale=np.asarray(data["lengthscale"], dtype=float), ARD=True)
    m = GPy.models.BayesianGPLVM(Y, Q, X=mu.copy(), X_variance=S.copy(), kernel=kern,
                                 Z=Z.copy(), num_inducing=Z.shape[0])
    m.likelihood.variance = float(data["noise"])
    x0 = m.optimizer_array.copy()
    x1 = x0 + 1e-9 * np.random.RandomState(0).standard_normal(x0.shape)
    f0, g0 = m._objective_grads(x0)
    for _ in range(2):  # warm-up, as for our side
        m._objective_grads(x1)
    try:
        from threadpoolctl import threadpool_info

        pools = [{k: i.get(k) for k in ("internal_api", "version", "num_threads")}
                 for i in threadpool_info()]
    except ImportError:
        pools = None
    _send({"ready": True, "gpy": GPy.__version__, "numpy": np.__version__,
           "python_version": sys.version.split()[0], "elbo": float(-f0), "n_params": int(g0.size),
           "psicomp": type(m.kern.psicomp).__name__, "threadpools": pools})
    calls = 0
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "quit":
            break
        if cmd.startswith("burst "):  # K calls back to back, as an optimiser makes them
            k = int(cmd.split()[1])
            _send(burst(m._objective_grads, (x0, x1), calls, k,
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
        f, g = m._objective_grads(x)
        dt = time.perf_counter() - t0
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        _send({"t": dt, "faults": int(faults), "f": float(f),
               "finite": bool(np.isfinite(f) and np.all(np.isfinite(g)))})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
