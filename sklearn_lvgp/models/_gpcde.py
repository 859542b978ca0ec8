"""GPCDE: Gaussian-process conditional density estimation with latent covariates (Salimbeni
2020, ch. 4). The model and its bound are :class:`~sklearn_lvgp.bounds._gpcde.CDEModel`, the
predictive mixture :class:`~sklearn_lvgp.bounds._gpcde_predictive.CDEPredictive`; the rows an
:class:`~sklearn_lvgp.engine.InMemoryRows` or, on dask input, a
:class:`~sklearn_lvgp.engine._dask.DaskRows`; the optimiser Adam with natural-gradient steps
(:func:`~sklearn_lvgp.optim._adam.run_adam`) or L-BFGS-B."""

from functools import partial

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils import check_random_state

from .._core.scaling import column_moments
from .._core.validation import (
    check_bool,
    check_float,
    check_int,
    check_layer_widths,
    check_n_inducing,
    check_natgrad_gamma,
    check_option,
)
from ..base import _BaseLVGPRegressor
from ..bounds._gpcde import CDEModel
from ..bounds._gpcde_predictive import CDEPredictive
from ..engine._dask import DaskRows, _dask, is_dask_collection
from ..engine._rows import InMemoryRows
from ..kernels import RBF
from ..optim._adam import AdamState
from ..optim._collapsed_fit import fit_collapsed_rows

__all__ = ["GPCDE"]

#: Full-batch Adam steps before an ``optimizer="auto"`` L-BFGS-B fit runs again.
WARM_UP_STEPS = 200
#: Rows gathered to the driver for the initial k-means inducing inputs and principal directions
#: of a fit on dask input.
INIT_ROWS = 20_000


class GPCDE(RegressorMixin, _BaseLVGPRegressor):
    """Gaussian-process conditional density estimation with a latent covariate.

    A sparse variational GP whose input is the observed condition ``x`` (optionally projected by
    a Bayesian linear map ``A``) concatenated with an unobserved latent covariate
    ``w_n ~ N(0, I)``; ``y = P^T f([h, w]) + noise``. Integrating ``w`` out makes ``p(y | x)``
    skewed, heteroscedastic or multi-modal where the data need it (Salimbeni 2020, ch. 4).

    Parameters
    ----------
    latent_dim : int, default=1
        Dimension ``D_w`` of the latent covariate; ``0`` gives the sparse variational GP (SVGP).
    q_w : {"quadrature", "gaussian", "amortized"}, default="quadrature"
        Treatment of ``w``. ``"quadrature"``: the bound
        ``sum_n log int exp(L_n(w)) N(w|0, I) dw`` evaluated with Gauss–Hermite nodes, equal to
        the ELBO with the optimal free-form ``q(w_n)`` (no local parameters, deterministic;
        ``latent_dim <= 2``). ``"gaussian"``: a free ``q(w_n) = N(a_n, diag b_n^2)`` per training
        row. ``"amortized"``: ``(a_n, b_n)`` from a recognition MLP on ``[x_n, y_n]``.
    gh_order : int, default=20
        Gauss–Hermite nodes per latent dimension (``gh_order ** latent_dim`` evaluation points
        per row) in the quadrature bound and in the predictive density when
        ``latent_dim <= 2`` without projection. The paper's experiments use 100; on the
        bimodal benchmark 20 nodes reached the same held-out density or a higher one on each
        of three seeds, at a sixth of the cost (``doc/developers.rst``, "Defaults").
    expectation : {"monte_carlo", "unscented"}, default="monte_carlo"
        Expectation under a Gaussian ``q(w_n)``: reparameterised samples (an unbiased bound
        estimate) or the ``2 D_w`` unscented sigma points (deterministic, an approximation, not a
        bound).
    n_samples : int, default=1
        Monte Carlo samples of ``w`` per row and step.
    input_projection_dim : int or None, default=None
        If set, inputs are projected by ``A`` (``n_features x input_projection_dim``) with a
        factorised Gaussian posterior and ``N(0, 1)`` prior (local reparameterisation).
    output_mixing_dim : int or None, default=None
        If set, ``L`` latent GPs are mixed into the targets by a point-estimated
        ``P`` (``L x n_targets``, PCA initialisation); ``None`` is ``P = I``.
    kernel : Kernel or None, default=None
        Covariance on ``[h, w]``; ``None`` is an ARD :class:`~sklearn_lvgp.kernels.RBF` with
        length scales ``sqrt(D_h + D_w)`` and unit variance.
    n_inducing : int, default=100
        Inducing inputs (k-means on the inputs, latent columns ``N(0, 1)``). It may exceed the
        number of samples: the missing input columns start at standard-normal draws.
    whiten : bool, default=True
        Whitened ``q(u)``.
    noise_variance_init : float, default=0.01
        Initial noise variance (standardised units when ``normalize_y``).
    natgrad_gamma : float, tuple (gamma0, gamma1, K) or None, default=0.1
        Natural-gradient step size for ``q(u)`` (alternating with the Adam steps, which then
        leave ``q(u)`` alone); a tuple ``(gamma0, gamma1, K)`` is a log-linear warm-up from
        ``gamma0`` to ``gamma1`` over ``K`` steps. Steps must be in (0, 1] and ``K >= 1``.
        ``None``: Adam on ``q(u)`` too.
        With ``optimizer="lbfgs"`` only one ``gamma = 1`` step is taken, to start from the
        optimal ``q(u)``.
    optimizer : {"auto", "adam", "lbfgs"}, default="auto"
        ``"lbfgs"`` (full batch) needs a deterministic objective: ``q_w="quadrature"``, or a
        Gaussian ``q(w)`` with ``expectation="unscented"``, and no input projection.
        ``"auto"`` is L-BFGS-B when the objective is deterministic, the data fit in one batch
        (``batch_size``) and ``early_stopping`` is off, and Adam (with ``natgrad_gamma``)
        otherwise: on ``load_diabetes`` the default model reaches the bound of 2000 Adam steps
        in a fraction of the time (user guide). An ``"auto"`` L-BFGS-B fit from the
        ``"prior"`` start that ends at the noise-only model (signal variance at its lower
        bound) is run again after 200 full-batch Adam steps, within what is left of
        ``max_iter``, and the higher bound kept (``n_iter_`` counts both runs).
    learning_rate : float, default=0.01
        Adam step size.
    learning_rate_schedule : {"constant", "staircase", "cosine"}, default="constant"
        ``"staircase"`` multiplies the rate (and ``natgrad_gamma``) by 0.98 every 1000 steps.
        ``"cosine"`` anneals both along half a cosine to 1 % of their initial values at step
        ``max_iter``.
    batch_size : int or None, default=512
        Rows per step (full batch when ``None`` or at least the number of rows).
    max_iter : int, default=2000
        Most optimiser iterations.
    tol : float or None, default=1e-4
        Adam stops when the mean bound over the last 100 steps improves by less than ``tol``
        (relative to its magnitude) on the 100 steps before, i.e. when the bound stops
        improving; L-BFGS-B when the bound has improved by less than ``tol`` (relative) over
        its last 100 iterations, or by scipy's own tests. ``None`` runs all ``max_iter`` Adam
        steps (the fixed budgets of the paper's experiments) and leaves L-BFGS-B to scipy's
        tests. Either optimiser emits ``ConvergenceWarning`` when ``max_iter`` ends the fit
        first.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the rows and stop Adam when their mean log
        predictive density has not improved (by more than ``tol``, relative) for
        ``n_iter_no_change`` checks (every 100 steps). The fit keeps the state with the best
        held-out score, also when ``max_iter`` ends it (as scikit-learn's ``MLPRegressor``
        does); with ``init="auto"`` or ``"gp"`` the switched-off fit still replaces it when
        its bound is higher. Adam only.
    validation_fraction : float, default=0.1
        Held-out fraction for early stopping.
    n_iter_no_change : int, default=5
        Patience of early stopping, in checks.
    encoder_hidden : tuple of int, default=(20, 20)
        Hidden widths of the tanh recognition network (``q_w="amortized"``).
    n_predict_samples : int, default=1000
        Prior draws of ``w`` (and of ``A``) in the predictive density when quadrature is not
        used for it (``latent_dim > 2`` or with a projection).
    normalize_y : bool, default=True
        Standardise targets with training statistics (results are in original units).
    init : {"auto", "gp", "prior"}, default="auto"
        ``"prior"``: the paper's initialisation (length scales ``sqrt(D_h + D_w)``, latent
        inducing columns ``N(0, 1)``, ``q(u)`` from one ``gamma = 1`` natural-gradient step).
        ``"gp"`` (a project choice): first fit the model with the latent dimensions switched
        off — the sparse GP on ``x``, fitted as :class:`~sklearn_lvgp.SparseGPRegressor` fits
        it (the collapsed bound, from this model's start and from that estimator's, the higher
        bound kept, with that estimator's iteration budget), with ``q(u)`` then at its
        optimum — then start the full model from it (latent length scales at their ``"prior"``
        value, latent ``Z`` columns ``N(0, 1)``). ``"auto"`` starts from ``"prior"``, and fits
        the switched-off model too. With ``"gp"`` and ``"auto"`` the switched-off solution
        (latent length scales at their upper bound, ``q(w)`` the prior) is kept instead if its
        bound is higher, so the fitted bound is never below that sparse GP's (``latent_used_``
        says which). From the ``"gp"`` start the latent often stays unused on multi-modal data
        (the sparse GP optimum is a saddle the latent does not leave), hence ``"auto"``'s prior
        start. The comparison needs a stationary ARD kernel and no projection or mixing;
        otherwise ``"auto"`` is ``"prior"``.
    jitter : float, default=1e-6
        Relative jitter on ``K_uu`` (escalated with a warning if needed).
    random_state : int, RandomState instance or None, default=None
        Seeds initialisation, minibatches, sampling and the predictive draws.
    n_jobs : int, default=None
        Threads for the jitted kernel loops.
    verbose : int, default=0
        > 0: progress bar or lines (as DeepGP); -1 also silences the first-compile notice.
    callback : callable or None, default=None
        ``callback(estimator, info)`` after every optimiser iteration of ``fit``; ``info`` is a
        dict with ``iteration``, ``stage`` (``"lbfgs"`` or ``"adam"``), ``bound`` (the
        ELBO or its minibatch estimate; higher is better), ``elapsed`` and, at held-out checks,
        ``validation_score``. Returning ``True`` stops that optimisation as converged.
    warm_start : bool, default=False
        Continue from the previous fit's parameters, Adam state and standardisation when the
        data have the same shape and the model the same structure (otherwise fit afresh);
        ``init`` is not applied again, and ``n_iter_``/``elbo_history_`` accumulate.

    Attributes
    ----------
    kernel_ : Kernel
        Fitted kernel on ``[h, w]``.
    inducing_inputs_ : ndarray of shape (n_inducing, D_h + latent_dim)
        Inducing inputs.
    q_mu_ : ndarray of shape (n_inducing, L)
    q_sqrt_ : ndarray of shape (L, n_inducing, n_inducing)
        ``q(u)`` (whitened when ``whiten``).
    noise_variance_ : float
        Likelihood variance (standardised units).
    P_ : ndarray of shape (L, n_targets) or None
        Output mixing.
    A_mean_, A_std_ : ndarray of shape (n_features, input_projection_dim) or None
        ``q(A)``.
    elbo_ : float
        Final bound (exact for deterministic objectives, else the mean of the last 100 minibatch
        estimates; an approximation with ``expectation="unscented"``).
    elbo_history_ : ndarray
        Bound estimate per iteration (of the full model; the warm start's are not included).
    gp_elbo_ : float or None
        Bound of the switched-off model (``init="gp"``, and ``"auto"`` where it applies), else
        ``None``.
    latent_used_ : bool
        ``False`` when the switched-off solution was kept (its bound was higher).
    n_iter_ : int
        Iterations run.
    optimizer_ : {"adam", "lbfgs"}
        The optimiser used (``optimizer="auto"`` resolved).
    validation_scores_ : ndarray or None
        Mean held-out log predictive density (standardised targets) at each check with
        ``early_stopping=True``; ``None`` without early stopping.
    X_mean_, X_scale_, y_mean_, y_scale_ : ndarray
        Standardisation statistics.
    n_features_in_ : int

    Notes
    -----
    :meth:`score` is R², as for every scikit-learn regressor. To select models by density
    (what a conditional density model is for), pass
    ``scoring="log_predictive_density"`` to ``GridSearchCV``; it calls
    :meth:`predict_log_density`.

    ``fit`` also takes a dask array or DataFrame (``pip install "sklearn_lvgp[dask]"``): the
    rows stay partitioned where they live, and every evaluation of the bound, natural-gradient
    step and (``init="gp"`` or ``"auto"``) evaluation of the switched-off collapsed bound runs
    as one task per partition holding rows of the batch, returning global-sized partial sums
    (Gal, van der Wilk & Rasmussen 2014). The minibatches and Monte Carlo draws are made on the
    driver as in memory and sent with the tasks, as are the free ``q(w_n)`` of the batch
    (``q_w="gaussian"`` keeps them in the parameters on the driver). The standardisation comes
    from dask's reductions and the initialisation (k-means, principal directions) from at most
    20 000 gathered rows (all rows of smaller data, so the fit then equals the in-memory one
    up to rounding); ``early_stopping`` is not available there. :meth:`predict` of a dask
    ``X`` returns dask arrays.

    References
    ----------
    Salimbeni, H. (2020). Deep Gaussian processes: advances in models and inference. PhD thesis,
    Imperial College London, ch. 4.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp import GPCDE
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-2, 2, (80, 1)); y = np.where(rng.rand(80) < .5, 1, -1) * X[:, 0]
    >>> model = GPCDE(n_inducing=10, gh_order=20, max_iter=50, random_state=0).fit(X, y)
    >>> model.predict_quantiles(X[:2], [0.1, 0.9]).shape
    (2, 2)
    """

    def __init__(self, latent_dim=1, q_w="quadrature", gh_order=20,
                 expectation="monte_carlo", n_samples=1, input_projection_dim=None,
                 output_mixing_dim=None, kernel=None, n_inducing=100, whiten=True,
                 noise_variance_init=0.01, natgrad_gamma=0.1, optimizer="auto",
                 learning_rate=0.01, learning_rate_schedule="constant", batch_size=512,
                 max_iter=2000, tol=1e-4, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=5, encoder_hidden=(20, 20), n_predict_samples=1000,
                 normalize_y=True, init="auto", jitter=1e-6, random_state=None, n_jobs=None,
                 verbose=0, callback=None, warm_start=False):
        self.latent_dim = latent_dim
        self.q_w = q_w
        self.gh_order = gh_order
        self.expectation = expectation
        self.n_samples = n_samples
        self.input_projection_dim = input_projection_dim
        self.output_mixing_dim = output_mixing_dim
        self.kernel = kernel
        self.n_inducing = n_inducing
        self.whiten = whiten
        self.noise_variance_init = noise_variance_init
        self.natgrad_gamma = natgrad_gamma
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.learning_rate_schedule = learning_rate_schedule
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.encoder_hidden = encoder_hidden
        self.n_predict_samples = n_predict_samples
        self.normalize_y = normalize_y
        self.init = init
        self.jitter = jitter
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.warm_start = warm_start

    # ----------------------------------------------------------------------------- checks
    def _check_params(self, X, y):
        Dw = check_int("latent_dim", self.latent_dim, min_value=0)
        check_option("q_w", self.q_w, ("quadrature", "gaussian", "amortized"))
        H = check_int("gh_order", self.gh_order, min_value=1)
        if self.q_w == "quadrature" and Dw > 2:
            raise ValueError(
                f"q_w='quadrature' evaluates gh_order**latent_dim = {H}**{Dw} = {H ** Dw} "
                f"GP marginals per data point per step; it is limited to latent_dim <= 2. Use "
                f"q_w='amortized' or q_w='gaussian' for latent_dim={Dw}.")
        check_option("expectation", self.expectation, ("monte_carlo", "unscented"))
        check_int("n_samples", self.n_samples, min_value=1)
        check_int("input_projection_dim", self.input_projection_dim, min_value=1,
                  allow_none=True)
        check_int("output_mixing_dim", self.output_mixing_dim, min_value=1, allow_none=True)
        self._kernel, _ = self._kernel_and_noise(None)  # a WhiteKernel: merged, with a note
        check_int("n_inducing", self.n_inducing, min_value=1)
        check_bool("whiten", self.whiten)
        check_float("noise_variance_init", self.noise_variance_init, 0.0, exclusive_min=True)
        check_option("optimizer", self.optimizer, ("auto", "adam", "lbfgs"))
        check_natgrad_gamma(self.natgrad_gamma)
        check_float("learning_rate", self.learning_rate, 0.0, exclusive_min=True)
        check_option("learning_rate_schedule", self.learning_rate_schedule,
                     ("constant", "staircase", "cosine"))
        check_int("batch_size", self.batch_size, min_value=1, allow_none=True)
        check_int("max_iter", self.max_iter, min_value=1)
        check_float("tol", self.tol, 0.0, allow_none=True)
        check_bool("warm_start", self.warm_start)
        self._check_early_stopping(X.shape[0])
        if self.early_stopping and self.optimizer == "lbfgs":
            raise ValueError("early_stopping applies to optimizer='adam' (L-BFGS-B stops on its "
                             "own tests); got optimizer='lbfgs'.")
        check_layer_widths("encoder_hidden", self.encoder_hidden)
        check_int("n_predict_samples", self.n_predict_samples, min_value=1)
        check_bool("normalize_y", self.normalize_y)
        check_option("init", self.init, ("auto", "gp", "prior"))
        if self.init == "gp" and not self._can_switch_off():
            raise ValueError(
                "init='gp' switches the latent dimensions off through their length scales: it "
                "needs latent_dim >= 1, a stationary kernel with one length scale per input "
                "dimension (ARD) and non-fixed length-scale bounds, and no input_projection_dim "
                "or output_mixing_dim; use init='prior'.")
        check_float("jitter", self.jitter, 0.0)
        if self.optimizer == "lbfgs" and not self._deterministic():
            raise ValueError(
                "optimizer='lbfgs' needs a deterministic objective: q_w='quadrature', or "
                "q_w='gaussian'/'amortized' with expectation='unscented', and no "
                "input_projection_dim; use optimizer='adam' for sampled objectives.")
        check_n_inducing(self.n_inducing, X.shape[0], "GPCDE")  # after the data-free checks
        self._check_early_stopping(X.shape[0], self.n_inducing)  # again: rows for Z too

    def _deterministic(self):
        """Whether the bound is deterministic (no sampling: L-BFGS-B can optimise it)."""
        return self.input_projection_dim is None and (
            self.q_w == "quadrature" or int(self.latent_dim) == 0
            or self.expectation == "unscented")

    def _can_switch_off(self):
        return CDEModel.can_switch_off(self._kernel, int(self.latent_dim),
                                       self.input_projection_dim is not None,
                                       self.output_mixing_dim is not None)

    # ------------------------------------------------------------------------------- fit
    def _fit(self, X, y, random_state):
        Y = self._targets_2d(y)
        continuing = self._begin(X, Y, lambda *arrays: arrays)
        Xs, Ys, held_out = self._held_out((X - self.X_mean_) / self.X_scale_,
                                          (Y - self.y_mean_) / self.y_scale_, random_state)
        return self._run(InMemoryRows({"X": Xs, "y": Ys}, prefix="cde"), lambda: (Xs, Ys),
                         random_state, held_out, continuing)

    def _fit_dask(self, X, y, random_state):
        dask, _ = _dask()
        X, Y = self._dask_supervised_rows(X, y)
        if self.early_stopping:
            raise ValueError("GPCDE on dask input does not support early_stopping=True (its "
                             "held-out split and score run in memory); fit on numpy arrays or "
                             "set early_stopping=False.")
        continuing = self._begin(X, Y, dask.compute)
        rows = DaskRows({"X": (X - self.X_mean_) / self.X_scale_,
                         "y": (Y - self.y_mean_) / self.y_scale_})
        # all rows of smaller data: the fit then equals the in-memory one up to rounding
        init_rows = partial(rows.gather, INIT_ROWS, random_state)
        return self._run(rows, init_rows, random_state, None, continuing)

    def _begin(self, X, Y, compute):
        """Whether this fit continues the previous one (``warm_start``, the same data shape
        and structure); sets ``optimizer_`` and, in a fresh fit, the standardisation
        statistics (``compute``: of dask's lazy reductions)."""
        N = int(X.shape[0])
        continuing = self._continues_fit((
            N, int(X.shape[1]), int(Y.shape[1]), int(self.latent_dim), self.q_w,
            int(self.gh_order), self.expectation, int(self.n_samples),
            self.input_projection_dim, self.output_mixing_dim, repr(self.kernel),
            int(self.n_inducing), bool(self.whiten), tuple(int(h) for h in self.encoder_hidden),
            float(self.jitter), bool(self.early_stopping), float(self.validation_fraction)))
        # "auto": L-BFGS-B for a deterministic bound on one full batch without early stopping
        full_batch = self.batch_size is None or int(self.batch_size) >= N
        self.optimizer_ = self.optimizer if self.optimizer != "auto" else (
            "lbfgs" if self._deterministic() and full_batch and not self.early_stopping
            else "adam")
        if not continuing:
            self.X_mean_, self.X_scale_ = (np.asarray(a) for a in compute(*column_moments(X)))
            self.y_mean_, self.y_scale_ = (np.asarray(a)
                                           for a in compute(*self._target_moments(Y)))
        return continuing

    def _build(self, Xs, Ys, random_state, n_rows):
        """The model and its initial parameters, from the standardised rows ``Xs``, ``Ys``
        (all ``n_rows`` training rows, or a sample of them)."""
        Dh = Xs.shape[1] if self.input_projection_dim is None else int(self.input_projection_dim)
        L = Ys.shape[1] if self.output_mixing_dim is None else int(self.output_mixing_dim)
        D = Dh + int(self.latent_dim)
        kernel = (RBF(length_scale=np.full(D, np.sqrt(D)), variance=1.0) if self._kernel is None
                  else self._kernel.initialize(D, random_state))
        model = CDEModel(kernel, Xs.shape[1], self.input_projection_dim, int(self.latent_dim),
                         L, Ys.shape[1], int(self.n_inducing), self.output_mixing_dim is not None,
                         self.q_w, self.expectation, int(self.n_samples), int(self.gh_order),
                         n_rows, tuple(self.encoder_hidden), bool(self.whiten),
                         float(self.jitter))
        return model, model.initial_point(Xs, Ys, float(self.noise_variance_init),
                                          random_state, n_rows)

    def _run(self, rows, init_rows, rs, held_out, continuing):
        """The fit on the standardised ``rows`` (a fresh model from ``init_rows()``, or the
        previous fit's when ``continuing``); ``held_out``: the standardised ``(X, Y)`` of early
        stopping, or ``None``.

        With ``init="gp"`` (or ``"auto"`` where the latent can be switched off) the switched-off
        sparse GP is fitted first and kept if its bound is higher; ``"gp"`` starts from it.
        An ``optimizer="auto"`` L-BFGS-B fit that ends at the noise-only model runs again after
        ``WARM_UP_STEPS`` full-batch Adam steps, with what is left of ``max_iter``.
        """
        N = rows.n_rows
        if continuing:
            model, x0 = self._model, self._x
        else:
            model, x0 = self._build(*init_rows(), rs, N)
            self._state = AdamState(x0.size)
            self.gp_elbo_, self.latent_used_ = None, True
        self._model = model
        optimizer = self.optimizer_
        gp_start = self.init == "gp" and not continuing
        # "auto" starts from the prior but, as "gp", keeps the switched-off fit if it is better
        compare = not continuing and (
            gp_start or (self.init == "auto" and self._can_switch_off()))
        if compare:
            fit_sparse_gp = partial(fit_collapsed_rows, rows, jitter=model.jitter,
                                    verbose=self.verbose, name="GPCDE switched-off fit")
            x_gp, x_off, self.gp_elbo_ = model.switched_off_start(
                x0, rows, rs, fit_sparse_gp, self._kernel is not None)
            if gp_start:
                x0 = x_gp
        if optimizer == "lbfgs" and not gp_start and not continuing:
            x0 = model.natgrad_rows(x0, rows, None, 1.0, 1.0, rs)

        full, minibatch, natgrad = model.objectives(rows, rs)
        use_ngd = self.natgrad_gamma is not None
        adam_steps = {
            "schedule": self.learning_rate_schedule, "gamma": self.natgrad_gamma,
            "natgrad": natgrad if use_ngd else None, "frozen": model.q_mask() if use_ngd else None,
            "state": self._state, "horizon": self.max_iter}
        adam = {} if optimizer == "lbfgs" else adam_steps
        if held_out is not None:  # score: the held-out rows' mean log predictive density
            def score(x):
                return float(np.mean(CDEPredictive.from_prior(
                    model, x, self.gh_order, self.n_predict_samples, np.random.RandomState(0),
                    n_jobs=self.n_jobs).log_density(*held_out)))

            adam.update(validation=score, n_iter_no_change=self.n_iter_no_change,
                        tol=1e-4 if self.tol is None else self.tol)
        bs = N if self.batch_size is None else min(int(self.batch_size), N)
        self._x, history, n_iter, self.validation_scores_ = self._optimise(
            optimizer, x0, model.bounds(), full=full, minibatch=minibatch, n_data=N,
            batch_size=bs, random_state=rs, **adam)
        left = self.max_iter - n_iter - WARM_UP_STEPS
        if (optimizer == "lbfgs" and self.optimizer == "auto" and not continuing and not gp_start
                and left > 0 and model.noise_only(self._x)):
            # L-BFGS-B's first, long steps from the prior start can end in the noise-only
            # optimum (signal variance at its lower bound): once more, after full-batch Adam
            # steps, with the iterations max_iter has left
            x1, warm_history, _, _ = self._optimise(
                "adam", x0, model.bounds(), minibatch=minibatch, n_data=N, batch_size=N,
                random_state=rs, max_iter=WARM_UP_STEPS, stop_tol=None, **adam_steps)
            x1, history1, n_iter1, _ = self._optimise(
                "lbfgs", x1, model.bounds(), full=full, max_iter=left)
            n_iter += WARM_UP_STEPS + n_iter1
            if history1[-1] > history[-1]:
                self._x, history = x1, np.concatenate([warm_history, history1])
        self._record_iterations(n_iter, history, continuing)
        # L-BFGS-B: the bound at the end; Adam: the mean of the last 100 minibatch estimates
        self.elbo_ = float(np.mean(history[-(1 if optimizer == "lbfgs" else 100):]))
        if compare:
            final = self.elbo_ if model.deterministic else model.mean_bound(self._x, rows, rs)
            if self.gp_elbo_ > final:
                self._x, self.elbo_, self.latent_used_ = x_off, self.gp_elbo_, False
            else:
                self.elbo_ = final
        self._set_fitted(rs)
        return self

    def _set_fitted(self, rs):
        model = self._model
        p = model.unpack(self._x)
        self.kernel_, self.inducing_inputs_, self.q_mu_ = p["kernel"], p["Z"], p["q_mu"]
        self.q_sqrt_, self.noise_variance_, self.P_ = p["q_sqrt_full"], p["s2"], p["P_"]
        self.A_mean_, self.A_std_ = ((p["A_mu"], p["A_s"]) if model.projection
                                     else (None, None))
        # the predictive mixture over w (and A) under the prior p(w)
        pred = CDEPredictive.from_prior(model, self._x, self.gh_order, self.n_predict_samples,
                                        rs)
        self._nodes, self._logw, self._A_draws = pred.nodes, pred.logw, pred.A_draws

    # --------------------------------------------------------------------------- predict
    def _predictive(self):
        return CDEPredictive(self._model, self._x, self._nodes, self._logw, self._A_draws,
                             self.y_mean_, self.y_scale_, self.n_jobs)

    def predict(self, X, return_std=False, return_cov=False):
        """Mean (and standard deviation or covariance) of the predictive mixture ``p(y | x)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs. A dask array or DataFrame gives dask arrays, computed partition by
            partition (not with ``return_cov``).
        return_std : bool, default=False
            Also return the predictive standard deviation (law of total variance).
        return_cov : bool, default=False
            Also return the joint predictive covariance of the rows, per target: each row has
            its own latent covariate, so two rows covary through the GP alone
            (:mod:`sklearn_lvgp.variational._joint_mixing`). Not with ``input_projection_dim`` or
            ``output_mixing_dim``.

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
        if is_dask_collection(X):
            return self._predict_on_partitions(X, return_std, return_cov)
        Xs = self._standardised_inputs(X)
        predictive = self._predictive()
        mean, var = predictive.mean_variance(Xs)
        if not (return_std or return_cov):
            return self._target_shape(mean)
        if return_std:
            return self._target_shape(mean), self._target_shape(np.sqrt(var))
        if self.input_projection_dim is not None or self.output_mixing_dim is not None:
            raise ValueError("return_cov is available without input_projection_dim and "
                             "output_mixing_dim only (their posteriors couple the rows' "
                             "latent inputs); use sample_y for joint draws of one row.")
        cov = predictive.covariance(Xs, var)
        return self._target_shape(mean), (cov[:, :, 0] if self._y_ndim == 1 else cov)

    def predict_log_density(self, X, y):
        """Log predictive density ``log p(y_n | x_n)`` of each row, in original units.

        Gauss–Hermite integration over ``w`` (``gh_order`` nodes per dimension) when
        ``latent_dim <= 2`` without projection, otherwise ``n_predict_samples`` prior draws of
        ``w`` (and ``A``) fixed at fit time.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Targets.

        Returns
        -------
        log_density : ndarray of shape (n_samples,)
            Per-row log predictive density.
        """
        Xs = self._standardised_inputs(X)
        Y = self._check_targets(y, Xs.shape[0], self.y_mean_.size)
        return self._predictive().log_density(Xs, Y)

    def predict_density(self, X, y_grid):
        """Predictive density ``p(y | x)`` on a grid of target values (for plotting).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y_grid : array-like of shape (n_grid,) or (n_grid, n_targets)
            Target values (original units).

        Returns
        -------
        density : ndarray of shape (n_samples, n_grid)
            ``p(y_g | x_n)`` in original units.
        """
        Xs = self._standardised_inputs(X)
        G = np.asarray(y_grid, dtype=np.float64)
        G = G.reshape(-1, 1) if G.ndim == 1 else G
        if G.shape[1] != self.y_mean_.size or not np.all(np.isfinite(G)):
            raise ValueError(f"y_grid must be finite with {self.y_mean_.size} target column(s), "
                             f"got shape {np.shape(y_grid)}.")
        return np.exp(self._predictive().grid_log_density(Xs, G))

    def predict_quantiles(self, X, q):
        """Compute quantiles of each target's predictive marginal (a Gaussian mixture).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        q : float or array-like of shape (n_quantiles,)
            Probabilities, each strictly between 0 and 1.

        Returns
        -------
        quantiles : ndarray of shape (n_samples, n_quantiles) or \
(n_samples, n_targets, n_quantiles)
            Found by bisection on the mixture CDF (to 1e-10 of the target's scale).
        """
        qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
        if qs.ndim != 1 or qs.size == 0 or not np.all((qs > 0) & (qs < 1)):
            raise ValueError(f"quantiles must be strictly between 0 and 1, got {q!r}.")
        out = self._predictive().quantiles(self._standardised_inputs(X), qs)
        return out[:, 0, :] if self._y_ndim == 1 else out

    def sample_y(self, X, n_samples=1, random_state=0):
        """Draw targets from ``p(y | x)``: ``w ~ N(0, I)``, ``A ~ q(A)``, ``f ~ q(f)``.

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
        ys = self._predictive().sample(Xs, check_int("n_samples", n_samples, min_value=1),
                                       check_random_state(random_state))
        return ys[:, 0, :] if self._y_ndim == 1 else ys
