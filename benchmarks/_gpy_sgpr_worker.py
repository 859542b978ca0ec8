"""Peer worker: fits GPy's SparseGPRegression for ``bench_sgpr`` (run in GPy's venv).

Run as ``PEER_PYTHON benchmarks/_gpy_sgpr_worker.py PROBLEM.npz``. Needs only numpy and GPy. The
problem file holds ``X``, ``y``, ``X_test``, ``y_test``, ``Z`` (initial inducing inputs),
``lengthscale``, ``variance``, ``noise`` and ``max_iter``; the model starts from exactly these
values (the same start as ours). One line is printed, prefixed with ``@@``: a JSON object with
``fit_s``, ``predict_s``, ``nlpd`` (mean negative log predictive density of y, noise included),
``rmse``, ``bound`` and ``n_iter``, or ``{"error": ...}``.
"""

import json
import sys
import time


def main(path):
    """Fit, predict and report."""
    try:
        import GPy
        import numpy as np
    except Exception as exc:  # any import failure means "no usable GPy here"
        sys.stdout.write("@@" + json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 0
    d = np.load(path)
    X, y, Xt, yt = d["X"], d["y"][:, None], d["X_test"], d["y_test"]
    kern = GPy.kern.RBF(X.shape[1], variance=float(d["variance"]),
                        lengthscale=np.asarray(d["lengthscale"], dtype=float), ARD=True)
    t0 = time.perf_counter()
    m = GPy.models.SparseGPRegression(X, y, kernel=kern, Z=d["Z"].copy())
    m.likelihood.variance = float(d["noise"])
    opt = m.optimize("lbfgsb", max_iters=int(d["max_iter"]))
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    mean, var = m.predict(Xt)  # include_likelihood=True: the predictive of y
    predict_s = time.perf_counter() - t0
    mean, var = mean[:, 0], var[:, 0]
    nlpd = float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * (yt - mean) ** 2 / var))
    n_iter = getattr(opt, "funct_eval", None) if opt is not None else None
    sys.stdout.write("@@" + json.dumps({
        "fit_s": fit_s, "predict_s": predict_s, "nlpd": nlpd,
        "rmse": float(np.sqrt(np.mean((yt - mean) ** 2))), "bound": float(-m.objective_function()),
        "n_iter": n_iter, "gpy": GPy.__version__}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
