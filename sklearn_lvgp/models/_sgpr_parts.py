"""Model internals of :class:`~sklearn_lvgp.SparseGPRegressor` (Titsias 2009).

The fit from the data's summary statistics (its start and warm start; the L-BFGS-B fit of the
collapsed bound itself is :func:`sklearn_lvgp.optim._collapsed_fit.fit_collapsed`), and the
test-time predictive moments (exact for deterministic inputs, moment-matched for uncertain
ones; Girard et al. 2003).
"""

import numpy as np
from sklearn.utils import check_random_state

from .._core.init import select_inducing
from .._core.linalg import settled_jitter, symmetrise
from .._core.validation import check_finite_array, check_option
from ..bounds._collapsed_global import (
    _weight_matrices,
    chunked_predictive_moments,
    predictive_moments,
)
from ..expectations import EXPECTATIONS, make_rule, psi_statistics
from ..kernels._stationary import default_rbf
from ..optim._collapsed_fit import fit_collapsed

__all__ = ["check_X_var", "fit_from_moments", "rule_for", "moments"]


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

    fit = fit_collapsed(
        kernel, X, Yn, Z0, noise0, bound=bound, var_y=var_y, z_scale=scales, jitter=jitter,
        X_var=X_var, rule=rule, optimize_Z=optimize_Z,
        positive_transform=est.positive_transform,
        max_iter=est.max_iter if est.optimizer is not None else 0, tol=est.tol,
        verbose=est.verbose, name=type(est).__name__)
    est.n_iter_ = n_before + fit.n_iter
    est.kernel_ = fit.kernel
    est.noise_variance_ = fit.noise_variance
    est.inducing_inputs_ = np.array(fit.Z, copy=True)
    est.expectation_ = name
    est.elbo_ = fit.bound
    est._post = fit.posterior
    est._jitter = jitter
    est._rules = {}
