"""DeepGP: deep Gaussian-process regression with doubly-stochastic variational inference.

Salimbeni & Deisenroth (2017) and Salimbeni (2020), chs. 2-3 (natural gradients for the last
layer) and 5 (latent covariates). The model (parameter packing, the bound, its minibatch
objectives and the predictive) is :class:`sklearn_lvgp.bounds._dsvi_model._DSVI` (with latent
covariates :class:`sklearn_lvgp.bounds._iwvi.LatentDSVI`), its layers the SVGP engine of
:mod:`sklearn_lvgp.variational`; the base class runs the optimiser.
"""

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._compile.report import compile_report
from .._core.parallel import threads
from .._core.progress import check_callback, fit_progress
from .._core.scaling import column_moments
from .._core.validation import (
    check_bool,
    check_float,
    check_int,
    check_n_inducing,
    check_option,
)
from ..base import _BaseDeepGP, _BaseLVGPRegressor
from ..bounds._dsvi_init import check_latent_options, hidden_widths
from ..bounds._dsvi_likelihood import kde_rows, mixture_log_density, path_log_density, path_moments
from ..engine._dask import DaskRows, _dask, is_dask_collection
from ..likelihoods import Gaussian, Likelihood, StudentT

__all__ = ["DeepGP"]

#: Rows of a dask fit gathered to the driver for the initial k-means inducing inputs and inner
#: mean functions (all of them for smaller data: the fit then equals the in-memory one up to
#: rounding).
INIT_ROWS = 20_000


class DeepGP(RegressorMixin, _BaseDeepGP, _BaseLVGPRegressor):
    """Deep Gaussian-process regression with doubly-stochastic variational inference.

    A composition of ``n_layers`` sparse variational GP layers, ``f^L(...f^1(x))``, trained by
    maximising the DSVI bound of Salimbeni & Deisenroth (2017): inner layers are sampled with the
    reparameterisation trick, each data point independently, and the last layer's Gaussian
    likelihood expectation is analytic. ``n_layers=1`` is the stochastic variational GP (SVGP) of
    Hensman et al. (2013). Inner layers have fixed linear (PCA) or identity mean functions.

    Parameters
    ----------
    n_layers : int, default=2
        Number of GP layers (1 = SVGP).
    hidden_dims : int or sequence of int, default=None
        Widths of the ``n_layers - 1`` inner layers; ``None`` is ``min(30, n_features)`` each.
    kernel : Kernel or sequence of Kernel, default=None
        Covariance of each layer: one template cloned for every layer, or one per layer.
        ``None`` is an ARD :class:`~sklearn_lvgp.kernels.RBF` with unit length scales and
        variance (Salimbeni 2020, §2.4), 0.05 on inner layers under ``inner_layer_init="prior"``.
    inner_layer_init : {"prior", "collapsed"}, default="prior"
        How the inner layers start close to their mean functions: ``q(u)`` at the prior (no
        KL) under a default kernel variance of 0.05, or collapsed to ``1e-10`` times the prior
        covariance under unit variance (the authors' code; Adam then needs ~10⁴ steps to
        undo it). A kernel of your own is used as given (user guide).
    n_inducing : int, default=100
        Inducing inputs per layer (k-means centres of the standardised inputs). It may exceed
        the number of samples: the stochastic bound does not tie inducing inputs to data, so
        the missing ones start at standard-normal draws.
    whiten : bool, default=True
        Whitened ``q(u)`` (``u = L_u v``, prior ``N(0, I)``).
    noise_variance_init : float, default=0.05
        Initial Gaussian noise variance (standardised units when ``normalize_y``); used by the
        default likelihood only.
    n_samples : int, default=1
        Monte Carlo samples per data point in each training step.
    n_predict_samples : int, default=100
        Paths per test point in :meth:`predict`, :meth:`predict_log_density`.
    expectation : {"monte_carlo", "unscented"}, default="monte_carlo"
        ``"monte_carlo"``: DSVI sampling (the paper). ``"unscented"``: each inner layer's
        Gaussian marginals are moment-matched and passed through the next layer at ``2D`` sigma
        points, a deterministic objective that L-BFGS can optimise; predictions are then one
        moment-matched Gaussian per point (an approximation of the mixture).
    optimizer : {"adam", "lbfgs"}, default="adam"
        ``"lbfgs"`` uses the full batch and needs a deterministic objective
        (``expectation="unscented"`` or ``n_layers=1``); it starts from the last layer's optimal
        ``q(u)`` for the initial hyperparameters (one natural-gradient step with γ = 1).
    learning_rate : float, default=0.03
        Adam step size (the papers' experiments: 0.01 with ``inner_layer_init="collapsed"``).
    learning_rate_schedule : {"constant", "staircase", "cosine"}, default="constant"
        ``"staircase"`` multiplies the learning rate and ``natgrad_gamma`` by 0.98 every 1000
        steps. ``"cosine"`` anneals both along half a cosine from their initial values at the
        first step to 1 % of them at step ``max_iter`` and keeps them there; steps are counted
        across ``warm_start`` fits and :meth:`partial_fit` calls, so a continued fit runs at the
        annealed rate.
    batch_size : int or None, default=10000
        Rows per step; ``None`` or a value at least ``n_samples`` (rows) means the full batch.
        A larger value is clipped to the number of rows (documented, no error).
    max_iter : int, default=10000
        Optimiser iterations (Adam steps or L-BFGS iterations).
    tol : float or None, default=1e-4
        Stop when the bound (Adam: its mean over 100 steps against the 100 before; L-BFGS-B:
        over its last 100 iterations) improves by less than ``tol`` relative to its magnitude;
        with early stopping, the relative gain a held-out check needs. ``None``: all
        ``max_iter`` Adam steps (the papers' fixed budgets; 1e-4 for early stopping).
        An Adam fit that reaches ``max_iter`` first emits ``ConvergenceWarning``.
    natgrad_gamma : float, tuple (gamma0, gamma1, K) or None, default=None
        If set, the last layer's ``q(u)`` is updated by natural-gradient steps of this size
        (alternating with the Adam steps, which then leave it alone); a tuple is a log-linear
        warm-up from ``gamma0`` to ``gamma1`` over ``K`` steps (Salimbeni 2020, ch. 3). Steps
        must be in (0, 1] and ``K >= 1``. Adam only. With a non-Gaussian ``likelihood`` the
        step follows the gradient of the expected log-likelihood in ``q(u)``'s expectation
        parameters (§3.2), halved while it would leave ``q(u)``'s covariance indefinite.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the rows and stop when their mean log predictive
        density has not improved for ``n_iter_no_change`` checks (every 100 steps). The fit
        keeps the state with the best held-out score, also when ``max_iter`` ends it (as
        scikit-learn's ``MLPRegressor`` does).
    validation_fraction : float, default=0.1
        Held-out fraction for early stopping.
    n_iter_no_change : int, default=5
        Patience of early stopping, in checks.
    normalize_y : bool, default=True
        Standardise targets with training statistics (predictions are in original units).
    positive_transform : {"softplus", "log"}, default="softplus"
        Unconstrained variable behind the kernel's positive hyperparameters and the noise
        variance: ``softplus^{-1}`` of the value (GPflow 1.x, used by the papers) or its log
        (the kernels' ``theta``). The bound is the same; Adam's effective step is not, since a
        step of 0.01 changes a log-parameter by 1 % but a large softplus-parameter by 0.01.
    jitter : float, default=1e-6
        Relative jitter on each ``K_uu`` (escalated with a warning if needed).
    random_state : int, RandomState instance or None, default=None
        Seeds k-means, minibatches, the reparameterisation noise and the prediction paths.
    n_jobs : int, default=None
        Threads for the jitted kernel loops.
    verbose : int, default=0
        > 0: a progress bar (tqdm) or lines of the bound; -1 also silences the compile notice.
    callback : callable or None, default=None
        ``callback(estimator, info)`` after every optimiser iteration of ``fit``; ``info`` is a
        dict with ``iteration``, ``stage`` (``"lbfgs"`` or ``"adam"``), ``bound`` (the
        ELBO or its minibatch estimate; higher is better), ``elapsed`` and, at held-out checks,
        ``validation_score``. Returning ``True`` stops that optimisation as converged.
    warm_start : bool, default=False
        Continue from the previous fit's parameters and optimiser state.
    latent_dim : int or None, default=None
        Width of a latent covariate ``w ~ N(0, I)`` concatenated to the input of the first layer
        (LV-GP-...-GP models, Salimbeni 2020, ch. 5; ``n_layers=1`` is LV-GP). ``None`` or 0:
        no latent layer (plain DSVI, unchanged). Its proposal ``q(w_n)`` is amortised by a
        recognition MLP on ``[x_n, y_n]``; predictions integrate ``w`` over its prior. Needs
        ``optimizer="adam"`` and ``expectation="monte_carlo"``.
    inference : {"vi", "iwvi"}, default="vi"
        Bound for the latent model: ``"vi"`` (eq. 5.3, analytic ``KL(q(w) || p(w))``) or the
        importance-weighted bound with analytic final layer (eq. 5.11), whose ``n_importance``
        proposals per point share one joint draw of the inner layers. ``"iwvi"`` needs
        ``latent_dim >= 1``.
    n_importance : int, default=5
        Proposals ``K`` per point for ``inference="iwvi"`` (``K = 1`` is the VI estimator with a
        sampled KL).
    encoder_hidden : sequence of int, default=(20, 20)
        Hidden widths of the recognition MLP (tanh; residual skip between equal widths).
    likelihood : Likelihood or None, default=None
        The last layer's likelihood, a regression likelihood of
        :mod:`sklearn_lvgp.likelihoods` (e.g. ``StudentT`` for outliers, ``Poisson`` for
        counts, ``Beta`` for targets in (0, 1)), its hyperparameters learned within their
        bounds (``likelihood__scale`` ...). ``None``: Gaussian with ``noise_variance_init``
        (the analytic expectation). ``normalize_y`` standardises the targets only for the
        location-scale likelihoods (``Gaussian``, ``StudentT``). ``sample_y``,
        ``return_cov`` and ``latent_dim`` need ``None``.

    Attributes
    ----------
    layers_ : list of SVGPLayer
        Fitted layers (kernel, inducing inputs ``Z``, ``q_mu``, ``q_sqrt``, mean function).
    inducing_inputs_ : list of ndarray of shape (n_inducing, layer input dimension)
        The inducing inputs of each layer (the ``Z`` of ``layers_``).
    noise_variance_ : float or None
        Fitted likelihood variance (standardised units); ``None`` with a ``likelihood``.
    likelihood_ : Likelihood
        The fitted likelihood (only with a ``likelihood``).
    elbo_ : float
        Final ELBO estimate (exact for deterministic objectives; else the mean of the last 100
        minibatch estimates).
    elbo_history_ : ndarray
        ELBO estimate at every iteration.
    n_iter_ : int
        Iterations run (cumulative over warm starts and partial fits).
    validation_scores_ : ndarray or None
        Held-out mean log predictive density at each check of the last call with
        ``early_stopping=True`` (every 100 steps); ``None`` without early stopping.
    n_samples_seen_ : int
        Rows seen by :meth:`partial_fit` (the ``N`` of its bound), or the training size.
    X_mean_, X_scale_ : ndarray of shape (n_features,)
        Input standardisation.
    y_mean_, y_scale_ : ndarray of shape (n_targets,)
        Target standardisation (zeros and ones without ``normalize_y``).
    n_features_in_ : int
        Number of input features.

    Notes
    -----
    Adam keeps its last iterate. With a very small fitted noise, a constant learning rate makes
    short excursions from the optimum and the last iterate can land in one;
    ``early_stopping=True`` or ``learning_rate_schedule="cosine"`` avoid that (user guide).

    ``fit`` also takes a dask array or DataFrame: the rows stay in their partitions, and each
    Adam step's minibatch bound and gradient (latent covariates included), and with
    ``natgrad_gamma`` the sums of its natural-gradient step, are evaluated by the partitions
    holding its rows, with the minibatch and its Monte Carlo draws chosen on the driver as in
    memory. Early stopping, ``optimizer="lbfgs"`` and ``warm_start`` are not available on dask
    input (each raises a ``ValueError`` naming it).

    References
    ----------
    Salimbeni, H., Deisenroth, M. P. (2017). Doubly stochastic variational inference for deep
    Gaussian processes. NeurIPS.

    Salimbeni, H. (2020). Deep Gaussian processes: advances in models and inference. PhD thesis,
    Imperial College London.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp import DeepGP
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-2, 2, (60, 1)); y = np.sign(X[:, 0]) + 0.05 * rng.randn(60)
    >>> model = DeepGP(n_layers=2, n_inducing=10, max_iter=50, random_state=0).fit(X, y)
    >>> model.predict(X[:3]).shape
    (3,)
    """

    def __init__(self, n_layers=2, hidden_dims=None, kernel=None, inner_layer_init="prior",
                 n_inducing=100, whiten=True,
                 noise_variance_init=0.05, n_samples=1, n_predict_samples=100,
                 expectation="monte_carlo", optimizer="adam", learning_rate=0.03,
                 learning_rate_schedule="constant", batch_size=10000, max_iter=10000, tol=1e-4,
                 natgrad_gamma=None, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=5, normalize_y=True, positive_transform="softplus",
                 jitter=1e-6, random_state=None, n_jobs=None, verbose=0, callback=None,
                 warm_start=False,
                 latent_dim=None, inference="vi", n_importance=5, encoder_hidden=(20, 20),
                 likelihood=None):
        self.n_layers = n_layers
        self.hidden_dims = hidden_dims
        self.kernel = kernel
        self.inner_layer_init = inner_layer_init
        self.n_inducing = n_inducing
        self.whiten = whiten
        self.noise_variance_init = noise_variance_init
        self.n_samples = n_samples
        self.n_predict_samples = n_predict_samples
        self.expectation = expectation
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.learning_rate_schedule = learning_rate_schedule
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.natgrad_gamma = natgrad_gamma
        self.tol = tol
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.normalize_y = normalize_y
        self.positive_transform = positive_transform
        self.jitter = jitter
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.warm_start = warm_start
        self.latent_dim = latent_dim
        self.inference = inference
        self.n_importance = n_importance
        self.encoder_hidden = encoder_hidden
        self.likelihood = likelihood

    # ----------------------------------------------------------------------------- checks
    def _check_params(self, X, y):
        self._check_deep_gp_params(X)
        check_float("noise_variance_init", self.noise_variance_init, 0.0, exclusive_min=True)
        check_bool("normalize_y", self.normalize_y)
        if self.optimizer == "lbfgs" and self.expectation == "monte_carlo" and self.n_layers > 1:
            raise ValueError("optimizer='lbfgs' needs a deterministic objective: use "
                             "expectation='unscented' or n_layers=1 with Monte Carlo DSVI use "
                             "optimizer='adam'.")
        check_latent_options(self.get_params())
        self._check_likelihood()
        check_n_inducing(self.n_inducing, X.shape[0], "DeepGP")  # after the data-free checks

    def _architecture(self, n_features, n_targets):
        """What a warm start must share with the previous fit to continue from it."""
        return (int(self.n_layers),
                tuple(hidden_widths(self.hidden_dims, self.n_layers, n_features)),
                int(n_features), int(n_targets), int(self.n_inducing), bool(self.whiten),
                self.expectation, self.positive_transform, float(self.jitter), repr(self.kernel),
                self.inner_layer_init, self._latent(), self.inference, int(self.n_importance),
                tuple(int(h) for h in self.encoder_hidden)) + (
            () if self._likelihood_param() is None else (repr(self.likelihood),))

    def _likelihood_param(self):
        return getattr(self, "likelihood", None)  # None in pickles made before the parameter

    def _check_likelihood(self):
        lik = self._likelihood_param()
        if lik is None:
            return
        if not isinstance(lik, Likelihood) or lik.is_classification:
            raise ValueError(f"likelihood must be a regression likelihood of "
                             f"sklearn_lvgp.likelihoods or None, got {lik!r}; use "
                             "DeepGPClassifier for classes.")
        if self._latent():
            raise ValueError(f"latent_dim={self.latent_dim!r} (latent covariates) needs the "
                             "default Gaussian likelihood (likelihood=None), got "
                             f"likelihood={type(lik).__name__}; set latent_dim=None for this "
                             "likelihood.")

    def _scaled_targets(self):
        lik = self._likelihood_param()
        return lik is None or isinstance(lik, (Gaussian, StudentT))

    def _model_params(self):
        return {**self.get_params(), "likelihood": getattr(self, "_likelihood", None)}

    def _set_likelihood(self, fitted):
        if self._model.likelihood is None:
            self.noise_variance_ = fitted
            self.__dict__.pop("likelihood_", None)
        else:
            self.noise_variance_, self.likelihood_ = None, fitted

    # -------------------------------------------------------------------------------- fit
    def _standardise(self, X, Y):
        self.X_mean_, self.X_scale_ = column_moments(X)
        self._set_target_moments(*self._target_moments(Y))
        self._initialise_likelihood((Y - self.y_mean_) / self.y_scale_)

    def _set_target_moments(self, mean, scale):
        """``y_mean_``, ``y_scale_`` (none for a likelihood that is not location-scale)."""
        if not self._scaled_targets():
            mean, scale = np.zeros_like(mean), np.ones_like(scale)
        self.y_mean_, self.y_scale_ = mean, scale

    def _initialise_likelihood(self, Ys):
        lik = self._likelihood_param()
        self._likelihood = None if lik is None else lik.initialize(Ys)

    def _fit(self, X, y, random_state):
        Y = self._targets_2d(y)
        continuing = (self.warm_start and hasattr(self, "_x")
                      and self._architecture(X.shape[1], Y.shape[1]) == self._arch)
        if not continuing:
            self._standardise(X, Y)
        Xs = (X - self.X_mean_) / self.X_scale_
        Ys = (Y - self.y_mean_) / self.y_scale_
        if not continuing:
            self._initialise(Xs, Ys.shape[1], random_state)
        self._run(Xs, Ys, random_state, self.max_iter, self.early_stopping)
        self.n_samples_seen_ = X.shape[0]
        self._rs_partial = random_state
        return self

    def _fit_dask(self, X, y, random_state):
        """:meth:`fit` on dask collections: the rows stay in their partitions, and each Adam
        (and natural-gradient) step's minibatch, rows and Monte Carlo draws chosen here as in
        memory, is evaluated by the partitions holding its rows (``DaskRows.subset``)."""
        X_d, Y_d = self._dask_supervised_rows(X, y)
        unsupported = {"early_stopping=True": self.early_stopping,
                       "optimizer='lbfgs'": self.optimizer == "lbfgs",
                       "warm_start=True": self.warm_start}
        named = [name for name, used in unsupported.items() if used]
        if named:  # held-out rows and L-BFGS-B's full-batch start need rows in memory
            raise ValueError(f"DeepGP on dask input does not support {', '.join(named)}; fit "
                             "on numpy arrays for these options.")
        dask, _ = _dask()
        self.X_mean_, self.X_scale_ = (np.asarray(a) for a in dask.compute(*column_moments(X_d)))
        self._set_target_moments(*(np.asarray(a)
                                   for a in dask.compute(*self._target_moments(Y_d))))
        rows = DaskRows({"X": (X_d - self.X_mean_) / self.X_scale_,
                         "y": (Y_d - self.y_mean_) / self.y_scale_})
        N = rows.n_rows
        init = (np.arange(N) if N <= INIT_ROWS
                else np.sort(random_state.choice(N, INIT_ROWS, replace=False)))
        self._initialise_likelihood(np.asarray(rows.arrays["y"][init].compute()))
        self._initialise(np.asarray(rows.arrays["X"][init].compute()), Y_d.shape[1],
                         random_state)
        self._run(None, None, random_state, self.max_iter, False, n_total=N, rows=rows)
        self.n_samples_seen_ = N
        self._rs_partial = random_state
        return self

    def partial_fit(self, X, y):
        """One pass of Adam steps over ``(X, y)`` (streaming data).

        The first call standardises with that batch's statistics and initialises the model;
        later calls keep them. The bound's data size ``N`` is the number of rows seen so far.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Their targets.

        Returns
        -------
        self : DeepGP
            The updated model.
        """
        with self._all_or_nothing():
            first = not hasattr(self, "_x")
            X, y = self._validate_fit_data(X, y, reset=first)
            self._check_params(X, y)
            check_int("verbose", self.verbose, min_value=-1)
            Y = y.reshape(len(y), -1) if y.ndim == 1 else y
            if not first and Y.shape[1] != self._model.dims[-1]:
                raise ValueError(f"y has {Y.shape[1]} targets; the model was fitted with "
                                 f"{self._model.dims[-1]}.")
            if first or not hasattr(self, "_rs_partial"):
                self._rs_partial = check_random_state(self.random_state)
            rs = self._rs_partial
            check_callback(self.callback)
            with threads(self.n_jobs), fit_progress(self._bound_callback()), \
                    compile_report(*self._plan()):
                if first:
                    self._y_ndim = y.ndim
                    self._standardise(X, Y)
                    self._initialise((X - self.X_mean_) / self.X_scale_, Y.shape[1], rs)
                    self.n_samples_seen_ = 0
                self.n_samples_seen_ += X.shape[0]
                Xs = (X - self.X_mean_) / self.X_scale_
                Ys = (Y - self.y_mean_) / self.y_scale_
                steps = int(np.ceil(X.shape[0] / self._batch_rows(X.shape[0])))
                self._run(Xs, Ys, rs, steps, False, n_total=self.n_samples_seen_,
                          force_adam=True)
        return self

    # --------------------------------------------------------------------------- predict
    def _components(self, X):
        return self._path_components(self._standardised_inputs(X))

    def predict(self, X, return_std=False, return_cov=False):
        """Predictive mean (and standard deviation or covariance) of the mixture over paths.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs.
        return_std : bool, default=False
            Also return the predictive standard deviation (noise included).
        return_cov : bool, default=False
            Also return the joint predictive covariance of the rows, per target: the inner
            layers are sampled jointly over the rows along ``n_predict_samples`` paths drawn
            from a fixed seed (exact with one layer); its diagonal agrees with ``return_std``
            up to Monte Carlo error. Not with latent covariates (``latent_dim``).

        Returns
        -------
        mean : ndarray of shape (n_samples,) or (n_samples, n_targets)
            Predictive mean in original units.
        std : ndarray of the same shape
            Predictive standard deviation (only when ``return_std``).
        cov : ndarray of shape (n_samples, n_samples) or (n_samples, n_samples, n_targets)
            Predictive covariance (only when ``return_cov``).
        """
        if return_std and return_cov:
            raise ValueError("At most one of return_std or return_cov can be requested.")
        if return_cov:
            return self._predict_cov(X)
        if is_dask_collection(X):
            return self._predict_on_partitions(X, return_std)
        mu, var, noise = self._components(X)
        if self._model.likelihood is not None:  # the likelihood's moments along each path
            mean, v = path_moments(noise, mu, var)
        else:
            mean = mu.mean(axis=0)
        out = self._target_shape(self.y_mean_ + self.y_scale_ * mean)
        if not return_std:
            return out
        if self._model.likelihood is None:
            v = np.mean(var + noise + mu * mu, axis=0) - mean * mean
            v = np.maximum(v, 0.0)
        return out, self._target_shape(self.y_scale_ * np.sqrt(v))

    def _predict_cov(self, X):
        if self._latent():
            raise ValueError("return_cov is not available with latent covariates (latent_dim): "
                             "use sample_y for draws of each row.")
        Xs = self._standardised_inputs(X)
        with threads(self.n_jobs):
            _, cov = self._model.joint_predictive(self._x, Xs, int(self.n_predict_samples),
                                                  np.random.RandomState(0))
        cov = cov * (self.y_scale_ ** 2)[None, None, :]
        return self.predict(X), (cov[:, :, 0] if self._y_ndim == 1 else cov)

    def predict_log_density(self, X, y, method="mixture", n_kde_samples=2000, random_state=0):
        """Log predictive density of each row, in original units (Salimbeni 2020, eqs. 2.20-2.21).

        ``method="mixture"`` (default): ``logsumexp_s sum_d log N(y_d | mu_sd, v_sd + s2) - log
        S`` over the stored prediction paths (one Gaussian per point with
        ``expectation="unscented"``), with the target standardisation undone; with a
        ``likelihood``, its predictive density along each path in place of the Gaussian.

        ``method="kde"``: the evaluation of Salimbeni (2020), Table 5.1 — ``n_kde_samples`` draws of
        ``y`` per row from :meth:`sample_y` and a Gaussian kernel density estimate with
        Silverman's bandwidth (:func:`sklearn_lvgp.metrics.kde_log_density`). It is noisier and
        biased towards a smoother density (for a Gaussian predictive ``N(m, s^2)`` its
        expectation is ``N(m, s^2 (1 + 0.054))`` at 2000 samples); use it only to reproduce that
        table. Single-target models only.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Targets.
        method : {"mixture", "kde"}, default="mixture"
            Estimator of the log predictive density.
        n_kde_samples : int, default=2000
            Draws per row for ``method="kde"`` (at least 2).
        random_state : int, RandomState instance or None, default=0
            Seed of the draws for ``method="kde"`` (unused by ``"mixture"``).

        Returns
        -------
        log_density : ndarray of shape (n_samples,)
            Per-row log predictive density.
        """
        check_option("method", method, ("mixture", "kde"))
        if method == "kde":
            return self._log_density_kde(X, y, n_kde_samples, random_state)
        mu, var, noise = self._components(X)
        Y = self._check_targets(y, *mu.shape[1:])
        if self._model.likelihood is not None:
            return (path_log_density(noise, mu, var, (Y - self.y_mean_) / self.y_scale_)
                    - np.sum(np.log(self.y_scale_)))
        return mixture_log_density(mu, var, noise, Y, self.y_mean_, self.y_scale_)

    def _log_density_kde(self, X, y, n_kde_samples, random_state):
        """KDE log density of ``y`` from :meth:`sample_y` draws (Salimbeni 2020, Table 5.1)."""
        check_is_fitted(self, "layers_")
        check_int("n_kde_samples", n_kde_samples, min_value=2)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        n_targets = self._model.dims[-1]
        if n_targets != 1:
            raise ValueError(f"method='kde' estimates a 1-D density; the model has {n_targets} "
                             "targets. Use method='mixture'.")
        Y = self._check_targets(y, X.shape[0], 1)[:, 0]
        if self._model.likelihood is not None:
            raise ValueError("method='kde' draws from sample_y, which needs the default Gaussian "
                             f"likelihood (likelihood=None), not "
                             f"{type(self._model.likelihood).__name__}; use method='mixture'.")
        return kde_rows(lambda rows, rs: self.sample_y(rows, n_kde_samples, rs), X, Y,
                        n_kde_samples, check_random_state(random_state), self.n_layers)

    def sample_y(self, X, n_samples=1, random_state=0):
        """Draw targets from the predictive distribution (Salimbeni 2020, eq. 2.21).

        Always Monte Carlo through the layers, whatever ``expectation`` was used in training.

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features)
            Inputs.
        n_samples : int, default=1
            Draws per input.
        random_state : int, RandomState instance or None, default=0
            Seed of the draws.

        Returns
        -------
        y_samples : ndarray of shape (n_samples_X, n_samples) or \
(n_samples_X, n_targets, n_samples)
            Samples in original units.
        """
        Xs = self._standardised_inputs(X)
        check_int("n_samples", n_samples, min_value=1)
        rs = check_random_state(random_state)
        with threads(self.n_jobs):
            f = self._model.sample(self._x, Xs, n_samples, rs)  # (n, D, S)
        ys = self.y_mean_[None, :, None] + self.y_scale_[None, :, None] * f
        return ys[:, 0, :] if self._y_ndim == 1 else ys
