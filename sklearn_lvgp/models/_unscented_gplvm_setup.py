"""The pieces of an ``UnscentedGPLVM`` fit: the parameter checks, the start, the ELBO
(collapsed bound − KL) with its gradients and the joint objective of all parameters, the bounds
of the packed parameters, and the optimisers (joint L-BFGS-B or Adam, and the alternating one
shared with the Dask fit of :mod:`sklearn_lvgp.models._unscented_gplvm_dask`)."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.init import pairwise_pca_latents, pca_latents, select_inducing
from .._core.linalg import settled_jitter
from .._core.pairwise import PairwiseRows
from .._core.params import ParamPacker
from .._core.scaling import NORMALIZE_OPTIONS
from .._core.validation import (
    check_bool,
    check_early_stopping,
    check_finite_array,
    check_float,
    check_int,
    check_n_inducing,
    check_option,
)
from .._core.warn import warn
from ..bounds._collapsed import CollapsedPsiBound
from ..expectations import EXPECTATIONS, make_rule, monte_carlo_rule
from ..kernels import as_lvgp_kernel
from ..kernels._stationary import default_rbf
from ..optim._alternating import fit_alternating
from ..optim._lbfgsb import minimize_adam, minimize_lbfgsb
from ..variational._kl import standard_normal_kl_and_vjp

__all__ = ["ALTERNATING_MIN_ROWS", "alternates", "check_params", "initial_means",
           "previous_solution", "warm_start_key", "elbo_and_grads", "global_bounds",
           "initial_model", "joint_objective", "joint_packer", "optimise_joint",
           "run_alternating", "warn_if_not_ard"]

#: Rows from which ``optimizer="auto"`` uses the alternating local/global optimiser.
ALTERNATING_MIN_ROWS = 100_000


def check_params(est, X):
    """The hand-written parameter checks of ``est`` on the rows ``X`` (numpy or dask); sets the
    kernel template ``est._kernel``."""
    check_int("n_components", est.n_components, min_value=1)
    check_option("expectation", est.expectation, EXPECTATIONS)
    check_n_inducing(est.n_inducing, X.shape[0], type(est).__name__)
    check_int("gh_order", est.gh_order, min_value=1)
    check_int("n_samples", est.n_samples, min_value=1)
    check_float("latent_variance_init", est.latent_variance_init, 0.0, exclusive_min=True)
    check_float("noise_variance_init", est.noise_variance_init, 0.0, exclusive_min=True,
                allow_none=True)
    check_option("normalize_X", est.normalize_X, NORMALIZE_OPTIONS)
    check_bool("warm_start", est.warm_start)
    check_option("optimizer", est.optimizer, ("auto", "lbfgs", "alternating", "adam"))
    check_int("max_iter", est.max_iter, min_value=1)
    check_float("tol", est.tol, 0.0, allow_none=True)
    check_float("learning_rate", est.learning_rate, 0.0, exclusive_min=True)
    check_int("transform_max_iter", est.transform_max_iter, min_value=1)
    check_float("jitter", est.jitter, 0.0)
    check_early_stopping(est, X.shape[0])
    if est.early_stopping and est.optimizer in ("lbfgs", "alternating"):
        raise ValueError("early_stopping applies to the Adam path (optimizer='adam' or 'auto'); "
                         f"got optimizer={est.optimizer!r}.")
    if est.early_stopping and est.n_inducing > X.shape[0] - max(
            1, int(round(est.validation_fraction * X.shape[0]))):
        raise ValueError(f"n_inducing={est.n_inducing} is larger than the rows left for "
                         "training after holding out validation_fraction for early stopping; "
                         "lower n_inducing or validation_fraction.")
    est._kernel = as_lvgp_kernel(est.kernel, input_dim=est.n_components)
    if isinstance(est.init, str):
        check_option("init", est.init, ("pca", "pca_unscaled", "random"))
    if est.expectation == "monte_carlo" and est.optimizer in ("lbfgs", "alternating"):
        raise ValueError("expectation='monte_carlo' gives a stochastic objective; use "
                         f"optimizer='adam' (or 'auto'), not {est.optimizer!r}.")
    if X.shape[0] < 2:
        raise ValueError(f"UnscentedGPLVM needs at least 2 samples, got n_samples = "
                         f"{X.shape[0]}.")


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
        optimizer = ("adam" if name == "monte_carlo" or est.early_stopping else
                     "alternating" if N >= ALTERNATING_MIN_ROWS else "lbfgs")
    Z0 = select_inducing(mu0, est.n_inducing, random_state)
    noise0 = (float(est.noise_variance_init) if est.noise_variance_init is not None
              else 0.01 * var_y)
    jitter = settled_jitter(kernel.K(Z0), est.jitter)
    return kernel, name, rule, optimizer, Z0, noise0, jitter, var_y


def global_bounds(packer, kernel, var_y):
    """Box bounds of a packed vector: the kernel's θ bounds and log σ² within
    ``[1e-10, 1e3] · var_y``; the other blocks are free."""
    bounds = np.full((packer.size, 2), [-np.inf, np.inf])
    bounds[packer.slice("theta")] = kernel.bounds
    bounds[packer.slice("noise")] = [np.log(1e-10 * var_y), np.log(1e3 * var_y)]
    return bounds


def elbo_and_grads(kernel, Y, p, rule, jitter, max_tries=0, bound=None):
    """ELBO (collapsed bound − KL), its gradient wrt each constrained block, the posterior.

    ``bound``: the fit's :class:`~sklearn_lvgp.engine.CollapsedPsiBound` of ``Y`` (chunks,
    threads and buffers reused from one evaluation to the next); ``None`` makes one.
    """
    mu, S, Z, s2 = p["mu"], p["S"], p["Z"], float(p["noise"])
    bound = CollapsedPsiBound(Y) if bound is None else bound
    F, grads, post = bound.evaluate(kernel, Z, mu, S, s2, rule, jitter=jitter,
                                    max_tries=max_tries)
    kl, dkl_mu, dkl_S = standard_normal_kl_and_vjp(mu, S)
    grads["mu"] -= dkl_mu
    grads["S"] -= dkl_S
    return F - kl, grads, post


def joint_packer(N, Q, Z0, kernel):
    """The packer of all parameters: the means and log variances of ``q(x)``, Z, θ, log σ²."""
    return ParamPacker([("mu", (N, Q)), ("S", (N, Q), "log"), ("Z", Z0.shape),
                        ("theta", (kernel.n_theta,)), ("noise", (), "log")])


def joint_objective(est, packer, work, Y, rule, jitter, bound, mc_state, stochastic):
    """``objective(flat) -> (−ELBO, −gradient)`` of all packed parameters (``work`` holds θ;
    a fresh Monte Carlo rule from ``mc_state`` at every call when ``stochastic``)."""
    N, Q = Y.shape[0], est.n_components

    def objective(flat):
        p = packer.unpack(flat)
        work.theta = p["theta"]
        r = (monte_carlo_rule(est.n_samples, Q, mc_state, n_points=N) if stochastic
             else rule)
        value, grads, _ = est._elbo_and_grads(work, Y, p, r, jitter, bound=bound)
        return -value, -packer.pack_grad(grads, p)

    return objective


def optimise_joint(est, optimizer, objective, x0, packer, work, var_y, validation=None):
    """Joint optimisation of all parameters: L-BFGS-B within :func:`global_bounds` or Adam
    (with early stopping on ``validation(flat) -> score`` when given)."""
    if optimizer == "lbfgs":
        bounds = global_bounds(packer, work, var_y)
        return minimize_lbfgsb(objective, x0, bounds=bounds, max_iter=est.max_iter,
                               tol=est.tol, verbose=est.verbose, name=type(est).__name__)
    return minimize_adam(objective, x0, learning_rate=est.learning_rate,
                         max_iter=est.max_iter, tol=None if validation else est.tol,
                         verbose=est.verbose, name=type(est).__name__, validation=validation,
                         n_iter_no_change=est.n_iter_no_change,
                         validation_tol=1e-4 if est.tol is None else est.tol)


def run_alternating(est, state, work, Z0, noise0, rule, jitter, var_y):
    """Alternating local/global optimisation of ``state`` (in memory or on Dask).

    Returns the :class:`~sklearn_lvgp.optim._alternating.AlternatingResult` and the
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
                          set_globals, global_bounds(gpacker, work, var_y), jitter=jitter,
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


def alternates(est, n_rows):
    """Whether a fit of ``n_rows`` rows alternates local and global steps, as every Dask fit
    does. Its data-derived defaults (centring, PCA start, scales) are then sums on the pairwise
    tree of the row index (:mod:`sklearn_lvgp._core.pairwise`), which a Dask fit forms to the
    same bits; the other fits keep numpy's sums and the SVD."""
    if est.optimizer == "auto":
        return (n_rows >= ALTERNATING_MIN_ROWS and est.expectation != "monte_carlo"
                and not est.early_stopping)
    return est.optimizer == "alternating"


def initial_means(est, Y, Q, random_state):
    """Initial latent means ``(N, Q)`` of ``est.init`` on the normalised data ``Y``."""
    if isinstance(est.init, str):
        if est.init == "random":
            return 0.1 * random_state.standard_normal((Y.shape[0], Q))
        if alternates(est, Y.shape[0]):  # the sums a Dask fit forms too
            return pairwise_pca_latents(PairwiseRows(Y), Q, scaled=est.init == "pca")
        X = pca_latents(Y, Q)
        if est.init == "pca":
            top = float(np.std(X[:, 0]))
            X = X / top if top > 0 else X
        return X
    return check_finite_array("init", est.init, shape=(Y.shape[0], Q))


def warm_start_key(est, X):
    """What a ``warm_start`` fit must share with the previous fit to continue from it."""
    return (X.shape, int(est.n_components), repr(est.kernel), est.n_inducing, est.expectation,
            est.optimizer, est.normalize_X, bool(est.early_stopping),
            float(est.validation_fraction))


def previous_solution(est, rows=None):
    """``(mu, S, Z, kernel, noise, jitter)`` of the previous fit, the start of a warm start
    (the latents of ``rows`` only, when given: the training rows of early stopping)."""
    mu, S = est.latent_mean_, est.latent_variance_
    if rows is not None:
        mu, S = mu[rows], S[rows]
    return mu, S, est.inducing_inputs_, est.kernel_.clone(), est.noise_variance_, est._jitter
