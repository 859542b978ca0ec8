"""How a :class:`~sklearn_lvgp.DeepGP` is fitted, apart from its optimiser loop.

The parameter checks, the architecture a warm start must share, the initial model
(Salimbeni & Deisenroth 2017, §5), one ``partial_fit`` pass over streamed rows and the run of
the optimiser that sets the fitted attributes; ``fit``, ``partial_fit`` and the Dask fit of
:mod:`sklearn_lvgp.models._deep_gp_dask` share them. The model itself is
:mod:`sklearn_lvgp.bounds._dsvi_model`.
"""

from functools import partial

import numpy as np
from sklearn.utils import check_random_state

from .._core.parallel import threads
from .._core.progress import check_callback, fit_progress
from .._core.validation import (
    check_bool,
    check_early_stopping,
    check_float,
    check_int,
    check_n_inducing,
    check_natgrad_gamma,
    check_option,
)
from ..bounds._dsvi_model import (
    build_model,
    check_latent_options,
    hidden_widths,
    initial_layers,
    layer_kernels,
    mean_log_density,
    objectives,
)
from ..bounds._iwvi import LatentDSVI
from ..optim._adam import AdamState

__all__ = ["architecture", "batch_rows", "build", "check_params", "partial_fit_rows", "run"]


def check_params(est, X):
    """The hand-written parameter checks of ``est`` on training inputs ``X``; sets the layer
    kernel templates ``est._kernels``."""
    check_int("n_layers", est.n_layers, min_value=1)
    hidden_widths(est.hidden_dims, est.n_layers, X.shape[1])
    check_int("n_inducing", est.n_inducing, min_value=1)
    check_bool("whiten", est.whiten)
    check_float("noise_variance_init", est.noise_variance_init, 0.0, exclusive_min=True)
    check_int("n_samples", est.n_samples, min_value=1)
    check_int("n_predict_samples", est.n_predict_samples, min_value=1)
    check_option("expectation", est.expectation, ("monte_carlo", "unscented"))
    check_option("optimizer", est.optimizer, ("adam", "lbfgs"))
    check_float("learning_rate", est.learning_rate, 0.0, exclusive_min=True)
    check_option("learning_rate_schedule", est.learning_rate_schedule,
                 ("constant", "staircase", "cosine"))
    check_int("batch_size", est.batch_size, min_value=1, allow_none=True)
    check_int("max_iter", est.max_iter, min_value=1)
    if check_natgrad_gamma(est.natgrad_gamma) is not None:
        if est.optimizer != "adam":
            raise ValueError("natgrad_gamma is used with optimizer='adam' only.")
    check_float("tol", est.tol, 0.0, allow_none=True)
    check_early_stopping(est, X.shape[0])
    check_bool("normalize_y", est.normalize_y)
    check_option("positive_transform", est.positive_transform, ("softplus", "log"))
    check_float("jitter", est.jitter, 0.0)
    check_bool("warm_start", est.warm_start)
    est._kernels = layer_kernels(est.kernel, est.n_layers)
    check_option("inner_layer_init", est.inner_layer_init, ("prior", "collapsed"))
    if (est.optimizer == "lbfgs" and est.expectation == "monte_carlo"
            and est.n_layers > 1):
        raise ValueError("optimizer='lbfgs' needs a deterministic objective: use "
                         "expectation='unscented' or n_layers=1 with Monte Carlo DSVI use "
                         "optimizer='adam'.")
    check_latent_options(est.get_params())
    check_n_inducing(est.n_inducing, X.shape[0], "DeepGP")  # after the data-free checks


def architecture(est, n_features, n_targets):
    """What a warm start must share with the previous fit to continue from it."""
    return (int(est.n_layers), tuple(hidden_widths(est.hidden_dims, est.n_layers, n_features)),
            int(n_features), int(n_targets), int(est.n_inducing), bool(est.whiten),
            est.expectation, est.positive_transform, float(est.jitter), repr(est.kernel),
            est.inner_layer_init,
            est._latent(), est.inference, int(est.n_importance),
            tuple(int(h) for h in est.encoder_hidden))


def build(est, Xs, n_targets, random_state):
    """Architecture and initial parameters (Salimbeni & Deisenroth 2017, §5); sets
    ``est._arch`` and returns the model and its flat parameter vector."""
    est._arch = architecture(est, Xs.shape[1], n_targets)
    L, Dw = est.n_layers, est._latent()
    dims = ([Xs.shape[1] + Dw] + hidden_widths(est.hidden_dims, est.n_layers, Xs.shape[1])
            + [n_targets])
    layers = initial_layers(Xs, dims, est._kernels if len(est._kernels) == L
                            else est._kernels * L, est.n_inducing, bool(est.whiten),
                            float(est.jitter), Dw, random_state, est.inner_layer_init)
    latent = ((Dw, est.encoder_hidden, est.inference, est.n_importance) if Dw else None)
    return build_model(layers, dims, est.get_params(), latent, random_state, LatentDSVI)


def batch_rows(batch_size, n):
    """Rows per Adam step: ``batch_size`` clipped to ``n`` (``None``: all ``n``)."""
    return n if batch_size is None else min(int(batch_size), n)


def partial_fit_rows(est, X, y):
    """One pass of Adam steps over the rows ``(X, y)`` (the body of ``partial_fit``)."""
    first = not hasattr(est, "_x")
    X, y = est._validate_fit_data(X, y, reset=first)
    est._check_params(X, y)
    check_int("verbose", est.verbose, min_value=0)
    Y = y.reshape(len(y), -1) if y.ndim == 1 else y
    if not first and Y.shape[1] != est._model.dims[-1]:
        raise ValueError(f"y has {Y.shape[1]} targets; the model was fitted with "
                         f"{est._model.dims[-1]}.")
    if first or not hasattr(est, "_rs_partial"):
        est._rs_partial = check_random_state(est.random_state)
    rs = est._rs_partial
    check_callback(est.callback)
    with threads(est.n_jobs), fit_progress(est, est.callback):
        if first:
            est._y_ndim = y.ndim
            est._standardise(X, Y)
            est._model, est._x = est._build((X - est.X_mean_) / est.X_scale_,
                                            Y.shape[1], rs)
            est._state = AdamState(est._x.size)
            est.n_iter_ = 0
            est._elbo_hist = []
            est.n_samples_seen_ = 0
        est.n_samples_seen_ += X.shape[0]
        Xs = (X - est.X_mean_) / est.X_scale_
        Ys = (Y - est.y_mean_) / est.y_scale_
        bs = batch_rows(est.batch_size, X.shape[0])
        steps = int(np.ceil(X.shape[0] / bs))
        est._run(Xs, Ys, rs, steps, False, n_total=est.n_samples_seen_, force_adam=True)


def run(est, Xs, Ys, rs, max_iter, early_stopping, n_total=None, force_adam=False,
        batch_elbo=None):
    """The optimisation; ``batch_elbo(x, idx, scale)``, when given, evaluates minibatches
    of rows held elsewhere (a Dask fit: ``Xs`` is then ``None`` and ``n_total`` the rows)."""
    model = est._model
    est.validation_scores_ = None
    if early_stopping:
        Xs, Ys, Xv, Yv = est._validation_split(Xs, Ys, rs)
    N = n_total if Xs is None else Xs.shape[0]
    N_scale = N if n_total is None else n_total
    bs = batch_rows(est.batch_size, N)
    S = est.n_samples
    lbfgs = est.optimizer == "lbfgs" and not force_adam
    if lbfgs and est.n_iter_ == 0:
        # start the last layer at its optimal q(u) for the initial hyperparameters (one
        # γ = 1 natural-gradient step, Salimbeni 2020, §3.4.1): from q(u) = p(u) the first line
        # search of L-BFGS tends to jump to the all-noise optimum
        est._x = model.natgrad(est._x, Xs, Ys, 1.0, S, 1.0, rs)
    full, minibatch, natgrad = objectives(model, Xs, Ys, N_scale, S, rs, batch_elbo)

    use_ngd = est.natgrad_gamma is not None
    validation = None
    if early_stopping:
        paths = est._draw_predict_eps(rs, min(10, est.n_predict_samples))
        validation = partial(mean_log_density, model, X=Xv, Y=Yv, paths=paths)
    adam = {} if lbfgs else {
        "schedule": est.learning_rate_schedule, "horizon": est.max_iter,
        "natgrad": natgrad if use_ngd else None, "gamma": est.natgrad_gamma,
        "frozen": model.last_q_mask() if use_ngd else None,
        "validation": validation,
        "n_iter_no_change": est.n_iter_no_change, "state": est._state,
        "tol": 1e-4 if est.tol is None else est.tol}
    est._x, hist, n_iter, est.validation_scores_ = est._optimise(
        "lbfgs" if lbfgs else "adam", est._x, model.bounds(), full=full,
        minibatch=minibatch, n_data=N, batch_size=bs, random_state=rs, max_iter=max_iter,
        **adam)
    est.n_iter_ += n_iter
    est._elbo_hist.extend(hist.tolist())
    est.elbo_ = float(np.mean(hist[-(1 if lbfgs else 100):]))
    est.elbo_history_ = np.asarray(est._elbo_hist)
    layers, noise, _ = model.unpack(est._x)
    est.layers_ = layers
    est.inducing_inputs_ = [layer.Z for layer in layers]
    est.noise_variance_ = noise
    est._predict_eps = est._draw_predict_eps(rs, est.n_predict_samples)
