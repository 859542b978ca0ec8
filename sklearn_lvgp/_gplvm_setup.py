"""The start of an ``UnscentedGPLVM`` fit and its alternating optimisation, shared by the
in-memory and the Dask fits (:mod:`sklearn_lvgp._gplvm_dask`)."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._engine._alternating import fit_alternating
from ._init import select_inducing
from ._linalg import settled_jitter
from ._params import ParamPacker
from ._psi import make_rule
from ._warn import warn
from .kernels._stationary import default_rbf

__all__ = ["ALTERNATING_MIN_ROWS", "initial_model", "run_alternating"]

#: Rows from which ``optimizer="auto"`` uses the alternating local/global optimiser.
ALTERNATING_MIN_ROWS = 100_000


def initial_model(est, mu0, latent_scales, var_y, random_state):
    """Kernel, expectation rule, optimiser, Z, noise and settled jitter at the start.

    ``mu0`` may be a dask array (only ``n_inducing`` of its rows are read);
    ``latent_scales`` are the column scales of ``mu0`` (for the default kernel).
    """
    N, Q = mu0.shape
    var_y = var_y if var_y > 0 else 1.0
    if est._kernel is None:
        # default: ARD RBF matched to the data scale and the spread of the initial latents
        kernel = default_rbf(latent_scales, var_y)
    else:
        kernel = est._kernel
    kernel = kernel.initialize(Q, random_state)
    name, rule = make_rule(est.expectation, kernel, Q, gh_order=est.gh_order,
                           n_samples=est.n_samples, random_state=random_state, n_points=N)
    optimizer = est.optimizer
    if optimizer == "auto":
        optimizer = ("adam" if name == "monte_carlo" else
                     "alternating" if N >= ALTERNATING_MIN_ROWS else "lbfgs")
    Z0 = select_inducing(mu0, est.n_inducing, random_state)
    noise0 = (float(est.noise_variance_init) if est.noise_variance_init is not None
              else 0.01 * var_y)
    jitter = settled_jitter(kernel.K(Z0), est.jitter)
    return kernel, name, rule, optimizer, Z0, noise0, jitter, var_y

def run_alternating(est, state, work, Z0, noise0, rule, jitter, var_y):
    """Alternating local/global optimisation of ``state`` (in memory or on Dask).

    Returns the :class:`~sklearn_lvgp._engine._alternating.AlternatingResult` and the
    final globals ``{"Z", "theta", "noise"}`` (``work`` holds θ).
    """
    gpacker = ParamPacker([("Z", Z0.shape), ("theta", (work.n_theta,)),
                           ("noise", (), "log")])

    def set_globals(p):
        work.theta = p["theta"]
        return p["Z"], float(p["noise"])

    tol = 1e-7 if est.tol is None else float(est.tol)
    res = fit_alternating(state, work, rule, gpacker,
                          gpacker.pack({"Z": Z0, "theta": work.theta, "noise": noise0}),
                          set_globals, est._bounds(gpacker, work, var_y), jitter=jitter,
                          max_rounds=est.max_iter, tol=tol, verbose=est.verbose,
                          name=type(est).__name__)
    if not res.converged:
        warnings.warn(f"{type(est).__name__}: the alternating optimiser did not converge "
                      f"in {res.n_rounds} rounds. Increase max_iter or loosen tol.",
                      ConvergenceWarning, stacklevel=3)
    g = gpacker.unpack(res.globals_x)
    set_globals(g)
    return res, g


def warn_if_not_ard(est):
    """Warn when ``relevance_`` cannot rank the latent dimensions (one length scale for all).

    The papers read the latent dimensionality off the ARD relevances; a kernel with a single
    length scale gives every dimension the same relevance, whatever the data.
    """
    r = est.relevance_
    if r.size > 1 and np.all(r == r[0]):
        warn(f"{type(est).__name__}: the kernel {est.kernel_!r} has one length scale for all "
             f"{r.size} latent dimensions, so relevance_ is the same for each and says nothing "
             "about them. Pass an ARD kernel (e.g. length_scale=np.ones(n_components)) to rank "
             "the dimensions.", UserWarning)

