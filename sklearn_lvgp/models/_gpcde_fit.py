"""The pieces of :class:`~sklearn_lvgp.GPCDE`'s fit around the optimiser (Salimbeni 2020, ch. 4).

The parameter checks, the model's structure and initial parameters built from the parameters
(§4.2.3 and §4.4), the objectives handed to L-BFGS-B and Adam with the natural-gradient step
of ``q(u)`` on a minibatch (§4.2), and the optimisation run from the initial or the
switched-off start (``init="gp"``, :mod:`._warm_start`). The run sees the rows through
:mod:`._gpcde_data` (in memory, or partitioned on Dask: :mod:`._gpcde_dask`).
"""

from functools import partial

import numpy as np

from .._core.scaling import column_moments
from .._core.validation import (
    check_bool,
    check_early_stopping,
    check_float,
    check_int,
    check_layer_widths,
    check_n_inducing,
    check_natgrad_gamma,
    check_option,
)
from ..bounds._gpcde import CDEModel
from ..kernels import RBF, as_lvgp_kernel
from ..kernels._stationary import _Stationary
from ..optim._adam import AdamState
from ._gpcde_data import MemoryRows
from ._gpcde_init import initial_values
from ._gpcde_predict import component_chunks, mixture_log_density, prediction_nodes
from ._gpcde_warm_start import full_bound, gp_init_possible, gp_warm_start

WARM_UP_STEPS = 200

__all__ = ["architecture", "build", "check_params", "deterministic_bound", "fit",
           "heldout_log_density", "objectives", "resolve_optimizer",
           "run"]


def check_params(est, X):
    """The hand-written parameter checks of ``est`` on training inputs ``X``; sets the kernel
    template ``est._kernel``."""
    Dw = check_int("latent_dim", est.latent_dim, min_value=0)
    check_option("q_w", est.q_w, ("quadrature", "gaussian", "amortized"))
    H = check_int("gh_order", est.gh_order, min_value=1)
    if est.q_w == "quadrature" and Dw > 2:
        raise ValueError(
            f"q_w='quadrature' evaluates gh_order**latent_dim = {H}**{Dw} = {H ** Dw} "
            f"GP marginals per data point per step; it is limited to latent_dim <= 2. Use "
            f"q_w='amortized' or q_w='gaussian' for latent_dim={Dw}.")
    check_option("expectation", est.expectation, ("monte_carlo", "unscented"))
    check_int("n_samples", est.n_samples, min_value=1)
    check_int("input_projection_dim", est.input_projection_dim, min_value=1,
              allow_none=True)
    check_int("output_mixing_dim", est.output_mixing_dim, min_value=1, allow_none=True)
    est._kernel = as_lvgp_kernel(est.kernel)
    check_int("n_inducing", est.n_inducing, min_value=1)
    check_bool("whiten", est.whiten)
    check_float("noise_variance_init", est.noise_variance_init, 0.0, exclusive_min=True)
    check_option("optimizer", est.optimizer, ("auto", "adam", "lbfgs"))
    check_natgrad_gamma(est.natgrad_gamma)
    check_float("learning_rate", est.learning_rate, 0.0, exclusive_min=True)
    check_option("learning_rate_schedule", est.learning_rate_schedule,
                 ("constant", "staircase", "cosine"))
    check_int("batch_size", est.batch_size, min_value=1, allow_none=True)
    check_int("max_iter", est.max_iter, min_value=1)
    check_float("tol", est.tol, 0.0, allow_none=True)
    check_bool("warm_start", est.warm_start)
    check_early_stopping(est, X.shape[0])
    if est.early_stopping and est.optimizer == "lbfgs":
        raise ValueError("early_stopping applies to optimizer='adam' (L-BFGS-B stops on its "
                         "own tests); got optimizer='lbfgs'.")
    check_layer_widths("encoder_hidden", est.encoder_hidden)
    check_int("n_predict_samples", est.n_predict_samples, min_value=1)
    check_bool("normalize_y", est.normalize_y)
    check_option("init", est.init, ("auto", "gp", "prior"))
    if est.init == "gp" and not gp_init_possible(est, Dw):
        raise ValueError(
            "init='gp' switches the latent dimensions off through their length scales: it "
            "needs latent_dim >= 1, a stationary kernel with one length scale per input "
            "dimension (ARD) and non-fixed length-scale bounds, and no input_projection_dim "
            "or output_mixing_dim; use init='prior'.")
    check_float("jitter", est.jitter, 0.0)
    if est.optimizer == "lbfgs":
        if not deterministic_bound(est):
            raise ValueError(
                "optimizer='lbfgs' needs a deterministic objective: q_w='quadrature', or "
                "q_w='gaussian'/'amortized' with expectation='unscented', and no "
                "input_projection_dim; use optimizer='adam' for sampled objectives.")
    check_n_inducing(est.n_inducing, X.shape[0], "GPCDE")  # after the data-free checks
    if est.early_stopping:
        n_train = X.shape[0] - max(1, int(round(est.validation_fraction * X.shape[0])))
        if est.n_inducing > n_train:
            raise ValueError(
                f"n_inducing={est.n_inducing} is larger than the {n_train} rows left for "
                f"training after holding out validation_fraction={est.validation_fraction} "
                "for early stopping; lower n_inducing or validation_fraction.")


def deterministic_bound(est):
    """Whether the bound of ``est`` is deterministic (no sampling: L-BFGS-B can optimise it)."""
    return est.input_projection_dim is None and (
        est.q_w == "quadrature" or int(est.latent_dim) == 0 or est.expectation == "unscented")


def resolve_optimizer(est, n_rows):
    """``optimizer="auto"``: L-BFGS-B for a deterministic bound on one full batch without early
    stopping, Adam with natural gradients otherwise."""
    if est.optimizer != "auto":
        return est.optimizer
    full_batch = est.batch_size is None or int(est.batch_size) >= n_rows
    return ("lbfgs" if deterministic_bound(est) and full_batch and not est.early_stopping
            else "adam")


def build(est, Xs, Ys, random_state, n_rows=None):
    """Structure and initial parameters (Salimbeni 2020, §4.2.3 and §4.4).

    ``Xs``, ``Ys``: the standardised rows the initialisation reads (k-means, principal
    directions); ``n_rows``: the number of training rows when they are only some of them
    (a Dask fit; ``None``: all).
    """
    N = Xs.shape[0] if n_rows is None else int(n_rows)
    Dx = Xs.shape[1]
    Dy = Ys.shape[1]
    Dw = int(est.latent_dim)
    Dh = Dx if est.input_projection_dim is None else int(est.input_projection_dim)
    L = Dy if est.output_mixing_dim is None else int(est.output_mixing_dim)
    M = int(est.n_inducing)
    D = Dh + Dw
    kernel = (RBF(length_scale=np.full(D, np.sqrt(D)), variance=1.0) if est._kernel is None
              else est._kernel.initialize(D, random_state))
    model = CDEModel(kernel, Dx, est.input_projection_dim, Dw, L, Dy, M,
                     est.output_mixing_dim is not None, est.q_w, est.expectation,
                     int(est.n_samples), int(est.gh_order), N,
                     tuple(est.encoder_hidden), bool(est.whiten), float(est.jitter))
    values = initial_values(model, kernel, Xs, Ys, float(est.noise_variance_init),
                            est.q_w, random_state, n_rows=N)
    return model, model.pack(values)


def objectives(model, data, rs):
    """``full(x)`` and ``minibatch(x, idx)`` (negated bound and gradient, the minibatch scaled
    to all rows) and ``natgrad(x, idx, gamma)`` (a natural-gradient step of ``q(u)``) on the
    rows ``data`` (:mod:`._gpcde_data`)."""
    N = data.n_rows

    def full(x):
        f, g = data.elbo(model, x, None, 1.0, rs)
        return -f, -g

    def minibatch(x, idx):
        f, g = data.elbo(model, x, idx, N / idx.size, rs)
        return -f, -g

    def natgrad(x, idx, gamma):
        return data.natgrad(model, x, idx, N / idx.size, gamma, rs)

    return full, minibatch, natgrad


def heldout_log_density(est, model, x, Xv, Yv):
    """Mean log predictive density of held-out standardised rows at parameters ``x`` (the
    early-stopping score; the predictive integration of :meth:`GPCDE.predict_log_density`,
    with a fixed seed for its prior draws)."""
    p = model.unpack(x)
    A_mean = p["A_mu"] if model.projection else None
    A_std = p["A_s"] if model.projection else None
    nodes, logw, A_draws = prediction_nodes(model, est.gh_order, est.n_predict_samples,
                                            A_mean, A_std, np.random.RandomState(0))
    chunks = component_chunks(model, x, Xv, nodes, A_draws, est.n_jobs)
    return float(np.mean(mixture_log_density(chunks, Yv, p["P_"], p["s2"], logw)))


def architecture(est, n_rows, n_features, n_targets):
    """What a ``warm_start`` fit must share with the previous fit to continue from it."""
    return (int(n_rows), int(n_features), int(n_targets), int(est.latent_dim), est.q_w,
            int(est.gh_order), est.expectation, int(est.n_samples), est.input_projection_dim,
            est.output_mixing_dim, repr(est.kernel), int(est.n_inducing), bool(est.whiten),
            tuple(int(h) for h in est.encoder_hidden), float(est.jitter),
            bool(est.early_stopping), float(est.validation_fraction))


def noise_only(kernel):
    """Whether a stationary ``kernel``'s signal variance sits at its lower bound: the model
    then explains the targets by the noise alone."""
    if not isinstance(kernel, _Stationary) or isinstance(kernel.variance_bounds, str):
        return False
    return bool(np.log(kernel.variance) <= np.log(kernel.variance_bounds[0]) + 1e-6)


def run(est, model, x0, data, rs, held_out=None, continuing=False):
    """The optimisation from ``x0`` (after the switched-off warm start for ``init="gp"`` or
    ``"auto"``, whose fit is kept if its bound is higher; ``optimizer="auto"`` resolved to
    L-BFGS-B runs again after ``WARM_UP_STEPS`` full-batch Adam steps when it ended at the
    noise-only model); sets ``est._x``, ``elbo_``,
    ``elbo_history_``, ``n_iter_``, ``validation_scores_``, ``gp_elbo_`` and
    ``latent_used_``. ``held_out``: the ``(X, Y)`` of early stopping, or ``None``.
    ``continuing``: a ``warm_start`` fit going on from the previous one (``x0`` and the Adam
    state ``est._state``): no start-up, iterations and bound history accumulate. ``data``:
    the standardised training rows (:mod:`._gpcde_data`)."""
    N = data.n_rows
    bs = N if est.batch_size is None else min(int(est.batch_size), N)
    optimizer = est.optimizer_
    gp_start = est.init == "gp" and not continuing
    # "auto" starts from the prior but, as "gp", keeps the switched-off fit if it is better
    compare = not continuing and (
        gp_start or (est.init == "auto" and gp_init_possible(est, model.Dw)))
    if not continuing:
        est.gp_elbo_, est.latent_used_ = None, True
    if compare:
        x_gp, x_off, est.gp_elbo_ = gp_warm_start(
            model, x0, data, rs, est.q_w, est._kernel is not None, est.n_jobs, est.verbose)
        if gp_start:
            x0 = x_gp
    if optimizer == "lbfgs" and not gp_start and not continuing:
        x0 = data.natgrad(model, x0, None, 1.0, 1.0, rs)

    full, minibatch, natgrad = objectives(model, data, rs)
    use_ngd = est.natgrad_gamma is not None
    adam_steps = {
        "schedule": est.learning_rate_schedule, "gamma": est.natgrad_gamma,
        "natgrad": natgrad if use_ngd else None, "frozen": model.q_mask() if use_ngd else None,
        "state": est._state, "horizon": est.max_iter}
    adam = {} if optimizer == "lbfgs" else adam_steps
    if held_out is not None:
        adam.update(validation=partial(heldout_log_density, est, model, Xv=held_out[0],
                                       Yv=held_out[1]),
                    n_iter_no_change=est.n_iter_no_change,
                    tol=1e-4 if est.tol is None else est.tol)
    est._x, history, n_iter, est.validation_scores_ = est._optimise(
        optimizer, x0, model.bounds(), full=full, minibatch=minibatch, n_data=N,
        batch_size=bs, random_state=rs, **adam)
    left = est.max_iter - n_iter - WARM_UP_STEPS
    if (optimizer == "lbfgs" and est.optimizer == "auto" and not continuing and not gp_start
            and left > 0 and noise_only(model.unpack(est._x)["kernel"])):
        # L-BFGS-B's first, long steps from the prior start can end in the noise-only optimum
        # (signal variance at its lower bound): once more, after full-batch Adam steps, with
        # the iterations max_iter has left
        x1, warm_history, _, _ = est._optimise(
            "adam", x0, model.bounds(), minibatch=minibatch, n_data=N, batch_size=N,
            random_state=rs, max_iter=WARM_UP_STEPS, stop_tol=None, **adam_steps)
        x1, history1, n_iter1, _ = est._optimise(
            "lbfgs", x1, model.bounds(), full=full, max_iter=left)
        n_iter += WARM_UP_STEPS + n_iter1
        if history1[-1] > history[-1]:
            est._x, history = x1, np.concatenate([warm_history, history1])
    est.elbo_history_ = (np.concatenate([est.elbo_history_, history]) if continuing
                         else history)
    est.n_iter_ = est.n_iter_ + n_iter if continuing else n_iter
    # L-BFGS-B: the bound at the end; Adam: the mean of the last 100 minibatch estimates
    est.elbo_ = float(np.mean(history[-(1 if optimizer == "lbfgs" else 100):]))
    if compare:
        final = (est.elbo_ if model.deterministic
                 else full_bound(model, est._x, data, rs))
        if est.gp_elbo_ > final:
            est._x, est.elbo_, est.latent_used_ = x_off, est.gp_elbo_, False
        else:
            est.elbo_ = final


def fit(est, X, Y, random_state):
    """The whole fit of ``est`` on ``X`` and 2-D ``Y`` (before the fitted attributes are set):
    standardisation, the early-stopping split, a fresh model or the previous one
    (``warm_start`` with the same data shape and structure), then :func:`run`."""
    arch = architecture(est, *X.shape, Y.shape[1])
    continuing = est._continues_fit(arch)
    est.optimizer_ = resolve_optimizer(est, X.shape[0])
    if not continuing:
        est.X_mean_, est.X_scale_ = column_moments(X)
        est.y_mean_, est.y_scale_ = est._target_moments(Y)
    Xs = (X - est.X_mean_) / est.X_scale_
    Ys = (Y - est.y_mean_) / est.y_scale_
    Xs, Ys, held_out = est._held_out(Xs, Ys, random_state)
    if continuing:
        model, x0 = est._model, est._x
    else:
        model, x0 = build(est, Xs, Ys, random_state)
        est._state = AdamState(x0.size)
    est._model = model
    run(est, model, x0, MemoryRows(Xs, Ys), random_state, held_out, continuing)
