"""Model internals of :class:`~sklearn_lvgp.SparseGPRegressor` (Titsias 2009).

The collapsed bound with its gradient wrt Z, θ and σ² for deterministic or Gaussian inputs
(:func:`sgpr_bound_and_grads`, on the chunked bounds of :mod:`sklearn_lvgp.engine`), the
packing and L-BFGS-B optimisation of those parameters, and the test-time predictive moments
(exact for deterministic inputs, moment-matched for uncertain ones; Girard et al. 2003).
"""

import numpy as np
from sklearn.utils import check_random_state

from .._core.init import select_inducing
from .._core.linalg import settled_jitter, symmetrise
from .._core.params import ParamPacker, softplus_inverse
from .._core.validation import check_finite_array, check_option
from ..bounds._collapsed import CollapsedKernelBound, CollapsedPsiBound
from ..bounds._collapsed_global import (
    _weight_matrices,
    chunked_predictive_moments,
    predictive_moments,
)
from ..expectations import EXPECTATIONS, make_rule, psi_statistics
from ..kernels._stationary import default_rbf
from ..optim._lbfgsb import minimize_lbfgsb

__all__ = ["sgpr_bound_and_grads", "check_X_var", "fit_from_moments",
           "optimise_hyperparameters", "rule_for", "moments"]



def sgpr_bound_and_grads(kernel, X, Y, Z, noise_variance, *, X_var=None, rule="analytic",
                         jitter=1e-6, max_tries=0, need_Z=True, bound=None):
    """Collapsed SGPR bound and its gradient wrt Z, the kernel's θ and the noise variance.

    Parameters
    ----------
    kernel : Kernel
        Initialised kernel (its current ``theta`` is used).
    X : ndarray of shape (N, Q)
        Inputs (means of the inputs when ``X_var`` is given).
    Y : ndarray of shape (N, D)
        Targets.
    Z : ndarray of shape (M, Q)
        Inducing inputs.
    noise_variance : float
        Gaussian noise variance σ².
    X_var : ndarray of shape (N, Q) or None
        Input variances; ``None`` is the deterministic (S = 0) bound of Titsias (2009).
    rule : "analytic" or PointRule
        Expectation rule for uncertain inputs (ignored when ``X_var`` is ``None``).
    jitter : float
        Relative jitter on ``Kuu``.
    max_tries : int
        Jitter escalations allowed (0 inside an optimiser).
    need_Z : bool
        Whether the Z adjoint is wanted.
    bound : CollapsedKernelBound or CollapsedPsiBound, default=None
        The fit's chunked bound of ``(X, Y)`` (reused across evaluations); ``None`` makes one.

    Returns
    -------
    F : float
        The bound (the exact log marginal likelihood when Z = X and ``X_var`` is ``None``, up to
        the jitter).
    grads : dict
        ``"Z"`` (M, Q) or ``None``, ``"theta"`` (n_theta,), ``"noise"`` (float).
    post : CollapsedPosterior
        The optimal q(u) (Titsias 2009).
    """
    if bound is None:
        bound = _make_bound(X, Y, X_var)
    if X_var is None:
        return bound.evaluate(kernel, Z, noise_variance, jitter=jitter, max_tries=max_tries,
                              need_Z=need_Z)
    F, grads, post = bound.evaluate(kernel, Z, X, X_var, noise_variance, rule, jitter=jitter,
                                    max_tries=max_tries, need_S=False)
    return (float(F), {"Z": grads["Z"] if need_Z else None, "theta": grads["theta"],
                       "noise": grads["noise"]}, post)


def _make_bound(X, Y, X_var):
    """The chunked collapsed bound of ``(X, Y)``: deterministic inputs or N(X_n, X_var_n)."""
    return CollapsedKernelBound(X, Y) if X_var is None else CollapsedPsiBound(Y)


def check_X_var(X_var, shape):
    """Validated input variances: a non-negative scalar or an array of ``shape``."""
    V = check_finite_array("X_var", X_var)
    if V.ndim == 0:
        V = np.full(shape, float(V))
    if V.shape != tuple(shape):
        raise ValueError(f"X_var must be a scalar or have the shape of X {tuple(shape)}, "
                         f"got {V.shape}.")
    if np.any(V < 0):
        raise ValueError("X_var must be non-negative (it holds input variances).")
    return V


def optimise_hyperparameters(est, kernel, X, Yn, X_var, Z0, optimize_Z, rule, jitter, noise0,
                             var_y, bound, z_scale):
    """Pack θ, σ² (and Z when ``optimize_Z``) under ``est.positive_transform`` and maximise the
    bound with L-BFGS-B; returns the fitted kernel, Z, σ² and the iterations run.

    Z is optimised in units of the power of two nearest each column scale of X
    (``z_scale``): with log hyperparameters the optimisation problem is then the same, to
    within a factor of two, for data in any units (X in units of 1e-6 or 1e6), where the raw
    Z, whose gradient grows as 1 / scale, would dominate L-BFGS-B's steps. Powers of two make
    the change of units exact in floating point, and the same for scales computed by numpy and
    by Dask's reductions (which differ in their last bits).
    """
    z_scale = np.exp2(np.round(np.log2(z_scale)))
    softplus = est.positive_transform == "softplus"
    blocks = [("theta", (kernel.n_theta,), "softplus" if softplus else "identity"),
              ("noise", (), "softplus" if softplus else "log")]
    if optimize_Z:
        blocks.insert(0, ("Z", Z0.shape))
    packer = ParamPacker(blocks)
    # with "softplus" the theta block holds exp(theta), the natural hyperparameter values
    init = {"Z": Z0 / z_scale, "theta": np.exp(kernel.theta) if softplus else kernel.theta,
            "noise": noise0}
    x0 = packer.pack({k: init[k] for k, *_ in blocks})
    work = kernel.clone()

    def unpack(flat):
        p = packer.unpack(flat)
        work.theta = np.log(p["theta"]) if softplus else p["theta"]
        return p, (p["Z"] * z_scale if optimize_Z else Z0), float(p["noise"])

    def objective(flat):
        p, Z, s2 = unpack(flat)
        F, grads, _ = sgpr_bound_and_grads(work, X, Yn, Z, s2, X_var=X_var, rule=rule,
                                           jitter=jitter, need_Z=optimize_Z, bound=bound)
        if softplus:
            grads["theta"] = grads["theta"] / p["theta"]
        if optimize_Z:
            grads["Z"] = grads["Z"] * z_scale
        return -F, -packer.pack_grad({k: grads[k] for k in p}, p)

    if est.optimizer is not None and est.max_iter > 0:
        bounds = np.full((packer.size, 2), [-np.inf, np.inf])
        theta_bounds, noise_bounds = work.bounds, np.log([1e-10 * var_y, 1e4 * var_y])
        if softplus:
            theta_bounds = softplus_inverse(np.exp(theta_bounds))
            noise_bounds = softplus_inverse(np.exp(noise_bounds))
        bounds[packer.slice("theta")] = theta_bounds
        bounds[packer.slice("noise")] = noise_bounds
        res = minimize_lbfgsb(objective, x0, bounds=bounds, max_iter=est.max_iter,
                              tol=est.tol, verbose=est.verbose, name=type(est).__name__)
        x_final, n_iter = res.x, res.n_iter
    else:
        x_final, n_iter = x0, 0
    _, Z, s2 = unpack(x_final)
    return work, Z, s2, n_iter


def rule_for(est, expectation, random_state=None):
    """Rule for test-time expectations; Monte Carlo nodes are frozen per fitted model unless
    ``random_state`` asks for fresh ones."""
    if expectation is None:
        expectation = est.expectation_ or est.expectation
    check_option("expectation", expectation, EXPECTATIONS)
    if random_state is not None:
        return make_rule(expectation, est.kernel_, est.n_features_in_,
                         gh_order=est.gh_order, n_samples=est.n_samples,
                         random_state=check_random_state(random_state))[1]
    if expectation not in est._rules:
        rng = check_random_state(est._predict_seed)
        est._rules[expectation] = make_rule(
            expectation, est.kernel_, est.n_features_in_, gh_order=est.gh_order,
            n_samples=est.n_samples, random_state=rng)[1]
    return est._rules[expectation]


def moments(est, X, X_var, expectation, full_cov, random_state=None):
    """Normalised-space moments of f at ``X`` (per point) — deterministic or uncertain."""
    kernel, Z, post = est.kernel_, est.inducing_inputs_, est._post
    if X_var is None:
        Ksu = kernel.K(X, Z)
        if full_cov:
            Kinv, Cs = _weight_matrices(post)
            mean = Ksu @ post.G
            cov = kernel.K(X) - Ksu @ (Kinv - Cs) @ Ksu.T
            return mean, symmetrise(cov)
        return predictive_moments(post, kernel.Kdiag(X), Ksu, None)
    rule = rule_for(est, expectation, random_state)
    return chunked_predictive_moments(
        post, lambda a, b: psi_statistics(kernel, Z, X[a:b], X_var[a:b], rule,
                                          per_point=True)[0], X.shape[0])


def fit_from_moments(est, X, Yn, X_var, random_state, y_mean, y_std, var_y, scales, bound):
    """The fit of :class:`~sklearn_lvgp.SparseGPRegressor` from the data's summary statistics
    and a chunked bound (in memory or Dask); ``X`` is only read to pick the inducing inputs
    (``Yn`` may be ``None`` then). ``scales`` are the column scales of ``X``: the default
    kernel's length scales and the units in which the inducing inputs are optimised. A
    ``warm_start`` fit of the same structure starts from the previous kernel, inducing inputs,
    noise variance and jitter; ``n_iter_`` accumulates."""
    N, Qx = X.shape
    est.y_mean_, est.y_scale_ = y_mean, y_std
    var_y = var_y if var_y > 0 else 1.0
    fixed_Z = est.inducing_inputs is None and isinstance(est.n_inducing, str)
    arch = (Qx, len(y_mean), repr(est.kernel), est.n_inducing, est.inducing_inputs is None,
            X_var is None, est.expectation, bool(est.optimize_inducing),
            N if fixed_Z else None)
    continuing = est._continues_fit(arch)
    if continuing:
        kernel = est.kernel_.clone()
        Z0 = X.copy() if fixed_Z else est.inducing_inputs_
    else:
        kernel = (default_rbf(scales, var_y) if est._kernel is None
                  else est._kernel).initialize(Qx, random_state)
        if est.inducing_inputs is not None:
            Z0 = check_finite_array("inducing_inputs", est.inducing_inputs)
        elif fixed_Z:  # "all": the exact GP
            Z0 = X.copy()
        else:
            Z0 = select_inducing(X, est.n_inducing, random_state)
    optimize_Z = est.optimize_inducing and not fixed_Z

    if X_var is not None:
        name, rule = make_rule(est.expectation, kernel, Qx, gh_order=est.gh_order,
                               n_samples=est.n_samples, random_state=random_state,
                               n_points=N)
    else:
        name, rule = None, "analytic"
    est._predict_seed = int(random_state.randint(np.iinfo(np.int32).max))
    if continuing:
        noise0, jitter, n_before = est.noise_variance_, est._jitter, est.n_iter_
    else:
        noise0 = (float(est.noise_variance_init) if est.noise_variance_init is not None
                  else 0.1 * var_y)
        jitter, n_before = settled_jitter(kernel.K(Z0), est.jitter), 0

    work, Z, s2, n_iter = optimise_hyperparameters(
        est, kernel, X, Yn, X_var, Z0, optimize_Z, rule, jitter, noise0, var_y, bound, scales)
    F, _, post = sgpr_bound_and_grads(work, X, Yn, Z, s2, X_var=X_var, rule=rule,
                                      jitter=jitter, max_tries=6, need_Z=False, bound=bound)
    est.n_iter_ = n_before + n_iter
    est.kernel_ = work
    est.noise_variance_ = s2
    est.inducing_inputs_ = np.array(Z, copy=True)
    est.expectation_ = name
    est.elbo_ = F
    est._post = post
    est._jitter = jitter
    est._rules = {}
