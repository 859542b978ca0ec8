"""LDGD: latent discriminative generative decoder (Ziaei et al. 2024).

A shared latent q(X) feeds a regression path (one SVGP per data column, ARD kernel, per-column
noise) and a classification path (one probit Bernoulli SVGP per class, one-hot labels). The model
is a classifier, a transformer (test-time q(x*) from the regression path) and a generator
(decoding latent points near a class).

The bound, its training and test-time problems and the fitted posterior are in
``bounds/_ldgd*.py``; this module assembles them with the base class's optimisers.
"""

import numpy as np
from sklearn.base import ClassifierMixin, ClassNamePrefixFeaturesOutMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._core.parallel import threads
from .._core.scaling import NORMALIZE_OPTIONS, normalization
from .._core.validation import (
    check_bool,
    check_class_labels,
    check_data_scale,
    check_float,
    check_int,
    check_latent_points,
    check_layer_widths,
    check_option,
)
from .._core.warn import warn
from ..base import _BaseLatentTransformer
from ..bounds._ldgd_objective import PRESETS, Globals
from ..bounds._ldgd_posterior import LDGDPosterior
from ..bounds._ldgd_problem import TrainingProblem, path_settings
from ..engine._dask import DaskRows, _dask, is_dask_collection
from ..expectations._rules import reparameterise
from ..nn._ldgd_encoder import encoder_forward, encoder_shapes
from ..optim._adam import run_adam

__all__ = ["LDGD"]

_EXPECTATIONS = ("monte_carlo", "unscented")
_PROBA = ("plugin", "marginal", "integrated")


def _labels(proba, classes):
    """The most probable class of each row of ``proba``."""
    return classes[np.argmax(proba, axis=1)]


class LDGD(ClassNamePrefixFeaturesOutMixin, ClassifierMixin, _BaseLatentTransformer):
    """Latent discriminative generative decoder (LDGD) and its amortised variant (Fast LDGD).

    Every training row ``y_i`` with label ``c_i`` has a latent point with posterior
    ``q(x_i) = N(μ_i, diag σ_i²)`` (prior ``N(0, I)``). Two sparse variational GP paths read the
    same latent points: a regression path reconstructs the row (one GP per column, shared ARD
    kernel, per-column Gaussian noise) and a classification path predicts the one-hot label (one
    probit-Bernoulli GP per class). Both use whitened ``q(U)``. The bound is maximised with Adam on
    minibatches and reparameterised samples of ``x`` (the paper's method, Ziaei et al. 2024, §2.3.8)
    or, deterministically, with sigma points of ``q(x)`` (Adam or full-batch L-BFGS). New rows are
    mapped to ``q(x*)`` through the regression path alone with the model fixed, then classified
    there.

    ``fit`` also takes a dask array or DataFrame (labels as a dask or in-memory array): the rows
    stay partitioned where they live, and each evaluation of the bound (an L-BFGS-B iteration
    or an Adam minibatch) runs on the partitions that hold its rows, which send back partial
    sums and their rows' ``q(x_i)`` gradients (user guide, "Past one machine: Dask"). The
    amortised variant and early stopping need the rows in memory. ``transform``,
    ``predict_proba``, ``predict`` and ``predict_f`` of a dask input return dask arrays,
    computed partition by partition.

    Parameters
    ----------
    n_components : int, default=7
        Latent dimension ``Q``.
    n_inducing : int or pair of int, default=10
        Inducing points per path: one int for both, or ``(M_regression, M_classification)``.
    kernel : Kernel or pair of Kernel, default=None
        Kernel of both paths (cloned per path) or a ``(regression, classification)`` pair;
        ``None`` is an ARD :class:`~sklearn_lvgp.kernels.RBF` with unit length scales and variance.
    elbo_weighting : {"paper", "ref-2024-03", "ref-2024-09"}, default="paper"
        Weighting of the bound's terms: ``"paper"`` is the plain ELBO of Ziaei et al. (2024,
        eq. 28); the two others are the normalisations of the authors' released code (KL terms
        down-weighted by ``1/D`` or ``1/K``; classification path up-weighted by ``D/K``).
    reg_weight, cls_weight : float, default=1.0
        Extra weights of the regression and classification paths.
    expectation : {"monte_carlo", "unscented"}, default="monte_carlo"
        How ``E_q(x)[·]`` is taken: one reparameterised sample per row and step (the paper), or
        the ``2Q`` unscented sigma points (deterministic; with Gauss–Hermite over ``f`` on the
        classification path in both modes).
    optimizer : {"auto", "adam", "lbfgs"}, default="auto"
        ``"auto"`` is L-BFGS-B (full batch) for the non-amortised unscented mode and Adam
        otherwise (with the encoder, L-BFGS tends to collapse q(x) onto the prior in its first
        steps). L-BFGS needs the deterministic mode; with enough steps, minibatch Adam finds
        better optima of the unscented objective on the moons and oil flow (user guide).
    amortized : bool, default=False
        Fast LDGD: ``q(x_i)`` from an encoder MLP of ``y_i`` (Ziaei et al. 2024, §2.3.10, eq. 29);
        ``transform`` is then a forward pass instead of an optimisation.
    encoder_hidden : tuple of int, default=(50, 20)
        Hidden widths of the ReLU encoder (``amortized=True``).
    batch_size : int, default=100
        Rows per Adam step (``>= n_samples`` is full batch).
    learning_rate : float, default=0.01
        Adam step size (training and test-time inference).
    max_iter : int, default=5000
        Most Adam steps or L-BFGS iterations (a default fit usually stops earlier, by ``tol``).
    tol : float or None, default=1e-4
        Adam stops when the mean bound over the last 100 steps improves by less than ``tol``
        (relative to its magnitude) on the 100 steps before; ``None`` runs all ``max_iter``
        steps (the fixed budgets of the paper's experiments). L-BFGS-B stops when the bound
        has improved by less than ``tol`` over its last 100 iterations, or by scipy's tests.
        Either optimiser emits ``ConvergenceWarning`` when ``max_iter`` ends the fit first.
    early_stopping : bool, default=False
        Adam only (``"auto"`` then means Adam): stop when the mean log probability of the
        held-out rows' labels (``predict_proba``) has not improved for ``n_iter_no_change``
        checks (every 100 steps), keeping the best checked state (user guide).
    validation_fraction, n_iter_no_change : float, int, default=0.1, 5
        Held-out fraction and patience (in checks) of early stopping.
    transform_max_iter : int, default=500
        Adam steps of the test-time inference of ``q(x*)`` (non-amortised model) in
        ``transform`` and the predictions: from the regression path alone (labels are unknown),
        training rows too; Fast LDGD's encoder gives ``q(x*)`` directly.
    x_init : {"pca", "random"}, default="pca"
        Initial latent means: PCA scores (padded with small columns when ``Q > D``) or
        ``N(0, I)`` draws.
    transform_init : {"nearest", "random"}, default="nearest"
        Start of test-time inference: the fitted ``q(x_j)`` of the nearest training row in data
        space, or ``N(0, I)`` (the authors' code).
    proba : {"integrated", "marginal", "plugin"}, default="integrated"
        ``predict_proba``: ``Φ(μ_k/√(1+v_k))`` averaged over the sigma points of ``q(x*)`` (GP
        and latent uncertainty), that probability at ``μ*`` only (GP variance), or
        ``Φ(μ_k(μ*))`` (the authors' code, overconfident: down to 1e-85 on breast cancer).
        Rows are normalised to sum to one.
    normalize_X : {"standardize", "center", "none"}, default="standardize"
        Column normalisation of ``X`` before the zero-mean GPs (the authors' code
        uses ``"none"``).
    gh_order : int, default=20
        Gauss–Hermite nodes of the classification expectation.
    jitter : float, default=1e-6
        Relative jitter added to ``K_uu``.
    random_state : int, RandomState instance or None, default=None
        Seeds initialisation, minibatches, samples and test-time inference.
    n_jobs : int or None, default=None
        Threads for numba kernels and BLAS.
    verbose : int, default=0
        > 0: progress bar or lines (as DeepGP); -1 also silences the first-compile notice.
    callback : callable or None, default=None
        ``callback(estimator, info)`` after every optimiser iteration of ``fit`` (``info``:
        ``iteration``, ``stage``, ``bound`` (higher is better), ``elapsed``, at held-out checks
        ``validation_score``); returning ``True`` stops that optimisation as converged.
    warm_start : bool, default=False
        Start from the previous fit's parameters and normalisation when the data, classes and
        model have the same shape (else afresh); ``n_iter_`` and ``elbo_history_`` accumulate.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    latent_mean_ : ndarray of shape (n_samples, n_components)
        Means ``μ_i`` of the training rows (encoder output when amortised; held-out rows of
        early stopping inferred with the final model).
    latent_variance_ : ndarray of shape (n_samples, n_components)
        Variances ``σ_i²``.
    kernel_reg_, kernel_cls_ : Kernel
        Fitted kernels of the two paths.
    inducing_inputs_reg_, inducing_inputs_cls_ : ndarray of shape (M, n_components)
        Inducing inputs.
    q_u_reg_, q_u_cls_ : tuple (q_mu, q_sqrt)
        Whitened variational parameters (``(M, D)``/``(D, M, M)`` and ``(M, K)``/``(K, M, M)``).
    noise_variance_ : ndarray of shape (n_features,)
        Per-column noise variances (in the scaled data units).
    relevance_ : ndarray of shape (2, n_components)
        Kernel relevance (``1/ℓ_q`` for RBF) of the regression (row 0) and classification (row 1)
        paths.
    ard_weights_reg_, ard_weights_cls_ : ndarray of shape (n_components,)
        ``α_q = 1/ℓ_q²``, the ARD weights of Ziaei et al. (2024, §2.2; plotted in Fig. 3)
        (``relevance_ ** 2``).
    elbo_history_ : ndarray
        Per-step estimate of ``L̂/N`` (Adam) or ``L/N`` after each L-BFGS iteration.
    elbo_ : float
        Last value of ``elbo_history_``.
    n_iter_ : int
        Optimiser iterations.
    validation_scores_ : ndarray or None
        Held-out mean log label probability at each check (``early_stopping``), else ``None``.
    expectation_ : str
        The expectation used.
    X_mean_, X_scale_ : ndarray of shape (n_features,)
        Normalisation of the data, ``(X - X_mean_) / X_scale_``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    References
    ----------
    Ziaei, Nazari, Eden, Widge, Yousefi, "A Bayesian Gaussian process-based latent
    discriminative generative decoder (LDGD) model for high-dimensional data",
    arXiv:2401.16497.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn_lvgp import LDGD
    >>> X, y = load_iris(return_X_y=True)
    >>> model = LDGD(n_components=2, n_inducing=8, expectation="unscented", max_iter=100,
    ...              transform_max_iter=50, random_state=0).fit(X, y)
    >>> model.predict_proba(X[:2]).shape
    (2, 3)
    """

    def __init__(self, n_components=7, n_inducing=10, kernel=None, elbo_weighting="paper",
                 reg_weight=1.0, cls_weight=1.0, expectation="monte_carlo", optimizer="auto",
                 amortized=False, encoder_hidden=(50, 20), batch_size=100, learning_rate=0.01,
                 max_iter=5000, tol=1e-4, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=5, transform_max_iter=500, x_init="pca",
                 transform_init="nearest", proba="integrated", normalize_X="standardize",
                 gh_order=20, jitter=1e-6, random_state=None, n_jobs=None, verbose=0,
                 callback=None, warm_start=False):
        self.n_components = n_components
        self.n_inducing = n_inducing
        self.kernel = kernel
        self.elbo_weighting = elbo_weighting
        self.reg_weight = reg_weight
        self.cls_weight = cls_weight
        self.expectation = expectation
        self.optimizer = optimizer
        self.amortized = amortized
        self.encoder_hidden = encoder_hidden
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.tol = tol
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.transform_max_iter = transform_max_iter
        self.x_init = x_init
        self.transform_init = transform_init
        self.proba = proba
        self.normalize_X = normalize_X
        self.gh_order = gh_order
        self.jitter = jitter
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.warm_start = warm_start

    # ------------------------------------------------------------------------- validation
    def _validate_fit_data(self, X, y):
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             "is None.")
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, y_idx = check_class_labels(y, type(self).__name__)
        return X, y_idx

    def _check_params(self, X, y):
        check_int("n_components", self.n_components, min_value=1)
        path_settings(self.n_inducing, self.kernel, self.n_components, X.shape[0])
        check_option("elbo_weighting", self.elbo_weighting, tuple(PRESETS))
        check_float("reg_weight", self.reg_weight, min_value=0.0, exclusive_min=True)
        check_float("cls_weight", self.cls_weight, min_value=0.0, exclusive_min=True)
        check_option("expectation", self.expectation, _EXPECTATIONS)
        check_option("optimizer", self.optimizer, ("auto", "adam", "lbfgs"))
        if self.optimizer == "lbfgs" and self.expectation == "monte_carlo":
            raise ValueError("optimizer='lbfgs' needs a deterministic objective: use "
                             "expectation='unscented' (or optimizer='adam').")
        check_bool("amortized", self.amortized)
        check_layer_widths("encoder_hidden", self.encoder_hidden)
        check_int("batch_size", self.batch_size, min_value=1)
        check_float("learning_rate", self.learning_rate, min_value=0.0, exclusive_min=True)
        check_int("max_iter", self.max_iter, min_value=1)
        check_float("tol", self.tol, 0.0, allow_none=True)
        self._check_early_stopping(X.shape[0])
        if self.early_stopping and self.optimizer == "lbfgs":
            raise ValueError("early_stopping applies to the Adam path (optimizer='adam' or "
                             "'auto'); got optimizer='lbfgs'.")
        check_int("transform_max_iter", self.transform_max_iter, min_value=0)
        check_option("x_init", self.x_init, ("pca", "random"))
        check_option("transform_init", self.transform_init, ("nearest", "random"))
        check_option("proba", self.proba, _PROBA)
        check_option("normalize_X", self.normalize_X, NORMALIZE_OPTIONS)
        check_int("gh_order", self.gh_order, min_value=2)
        check_float("jitter", self.jitter, min_value=0.0)
        check_bool("warm_start", self.warm_start)

    # -------------------------------------------------------------------------------- fit
    def _scale(self, X):
        return (X - self.X_mean_) / self.X_scale_

    def _start(self, X):
        """Whether this fit continues the previous one (``warm_start`` with the same data
        shape, classes and structure); a fresh fit sets the column normalisation."""
        continuing = self._continues_fit(
            (X.shape, tuple(self.classes_), int(self.n_components), repr(self.n_inducing),
             repr(self.kernel), self.elbo_weighting, bool(self.amortized),
             tuple(self.encoder_hidden), self.normalize_X, float(self.jitter),
             int(self.gh_order), bool(self.early_stopping), float(self.validation_fraction)))
        if not continuing:
            moments = normalization(X, self.normalize_X)
            if is_dask_collection(X):
                moments = (np.asarray(a) for a in _dask()[0].compute(*moments))
            self.X_mean_, self.X_scale_ = moments
        return continuing

    def _training_problem(self, Yr, Yc, random_state, rows=None):
        """The training problem of scaled rows ``Yr`` and one-hot labels ``Yc`` (or of the
        row source ``rows`` of both) with its kernels initialised and preset applied, and
        its flat starting point."""
        Q = self.n_components
        N, D = Yr.shape if rows is None else rows.shapes["Yr"]
        K = Yc.shape[1] if rows is None else rows.shapes["Yc"][1]
        M_r, M_c, k_r, k_c = path_settings(self.n_inducing, self.kernel, Q, N)
        k_r, k_c = k_r.initialize(Q, random_state), k_c.initialize(Q, random_state)
        factors = ((float(self.reg_weight), float(self.cls_weight))
                   + tuple(PRESETS[self.elbo_weighting](D, K)))
        shapes = encoder_shapes(D, tuple(self.encoder_hidden), Q) if self.amortized else None
        prob = TrainingProblem(Yr, Yc, k_r, k_c, M_r, M_c, Q, factors, shapes, self.jitter,
                               self.gh_order, rows=rows)
        return prob, prob.initial_point(self.x_init, random_state)

    def _solve(self, prob, x0, continuing, random_state, validation=None):
        """Optimise from ``x0`` (or the previous fit's parameters when ``continuing``):
        ``optimizer="auto"`` is Adam for a sampled objective, an amortised q(X) or early
        stopping, else L-BFGS-B. Records the history and the test-time seed; returns ``x``."""
        stochastic = self.expectation == "monte_carlo"
        # amortised + L-BFGS tends to posterior collapse (q(x) = p(x)) in its first steps
        optimizer = self.optimizer if self.optimizer != "auto" else (
            "adam" if stochastic or self.amortized or self.early_stopping else "lbfgs")
        adam = {} if validation is None else {
            "validation": validation, "n_iter_no_change": self.n_iter_no_change,
            "tol": 1e-4 if self.tol is None else self.tol}
        noise_rs = check_random_state(random_state.randint(np.iinfo(np.int32).max))
        full, minibatch = prob.objectives(stochastic, noise_rs)
        x, history, n_iter, self.validation_scores_ = self._optimise(
            optimizer, self._x_flat if continuing else x0, prob.bounds(), full=full,
            minibatch=minibatch, n_data=prob.N, batch_size=min(self.batch_size, prob.N),
            random_state=random_state, **adam)
        self._record_iterations(n_iter, history, continuing)
        self._x_flat = x
        self._transform_seed = int(random_state.randint(np.iinfo(np.int32).max))
        return x

    def _commit(self, prob, x, y, decode=True):
        """The fitted attributes of the flat parameters ``x`` fitted on integer labels ``y``.

        ``decode=False`` (a fit on Dask) keeps no decoded training rows (``N × D``): the
        start of ``transform`` then decodes the training latents block by block.
        """
        p = prob.unpack(x)
        glob = prob.globals_(p)
        self.kernel_reg_, self.kernel_cls_ = glob.kernel_r.clone(), glob.kernel_c.clone()
        self.inducing_inputs_reg_, self.inducing_inputs_cls_ = glob.Z_r, glob.Z_c
        self.q_u_reg_, self.q_u_cls_ = (glob.qmu_r, glob.qsqrt_r), (glob.qmu_c, glob.qsqrt_c)
        self.noise_variance_ = glob.noise
        mu, sigma = prob.latents(p)
        self.latent_mean_, self.latent_variance_ = mu, sigma ** 2
        self._encoder = prob.encoder_weights(p) if self.amortized else None
        self.relevance_ = np.vstack([k.relevance(self.n_components)
                                     for k in (self.kernel_reg_, self.kernel_cls_)])
        self.ard_weights_reg_, self.ard_weights_cls_ = (r ** 2 for r in self.relevance_)
        self._factors = prob.factors
        self._rec_mean = self._rec_var = None
        if decode:
            self._rec_mean, self._rec_var = self._posterior().decode(mu)
        self._y_train = y

    def _finish(self):
        """``elbo_``, ``expectation_``, and a warning when every classification length scale
        is over 1000x the latent means' spread."""
        self.elbo_ = float(self.elbo_history_[-1]) if self.elbo_history_.size else np.nan
        self.expectation_ = self.expectation
        spread = float(np.mean(np.std(self.latent_mean_, axis=0)))
        if np.all(self.relevance_[1] * max(spread, 1e-12) < 1e-3):
            warn(f"{type(self).__name__}: the classification path collapsed to a flat function "
                 "(every length scale is over 1000x the spread of the latent means); the "
                 "classifier predicts the same probabilities everywhere. Seen with "
                 "optimizer='lbfgs' from x_init='random': use x_init='pca', optimizer='adam' "
                 "or more iterations.", ConvergenceWarning)

    def _fit(self, X, y, random_state):
        continuing = self._start(X)
        Yr, Yc = self._scale(X), np.eye(self.classes_.size)[y]
        train, held_out = self._held_out_rows(X.shape[0], random_state)
        rows = slice(None) if train is None else train
        prob, x0 = self._training_problem(Yr[rows], Yc[rows], random_state)
        validation = None
        if train is not None:
            def log_likelihood(model):  # of the held-out labels, their q(x*) as in transform
                model._transform_seed = 0
                proba = model.predict_proba(X[held_out])[np.arange(held_out.size), y[held_out]]
                return np.mean(np.log(np.maximum(proba, 1e-300)))

            validation = self._held_out_scorer(
                lambda model, flat: model._commit(prob, flat, y[train]), log_likelihood)
        x = self._solve(prob, x0, continuing, random_state, validation)
        self._commit(prob, x, y[rows])
        if train is not None:
            def infer():
                mu, sigma = self._infer_latents(Yr[held_out])
                return mu, sigma ** 2

            self._fill_held_out_latents(train, held_out, infer)
            self._y_train = y
            self._rec_mean, self._rec_var = self._posterior().decode(self.latent_mean_)
        self._finish()
        return self

    def _fit_dask(self, X, y, random_state):
        """:meth:`fit` on dask collections: the rows stay partitioned (q(X) on the driver, so
        the in-memory fit's draws in the same order); the labels are gathered."""
        name = type(self).__name__
        if y is None:
            raise ValueError(f"{name} requires y to be passed, but the target y is None.")
        rows = DaskRows({"X": X})
        X_d = rows.arrays["X"]
        labels = np.asarray(y.compute() if is_dask_collection(y) else y)
        if labels.shape[0] != rows.n_rows:
            raise ValueError(f"y has {labels.shape[0]} rows but X has {rows.n_rows}.")
        self._set_dask_features(rows)
        self.classes_, y_idx = check_class_labels(labels, name)
        self._check_params(X_d, y_idx)
        for option, why in (("amortized", "the encoder reads each batch's rows on the driver"),
                            ("early_stopping", "the held-out rows are scored on the driver")):
            if getattr(self, option):
                raise ValueError(f"{name} on dask input does not support {option}=True ({why}); "
                                 "fit on numpy arrays for this option.")
        continuing = self._start(X_d)
        data = DaskRows({"Yr": self._scale(X_d), "Yc": np.eye(self.classes_.size)[y_idx]})
        prob, x0 = self._training_problem(None, None, random_state, rows=data)
        x = self._solve(prob, x0, continuing, random_state)
        self._commit(prob, x, y_idx, decode=False)
        self._finish()
        return self

    # ---------------------------------------------------------------------- the posterior
    def _posterior(self):
        """The fitted model as an :class:`~sklearn_lvgp.bounds._ldgd_posterior.LDGDPosterior`."""
        return LDGDPosterior(Globals(self.kernel_reg_, self.inducing_inputs_reg_, *self.q_u_reg_,
                                     self.noise_variance_, self.kernel_cls_,
                                     self.inducing_inputs_cls_, *self.q_u_cls_),
                             self.jitter, self._factors)

    def _infer_latents(self, Yr):
        """Test-time ``(μ*, σ*)`` of scaled rows (Ziaei et al. 2024, §2.3.9): Adam on the
        regression path's bound with the model fixed, from the best-explaining training
        latent or a per-row random start; the encoder's output for Fast LDGD (§2.3.10)."""
        if self.amortized:
            return encoder_forward(self._encoder, Yr)[:2]
        posterior = self._posterior()
        decoded = None if self._rec_mean is None else (self._rec_mean, self._rec_var)
        mu0, sigma0 = posterior.inference_start(Yr, self.latent_mean_, self.latent_variance_,
                                                self.transform_init, self._transform_seed, decoded)
        if self.transform_max_iter == 0 or Yr.shape[0] == 0:
            return mu0, sigma0
        prob = posterior.inference_problem(Yr)
        rs = check_random_state(self._transform_seed)
        res = run_adam(prob.objective(self.expectation == "monte_carlo", rs),
                       prob.start(mu0, sigma0), n_data=Yr.shape[0], batch_size=Yr.shape[0],
                       max_iter=self.transform_max_iter, learning_rate=self.learning_rate,
                       random_state=rs, verbose=self.verbose,
                       name=f"{type(self).__name__}.transform")
        return prob.latents(res.x)

    def _latent_moments(self, X):
        """``transform``: q(x*) of every row (training rows too) from the regression path alone
        (labels are unknown); Fast LDGD's encoder gives it directly."""
        return self._latents(X)

    def _latents(self, X):
        check_is_fitted(self)
        Xs = self._scale(validate_data(self, X, dtype=np.float64, reset=False))
        check_data_scale("X (standardised with the training statistics)", Xs, spread=False)
        with threads(self.n_jobs):
            return self._infer_latents(Xs)

    # ---------------------------------------------------------------------------- public
    def predict_f(self, X, return_var=False):
        """Classification-GP marginals ``μ_k``, ``v_k`` at the inferred ``μ*``.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Rows in data space.
        return_var : bool, default=False
            Also return the variances.

        Returns
        -------
        mean : ndarray of shape (n, n_classes)
            Marginal means of the class GPs.
        var : ndarray of shape (n, n_classes)
            Marginal variances; only if ``return_var``.
        """
        if is_dask_collection(X):
            return self._on_partitions(self.predict_f, X, self.classes_.size,
                                   2 if return_var else 1, return_var=return_var)
        mu, _ = self._latents(X)
        with threads(self.n_jobs):
            m, v = self._posterior().marginals(mu, "cls")
        return (m, v) if return_var else m

    def predict_proba(self, X):
        """Class probabilities, rows normalised to sum to one.

        ``proba="plugin"``: ``Φ(μ_k(μ*))``; ``"marginal"``: ``Φ(μ_k/√(1+v_k))`` at ``μ*``;
        ``"integrated"``: that probability averaged over the sigma points of ``q(x*)``.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Rows in data space.

        Returns
        -------
        proba : ndarray of shape (n, n_classes)
            Columns follow ``classes_`` (a lazy dask array for a dask ``X``, computed
            partition by partition).
        """
        if is_dask_collection(X):
            return self._on_partitions(self.predict_proba, X, self.classes_.size)
        mu, sigma = self._latents(X)
        with threads(self.n_jobs):
            return self._posterior().predict_proba(mu, sigma, self.proba)

    def predict(self, X):
        """Most probable class of each row.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Rows in data space.

        Returns
        -------
        y : ndarray of shape (n,)
            Labels from ``classes_`` (a lazy dask array for a dask ``X``).
        """
        proba = self.predict_proba(X)
        if is_dask_collection(proba):
            return proba.map_blocks(_labels, self.classes_, drop_axis=1,
                                    dtype=self.classes_.dtype)
        return _labels(proba, self.classes_)

    def inverse_transform(self, X, return_std=False):
        """Reconstruct data rows from latent points: regression-path predictive mean.

        Parameters
        ----------
        X : array-like of shape (n, n_components)
            Latent points.
        return_std : bool, default=False
            Also return the predictive standard deviation ``√(v_d + σ_d²)``.

        Returns
        -------
        mean : ndarray of shape (n, n_features)
            Decoded rows (predictive mean of the regression path).
        std : ndarray of shape (n, n_features)
            Predictive standard deviation; only if ``return_std``.
        """
        check_is_fitted(self)
        H = check_latent_points("X", X, self.n_components)
        if H.ndim != 2 or H.shape[1] != self.n_components:
            raise ValueError(f"X must be latent points of shape (n, {self.n_components}), got "
                             f"{H.shape}.")
        with threads(self.n_jobs):
            m, v = self._posterior().decode(H)
        mean = m * self.X_scale_ + self.X_mean_
        return (mean, np.sqrt(v) * self.X_scale_) if return_std else mean

    def sample(self, y_class, n_samples=1, random_state=None, add_noise=False):
        """Generate data rows for a label (as in Ziaei et al. 2024, §3.2.2 and Fig. 5).

        Latent points are drawn from the Gaussian fitted to the training ``μ_i`` of the class
        and decoded with the regression path's predictive mean.

        Parameters
        ----------
        y_class : label
            One of ``classes_``.
        n_samples : int, default=1
            Number of rows.
        random_state : int, RandomState instance or None, default=None
            Source of the latent draws.
        add_noise : bool, default=False
            Add predictive noise ``N(0, v_d + σ_d²)`` to the decoded means.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
            Generated rows.
        latent : ndarray of shape (n_samples, n_components)
            Their latent points.
        """
        check_is_fitted(self)
        hits = np.flatnonzero(self.classes_ == y_class)
        if hits.size == 0:
            raise ValueError(f"y_class={y_class!r} is not one of classes_ {list(self.classes_)}.")
        n_samples = check_int("n_samples", n_samples, min_value=1)
        rs = check_random_state(random_state)
        mu = self.latent_mean_[self._y_train == hits[0]]
        cov = np.atleast_2d(np.cov(mu, rowvar=False)) + 1e-6 * np.eye(self.n_components)
        Z = rs.multivariate_normal(mu.mean(axis=0), cov, size=n_samples)
        if not add_noise:
            return self.inverse_transform(Z), Z
        mean, std = self.inverse_transform(Z, return_std=True)
        return reparameterise(mean, std, rs.standard_normal(mean.shape)), Z

