"""The pieces of :class:`~sklearn_lvgp.LDGD`'s fit around the optimiser (Ziaei et al. 2024).

The two paths' inducing-point counts and kernels from the parameters, the training problem at
its starting point, the objectives handed to L-BFGS-B and Adam (sigma points or reparameterised
samples of ``q(x)``, §2.3.8) and the choice between the two, the fitted attributes read off the
final parameters, the warning when the classification path has collapsed to a flat function,
and the class-conditional latent draws of :meth:`~sklearn_lvgp.LDGD.sample`.
"""

import copy
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._core.progress import fit_progress
from .._core.scaling import normalization
from .._core.validation import check_int, check_n_inducing
from .._core.warn import warn
from ..bounds._ldgd_objective import PRESETS
from ..bounds._ldgd_problem import TrainingProblem
from ..expectations._rules import unscented_rule
from ..kernels import RBF, as_lvgp_kernel
from ..nn._ldgd_encoder import encoder_shapes
from ._ldgd_inference import infer_latents, initial_values, path_marginals

__all__ = ["class_latent_draws", "fill_held_out_rows", "finish_fit", "fit", "held_out_score",
           "objectives", "optimise", "path_settings", "record_fit", "store_fit",
           "training_problem", "warm_start_key", "warn_if_collapsed"]


def path_settings(est, n_samples):
    """``(M_r, M_c)`` and the two unfitted kernels."""
    M = est.n_inducing
    if isinstance(M, (tuple, list)):
        if len(M) != 2:
            raise ValueError(f"n_inducing must be an int or a pair, got {M!r}.")
        M_r = check_int("n_inducing[0]", M[0], min_value=1)
        M_c = check_int("n_inducing[1]", M[1], min_value=1)
        check_n_inducing(max(M_r, M_c), n_samples, "LDGD")
    else:
        M_r = M_c = check_n_inducing(M, n_samples, "LDGD")
    k, Q = est.kernel, est.n_components
    if k is None:
        k_r = k_c = RBF(length_scale=np.ones(Q), variance=1.0)
    elif isinstance(k, (tuple, list)):
        if len(k) != 2 or any(v is None for v in k):
            raise TypeError(f"kernel must be a kernel, a pair of kernels or None, got {k!r}.")
        k_r, k_c = (as_lvgp_kernel(v, "kernel", Q) for v in k)
    else:
        k_r = k_c = as_lvgp_kernel(k, "kernel", Q)
    return M_r, M_c, k_r.clone(), k_c.clone()


def training_problem(est, Yr, Yc, random_state, rows=None, moments=None):
    """The :class:`~._problem.TrainingProblem` of scaled rows ``Yr`` and one-hot labels ``Yc``
    and its flat starting point (kernels initialised, weighting preset applied).

    A fit on Dask passes ``rows`` (a row source of ``"Yr"`` and ``"Yc"``; ``Yr`` and ``Yc`` are
    then ``None``) and ``moments`` (see :func:`~._ldgd_inference.initial_values`).
    """
    Q = est.n_components
    N, D = Yr.shape if rows is None else rows.shapes["Yr"]
    K = Yc.shape[1] if rows is None else rows.shapes["Yc"][1]
    M_r, M_c, k_r, k_c = path_settings(est, N)
    k_r = k_r.initialize(Q, random_state)
    k_c = k_c.initialize(Q, random_state)
    gamma, beta_r, beta_c, beta_x = PRESETS[est.elbo_weighting](D, K)
    factors = (float(est.reg_weight), float(est.cls_weight), gamma, beta_r, beta_c, beta_x)
    shapes = (encoder_shapes(D, tuple(est.encoder_hidden), Q) if est.amortized else None)
    prob = TrainingProblem(Yr, Yc, k_r, k_c, M_r, M_c, Q, factors, shapes, est.jitter,
                           est.gh_order, rows=rows)

    x0 = prob.pack(initial_values(Yr, K, k_r, k_c, M_r, M_c, Q, est.x_init, shapes,
                                  random_state, moments))
    return prob, x0


def objectives(prob, N, Q, stochastic, noise_rs):
    """``full(flat)`` on all rows (sigma points) and ``minibatch(flat, idx)`` (one
    reparameterised sample per row from ``noise_rs`` when ``stochastic``, else sigma points)."""
    ut = unscented_rule(Q)
    idx_all = np.arange(N)

    def full(flat):
        return prob.value_and_grad(flat, idx_all, ut.nodes, ut.weights)

    def minibatch(flat, idx):
        if stochastic:
            nodes = noise_rs.standard_normal((idx.shape[0], 1, Q))
            return prob.value_and_grad(flat, idx, nodes, np.ones(1))
        return prob.value_and_grad(flat, idx, ut.nodes, ut.weights)

    return full, minibatch


def optimise(est, prob, x0, N, random_state, validation=None):
    """Run the optimiser from ``x0`` (``optimizer="auto"``: Adam for a sampled objective, an
    amortised ``q(x)`` or early stopping, else L-BFGS-B); returns ``x``, the bound's history,
    the iterations and the held-out scores of ``validation(x)`` (``None`` without)."""
    Q = est.n_components
    stochastic = est.expectation == "monte_carlo"
    # amortised + L-BFGS tends to posterior collapse (q(x) = p(x)) in its first steps
    optimizer = est.optimizer if est.optimizer != "auto" else (
        "adam" if stochastic or est.amortized or est.early_stopping else "lbfgs")
    adam = {} if validation is None else {
        "validation": validation, "n_iter_no_change": est.n_iter_no_change,
        "tol": 1e-4 if est.tol is None else est.tol}
    noise_rs = check_random_state(random_state.randint(np.iinfo(np.int32).max))
    bounds = prob.bounds()
    name = type(est).__name__
    full, minibatch = objectives(prob, N, Q, stochastic, noise_rs)
    return est._optimise(optimizer, x0, bounds, full=full, minibatch=minibatch, n_data=N,
                         batch_size=min(est.batch_size, N), random_state=random_state,
                         name=name, **adam)


def held_out_score(est, prob, y_train, X_val, y_val):
    """``score(flat)``: mean log probability of the held-out labels ``y_val`` (indices) at the
    raw rows ``X_val`` under the model of ``flat`` fitted on labels ``y_train``: ``q(x*)``
    inferred as ``transform`` does, then ``predict_proba``."""
    def score(flat):
        tmp = copy.copy(est)
        store_fit(tmp, prob, flat, y_train)
        tmp._transform_seed = 0
        with fit_progress(est, None), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the inference's budget
            proba = tmp.predict_proba(X_val)
        return float(np.mean(np.log(np.maximum(proba[np.arange(y_val.size), y_val], 1e-300))))

    return score


def fill_held_out_rows(est, Yr, y, train, held_out):
    """After a fit on rows ``train``: ``q(x*)`` of the ``held_out`` rows inferred with the final
    model, so ``latent_mean_``, ``latent_variance_`` and the labels cover every row."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mu_v, sigma_v = infer_latents(est, Yr[held_out])
    mu = np.empty((y.size, est.n_components))
    var = np.empty_like(mu)
    mu[train], var[train] = est.latent_mean_, est.latent_variance_
    mu[held_out], var[held_out] = mu_v, sigma_v ** 2
    est.latent_mean_, est.latent_variance_, est._y_train = mu, var, y
    m, v = path_marginals(est, mu, "reg")
    est._rec_mean, est._rec_var = m, v + est.noise_variance_


def store_fit(est, prob, x, y, decode=True):
    """Set the fitted attributes of ``est`` from the final flat parameters ``x``.

    ``decode=False`` (a fit on Dask) keeps no decoded training rows (``N × D``): the start of
    ``transform`` then decodes the training latents block by block.
    """
    p = prob.unpack(x)
    glob = prob.globals_(p)
    est.kernel_reg_ = glob.kernel_r.clone()
    est.kernel_cls_ = glob.kernel_c.clone()
    est.inducing_inputs_reg_, est.inducing_inputs_cls_ = glob.Z_r, glob.Z_c
    est.q_u_reg_ = (glob.qmu_r, glob.qsqrt_r)
    est.q_u_cls_ = (glob.qmu_c, glob.qsqrt_c)
    est.noise_variance_ = glob.noise
    mu, sigma = prob.latents(p)
    est.latent_mean_, est.latent_variance_ = mu, sigma ** 2
    est._encoder = prob.encoder_weights(p) if est.amortized else None
    Q = est.n_components
    est.relevance_ = np.vstack([est.kernel_reg_.relevance(Q),
                                est.kernel_cls_.relevance(Q)])
    est.ard_weights_reg_ = est.relevance_[0] ** 2
    est.ard_weights_cls_ = est.relevance_[1] ** 2
    est._factors = prob.factors
    if decode:
        m, v = path_marginals(est, mu, "reg")
        est._rec_mean, est._rec_var = m, v + est.noise_variance_
    else:
        est._rec_mean = est._rec_var = None
    est._y_train = y


def warn_if_collapsed(est, name):
    """Warn when every classification length scale is over 1000x the latent means' spread."""
    spread = float(np.mean(np.std(est.latent_mean_, axis=0)))
    if np.all(est.relevance_[1] * max(spread, 1e-12) < 1e-3):
        warn(f"{name}: the classification path collapsed to a flat function (every length "
             "scale is over 1000x the spread of the latent means); the classifier predicts "
             "the same probabilities everywhere. Seen with optimizer='lbfgs' from "
             "x_init='random': use x_init='pca', optimizer='adam' or more iterations.",
             ConvergenceWarning)


def class_latent_draws(est, label_index, n_samples, rs):
    """Latent points drawn from the Gaussian fitted to the training ``μ_i`` of one class."""
    mu = est.latent_mean_[est._y_train == label_index]
    cov = np.atleast_2d(np.cov(mu, rowvar=False)) + 1e-6 * np.eye(est.n_components)
    return rs.multivariate_normal(mu.mean(axis=0), cov, size=n_samples)


def warm_start_key(est, X):
    """What a ``warm_start`` fit must share with the previous fit to continue from it."""
    return (X.shape, tuple(est.classes_), int(est.n_components), repr(est.n_inducing),
            repr(est.kernel), est.elbo_weighting, bool(est.amortized),
            tuple(est.encoder_hidden), est.normalize_X, float(est.jitter), int(est.gh_order),
            bool(est.early_stopping), float(est.validation_fraction))


def fit(est, X, y, random_state):
    """The whole fit of ``est`` on ``X`` and integer labels ``y``: normalisation, the training
    problem, its start (fresh, or the previous parameters for a ``warm_start`` fit of the same
    shape), the optimisation and the fitted attributes."""
    N = X.shape[0]
    K = est.classes_.size
    continuing = est._continues_fit(warm_start_key(est, X))
    if not continuing:
        est.X_mean_, est.X_scale_ = normalization(X, est.normalize_X)
    Yr = (X - est.X_mean_) / est.X_scale_
    Yc = np.zeros((N, K))
    Yc[np.arange(N), y] = 1.0
    train, held_out = est._held_out_rows(N, random_state)
    rows = slice(None) if train is None else train
    prob, x0 = training_problem(est, Yr[rows], Yc[rows], random_state)
    if continuing:
        x0 = est._x_flat
    score = None if train is None else held_out_score(est, prob, y[train], X[held_out],
                                                      y[held_out])
    x, history, n_iter, est.validation_scores_ = optimise(est, prob, x0, Yr[rows].shape[0],
                                                          random_state, score)
    record_fit(est, prob, x, history, n_iter, continuing, random_state)
    store_fit(est, prob, x, y[rows])
    if train is not None:
        fill_held_out_rows(est, Yr, y, train, held_out)
    finish_fit(est)


def record_fit(est, prob, x, history, n_iter, continuing, random_state):
    """The optimiser's history, iterations and final vector, and the test-time seed."""
    est.elbo_history_ = np.concatenate([est.elbo_history_, history]) if continuing else history
    est.n_iter_ = n_iter + (est.n_iter_ if continuing else 0)
    est._x_flat = x
    est._transform_seed = int(random_state.randint(np.iinfo(np.int32).max))


def finish_fit(est):
    """The last fitted attributes (``elbo_``, ``expectation_``) and the collapse check."""
    est.elbo_ = float(est.elbo_history_[-1]) if est.elbo_history_.size else np.nan
    est.expectation_ = est.expectation
    warn_if_collapsed(est, type(est).__name__)
