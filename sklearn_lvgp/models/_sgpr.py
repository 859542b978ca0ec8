"""SparseGPRegressor: Titsias' collapsed sparse GP regression with uncertain inputs.

The objective is the collapsed bound of :mod:`sklearn_lvgp.bounds._collapsed_global` with
deterministic inputs (Ψ1 = K_fu, Ψ2 = K_fuᵀ K_fu, ψ0 = Σ k(x_n, x_n); Titsias 2009), or, when
``fit`` receives ``X_var``, with the Ψ-statistics of q(x_n) = N(x_n, diag X_var_n) under the
configured expectation rule (the S ≠ 0 case of the Bayesian GPLVM bound, Titsias & Lawrence 2010,
as used for free simulation by de Souza et al. 2021, §4.2). Test inputs may be uncertain too:
``predict(X, X_var=...)`` returns the exact first two moments of the predictive (Girard et al.
2003).
"""


import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._core.init import select_inducing
from .._core.linalg import settled_jitter
from .._core.parallel import threads
from .._core.scaling import column_moments, column_scales, overflow_safe_scale
from .._core.validation import (
    check_bool,
    check_data_scale,
    check_finite_array,
    check_float,
    check_int,
    check_min_samples,
    check_n_inducing,
    check_option,
)
from ..base import _BaseLVGPRegressor
from ..bounds import CollapsedKernelBound
from ..bounds._collapsed_global import (
    chunked_predictive_moments,
    joint_predictive_moments,
    predictive_moments,
)
from ..engine._dask import DaskRows, _dask, is_dask_collection
from ..expectations import EXPECTATIONS, make_rule, psi_statistics
from ..kernels._stationary import default_rbf
from ..likelihoods._gaussian import gaussian_log_density
from ..optim._collapsed_fit import collapsed_bound_and_grads as sgpr_bound_and_grads
from ..optim._collapsed_fit import fit_collapsed
from ..optim._collapsed_fit import make_collapsed_bound as _make_bound

__all__ = ["SparseGPRegressor", "sgpr_bound_and_grads"]


def _check_X_var(X_var, shape):
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


def _in_units(kernel, unit):
    """The default ARD RBF fitted on ``X / unit``, for ``X`` itself (length scales times
    ``unit``)."""
    out = kernel.clone()
    out.length_scale = np.asarray(kernel.length_scale) * unit
    out.length_scale_bounds = np.asarray(kernel.length_scale_bounds) * np.reshape(unit, (-1, 1))
    return out


class SparseGPRegressor(RegressorMixin, _BaseLVGPRegressor):
    """Sparse Gaussian-process regression (Titsias' collapsed bound), uncertain inputs allowed.

    The kernel hyperparameters, the noise variance and (optionally) the inducing inputs maximise
    the collapsed variational bound of Titsias (2009). With ``n_inducing="all"`` the inducing
    inputs are the training inputs and the bound is the exact GP log marginal likelihood (up to
    the jitter), so the model is an exact GP regressor. Training inputs may be uncertain
    (``fit(X, y, X_var=...)``), and so may test inputs (``predict(X, X_var=...)``): the predictive
    is then reported by its exact mean and variance (moment matching; Girard et al. 2003), with
    the kernel expectations computed in closed form or by the unscented transform, Gauss–Hermite
    or Monte Carlo — so any kernel works.

    Parameters
    ----------
    kernel : Kernel, default=None
        Covariance function, cloned and never modified. ``None`` is an ARD
        :class:`~sklearn_lvgp.kernels.RBF` whose length scales are the standard deviations of the
        input columns and whose variance is the variance of the (normalised) targets.
    n_inducing : int or "all", default=100
        Number of inducing inputs M, chosen as a seeded random subset of the training inputs.
        ``"all"`` uses every training input and keeps them fixed (exact GP; ``optimize_inducing``
        is then not used).
    inducing_inputs : array-like of shape (M, n_features), default=None
        Initial inducing inputs; overrides ``n_inducing`` when given.
    optimize_inducing : bool, default=True
        Optimise the inducing inputs together with the hyperparameters.
    noise_variance_init : float, default=None
        Initial noise variance; ``None`` is 0.1 × the target variance.
    expectation : {"auto", "analytic", "unscented", "gauss_hermite", "monte_carlo"}, default="auto"
        Kernel-expectation rule for uncertain inputs (training inputs with ``X_var`` and the
        default for ``predict(X, X_var=...)``). ``"auto"`` is ``"analytic"`` for RBF, linear and
        their sums, else ``"unscented"``.
    gh_order : int, default=2
        Gauss–Hermite points per input dimension (``gh_order ** n_features`` points).
    n_samples : int, default=32
        Monte Carlo samples per point (drawn once from ``random_state`` and then held fixed,
        so the objective is deterministic and predictions are reproducible).
    optimizer : {"lbfgs"} or None, default="lbfgs"
        ``None`` keeps the initial hyperparameters, noise and inducing inputs (the bound and the
        posterior are still computed).
    positive_transform : {"log", "softplus"}, default="log"
        Unconstrained parameterisation of the (positive) kernel hyperparameters and noise
        variance seen by L-BFGS-B: ``"log"`` (scikit-learn's ``theta``) or ``"softplus"`` (GPy's
        and GPflow's default). Both have the same optima, but the optimiser's path, and so the
        local optimum reached on a multimodal likelihood, can differ.
    max_iter : int, default=1000
        Maximum number of L-BFGS-B iterations.
    tol : float, default=None
        L-BFGS-B ``ftol``/``gtol``; ``None`` keeps scipy's defaults.
    normalize_y : bool, default=False
        Standardise each target column before fitting; predictions are transformed back.
    jitter : float, default=1e-6
        Relative jitter on ``Kuu`` (times its mean diagonal), escalated with a warning if needed.
    random_state : int, RandomState instance or None, default=None
        Seeds the inducing-input choice and the Monte Carlo nodes.
    n_jobs : int, default=None
        Threads for the numba kernels (``None`` means 1, ``-1`` all cores).
    verbose : int, default=0
        > 0: progress bar or lines (as DeepGP); -1 also silences the first-compile notice.
    callback : callable or None, default=None
        ``callback(estimator, info)`` after every optimiser iteration of ``fit``; ``info`` is a
        dict with ``iteration``, ``stage`` (``"lbfgs"`` or ``"adam"``), ``bound`` (the
        ELBO or its minibatch estimate; higher is better), ``elapsed`` and, at held-out checks,
        ``validation_score``. Returning ``True`` stops that optimisation as converged.
    warm_start : bool, default=False
        Start from the previous fit's kernel, inducing inputs, noise variance and jitter when
        the data and the model have the same structure (otherwise fit afresh); ``n_iter_``
        accumulates.

    Attributes
    ----------
    kernel_ : Kernel
        The fitted kernel.
    noise_variance_ : float
        Fitted Gaussian noise variance (in normalised units when ``normalize_y``).
    inducing_inputs_ : ndarray of shape (M, n_features)
        Inducing inputs.
    expectation_ : str or None
        Rule used for uncertain training inputs (``None`` when they were deterministic).
    elbo_ : float
        Final collapsed bound (the exact log marginal likelihood for ``n_inducing="all"``), in
        normalised units when ``normalize_y``.
    n_iter_ : int
        Number of optimiser iterations.
    y_mean_, y_scale_ : ndarray of shape (n_targets,)
        Target normalisation (zeros and ones when ``normalize_y=False``).
    n_features_in_ : int
        Number of features seen during fit.

    References
    ----------
    Titsias, M. K. (2009). Variational learning of inducing variables in sparse Gaussian
    processes. AISTATS.

    Girard, A., Rasmussen, C. E., Quiñonero-Candela, J., Murray-Smith, R. (2003). Gaussian
    process priors with uncertain inputs — application to multiple-step ahead time series
    forecasting. NeurIPS.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp import SparseGPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (200, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(200)
    >>> model = SparseGPRegressor(n_inducing=15, random_state=0).fit(X, y)
    >>> mean, std = model.predict(X[:3], X_var=np.full((3, 1), 0.2), return_std=True)
    >>> mean.shape, std.shape
    ((3,), (3,))
    """

    def __init__(self, kernel=None, n_inducing=100, inducing_inputs=None, optimize_inducing=True,
                 noise_variance_init=None, expectation="auto", gh_order=2, n_samples=32,
                 optimizer="lbfgs", positive_transform="log", max_iter=1000, tol=None,
                 normalize_y=False, jitter=1e-6, random_state=None, n_jobs=None, verbose=0,
                 callback=None, warm_start=False):
        self.kernel = kernel
        self.n_inducing = n_inducing
        self.inducing_inputs = inducing_inputs
        self.optimize_inducing = optimize_inducing
        self.noise_variance_init = noise_variance_init
        self.expectation = expectation
        self.gh_order = gh_order
        self.n_samples = n_samples
        self.optimizer = optimizer
        self.positive_transform = positive_transform
        self.max_iter = max_iter
        self.tol = tol
        self.normalize_y = normalize_y
        self.jitter = jitter
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.warm_start = warm_start

    # ------------------------------------------------------------------------------ checks
    def _check_params(self, X, y):
        n = X.shape[0]
        name = type(self).__name__
        self._kernel, self._white_noise = self._kernel_and_noise(X.shape[1])
        if self.inducing_inputs is not None:
            Z = check_finite_array("inducing_inputs", self.inducing_inputs)
            if Z.ndim != 2 or Z.shape[1] != X.shape[1]:
                raise ValueError(f"inducing_inputs must have shape (M, {X.shape[1]}), "
                                 f"got {Z.shape}.")
            if Z.shape[0] < 1:
                raise ValueError("inducing_inputs needs at least one row.")
        elif isinstance(self.n_inducing, str):
            check_option("n_inducing", self.n_inducing, ("all",))
        else:
            check_n_inducing(self.n_inducing, n, name)
        check_min_samples(n, name)
        check_bool("optimize_inducing", self.optimize_inducing)
        check_bool("warm_start", self.warm_start)
        check_float("noise_variance_init", self.noise_variance_init, min_value=0.0,
                    exclusive_min=True, allow_none=True)
        check_option("expectation", self.expectation, EXPECTATIONS)
        check_int("gh_order", self.gh_order, min_value=1)
        check_int("n_samples", self.n_samples, min_value=1)
        if self.optimizer is not None:
            check_option("optimizer", self.optimizer, ("lbfgs",))
        check_option("positive_transform", self.positive_transform, ("log", "softplus"))
        check_int("max_iter", self.max_iter, min_value=0)
        check_float("tol", self.tol, min_value=0.0, exclusive_min=True, allow_none=True)
        check_bool("normalize_y", self.normalize_y)
        check_float("jitter", self.jitter, min_value=0.0)

    # --------------------------------------------------------------------------------- fit
    def fit(self, X, y, X_var=None):
        """Fit the hyperparameters, noise and inducing inputs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs (their means when ``X_var`` is given); never modified.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Targets.
        X_var : float or array-like of shape (n_samples, n_features), default=None
            Variances of Gaussian training inputs q(x_n) = N(X_n, diag X_var_n).

        Returns
        -------
        self : SparseGPRegressor
            The fitted model.
        """
        return self._fit_template(X, y, X_var=X_var)

    def _input_unit(self, X):
        """``None``, or the per-column powers of two ``X`` is divided by when its magnitude
        would overflow the kernel arithmetic (``overflow_safe_scale``; the default kernel only:
        its length scales follow the data, a given kernel's are in the units of ``X``)."""
        unit = overflow_safe_scale(X, 0.0, np.ones(X.shape[1]))
        if np.all(unit == 1.0):
            return None
        if self._kernel is not None:
            check_data_scale("X (with a kernel of your own, whose length scales are in the units "
                             "of X; kernel=None rescales X internally)", X)
        return unit

    def _fit(self, X, y, random_state, X_var=None):
        Y = self._targets_2d(y)
        self._x_unit = unit = self._input_unit(X)
        X = X if unit is None else X / unit
        check_data_scale("X", X)
        if not self.normalize_y:
            check_data_scale("y (pass normalize_y=True to standardise it)", Y)
        X_var = None if X_var is None else _check_X_var(X_var, X.shape)
        X_var = X_var if X_var is None or unit is None else X_var / unit ** 2
        y_mean, y_std = self._target_moments(Y)
        Yn = (Y - y_mean) / y_std
        var_y = float(np.mean(np.var(Yn, axis=0)))
        scales = column_scales(X)
        return self._fit_moments(X, Yn, X_var, random_state, y_mean, y_std, var_y, scales,
                                 _make_bound(X, Yn, X_var))

    def _fit_dask(self, X, y, random_state, X_var=None):
        """:meth:`fit` on dask collections: the rows stay partitioned
        (:mod:`sklearn_lvgp.engine._dask`)."""
        if X_var is not None:
            raise ValueError("X_var is not supported with a dask X; fit on numpy arrays for "
                             "uncertain training inputs.")
        X_d, Y_d = self._dask_supervised_rows(X, y)
        self._x_unit = None  # dask rows are not rescaled: check_data_scale is the caller's
        if isinstance(self.n_inducing, str) and self.inducing_inputs is None:
            raise ValueError("n_inducing='all' (the exact GP) is not available on dask input.")
        dask, _ = _dask()
        y_mean, y_std = (np.asarray(a) for a in dask.compute(*self._target_moments(Y_d)))
        Yn_d = (Y_d - y_mean) / y_std
        var_y, scales = dask.compute(Yn_d.var(axis=0).mean(), column_moments(X_d)[1])
        bound = CollapsedKernelBound(rows=DaskRows({"X": X_d, "y": Yn_d}))
        return self._fit_moments(X_d, None, None, random_state, y_mean, y_std, float(var_y),
                                 np.asarray(scales), bound)

    def _fit_moments(self, X, Yn, X_var, random_state, y_mean, y_std, var_y, scales, bound):
        """The fit from the data's summary statistics and a chunked bound (in memory or Dask).

        ``X`` is only read to pick the inducing inputs (``Yn`` may be ``None`` then);
        ``scales`` are its column scales: the default kernel's length scales and the units in
        which the inducing inputs are optimised (the L-BFGS-B fit of the collapsed bound is
        :func:`~sklearn_lvgp.optim._collapsed_fit.fit_collapsed`). A ``warm_start`` fit of the
        same structure starts from the previous kernel, inducing inputs, noise variance and
        jitter; ``n_iter_`` accumulates.
        """
        N, Qx = X.shape
        self.y_mean_, self.y_scale_ = y_mean, y_std
        var_y = var_y if var_y > 0 else 1.0
        fixed_Z = self.inducing_inputs is None and isinstance(self.n_inducing, str)
        continuing = self._continues_fit(
            (Qx, len(y_mean), repr(self.kernel), self.n_inducing, self.inducing_inputs is None,
             X_var is None, self.expectation, bool(self.optimize_inducing),
             N if fixed_Z else None))
        unit = getattr(self, "_x_unit", None)
        if continuing:
            kernel, Z0 = self._internal_model()
            kernel, Z0 = kernel.clone(), (X.copy() if fixed_Z else Z0)
        else:
            kernel = (default_rbf(scales, var_y) if self._kernel is None
                      else self._kernel).initialize(Qx, random_state)
            if self.inducing_inputs is not None:
                Z0 = check_finite_array("inducing_inputs", self.inducing_inputs)
                Z0 = Z0 if unit is None else Z0 / unit
            elif fixed_Z:  # "all": the exact GP
                Z0 = X.copy()
            else:
                Z0 = select_inducing(X, self.n_inducing, random_state)
        if X_var is not None:
            name, rule = make_rule(self.expectation, kernel, Qx, gh_order=self.gh_order,
                                   n_samples=self.n_samples, random_state=random_state,
                                   n_points=N)
        else:
            name, rule = None, "analytic"
        self._predict_seed = int(random_state.randint(np.iinfo(np.int32).max))
        if continuing:
            noise0, jitter, n_before = self.noise_variance_, self._jitter, self.n_iter_
        else:
            noise0 = (float(self.noise_variance_init) if self.noise_variance_init is not None
                      else self._white_noise or 0.1 * var_y)
            jitter, n_before = settled_jitter(kernel.K(Z0), self.jitter), 0
        fit = fit_collapsed(
            kernel, X, Yn, Z0, noise0, bound=bound, var_y=var_y, z_scale=scales, jitter=jitter,
            X_var=X_var, rule=rule, optimize_Z=self.optimize_inducing and not fixed_Z,
            positive_transform=self.positive_transform,
            max_iter=self.max_iter if self.optimizer is not None else 0, tol=self.tol,
            verbose=self.verbose, name=type(self).__name__)
        self.n_iter_ = n_before + fit.n_iter
        self.kernel_ = fit.kernel if unit is None else _in_units(fit.kernel, unit)
        self.noise_variance_ = fit.noise_variance
        self.inducing_inputs_ = np.array(fit.Z if unit is None else fit.Z * unit, copy=True)
        self._scaled_model = None if unit is None else (fit.kernel, np.array(fit.Z, copy=True))
        self.expectation_ = name
        self.elbo_ = fit.bound
        self._post = fit.posterior
        self._jitter = jitter
        self._rules = {}
        return self

    def _kernel_inputs(self, X):
        unit = getattr(self, "_x_unit", None)
        return [("kernel_", self._internal_model()[0], X if unit is None else X / unit)]

    def _internal_model(self):
        """Kernel and inducing inputs in the units the fit saw (``X / _x_unit``)."""
        if getattr(self, "_x_unit", None) is None:
            return self.kernel_, self.inducing_inputs_
        return self._scaled_model

    # --------------------------------------------------------------------------- predict
    def _rule(self, expectation, random_state=None):
        """Rule for test-time expectations; Monte Carlo nodes are frozen per fitted model
        unless ``random_state`` asks for fresh ones."""
        if expectation is None:
            expectation = self.expectation_ or self.expectation
        check_option("expectation", expectation, EXPECTATIONS)
        if random_state is not None:
            return make_rule(expectation, self._internal_model()[0], self.n_features_in_,
                             gh_order=self.gh_order, n_samples=self.n_samples,
                             random_state=check_random_state(random_state))[1]
        if expectation not in self._rules:
            self._rules[expectation] = make_rule(
                expectation, self._internal_model()[0], self.n_features_in_, gh_order=self.gh_order,
                n_samples=self.n_samples, random_state=check_random_state(self._predict_seed))[1]
        return self._rules[expectation]

    def _moments(self, X, X_var, expectation, full_cov, random_state=None):
        """Normalised-space moments of f at ``X``: per point, or with ``full_cov`` the joint
        covariance (deterministic inputs); exact for deterministic inputs, moment-matched for
        uncertain ones (Girard et al. 2003)."""
        (kernel, Z), post, unit = self._internal_model(), self._post, getattr(self, "_x_unit", None)
        if unit is not None:
            X, X_var = X / unit, (None if X_var is None else X_var / unit ** 2)
        if X_var is None:
            Ksu = kernel.K(X, Z)
            if full_cov:
                return joint_predictive_moments(post, kernel.K(X), Ksu)
            return predictive_moments(post, kernel.Kdiag(X), Ksu, None)
        rule = self._rule(expectation, random_state)
        return chunked_predictive_moments(
            post, lambda a, b: psi_statistics(kernel, Z, X[a:b], X_var[a:b], rule,
                                              per_point=True)[0], X.shape[0])

    def predict(self, X, return_std=False, return_cov=False, X_var=None, expectation=None,
                include_noise=True, random_state=None):
        """Predictive mean (and standard deviation or covariance) at test inputs.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Test inputs (their means when ``X_var`` is given).
        return_std : bool, default=False
            Also return the predictive standard deviation.
        return_cov : bool, default=False
            Also return the joint predictive covariance across the test points (deterministic
            inputs only; shape (n, n), or (n, n, n_targets) for several targets).
        X_var : float or array-like of shape (n, n_features), default=None
            Variances of Gaussian test inputs; the returned mean and variance are then the exact
            moments of the (non-Gaussian) predictive (Girard et al. 2003).
        expectation : str, default=None
            Expectation rule for uncertain inputs: ``"analytic"``, ``"unscented"``,
            ``"gauss_hermite"``, ``"monte_carlo"`` or ``"auto"``; ``None`` uses the fitted rule
            (or the ``expectation`` parameter when training inputs were deterministic).
        include_noise : bool, default=True
            Include the noise variance, i.e. return the predictive of y rather than of f.
        random_state : int, RandomState instance or None, default=None
            Monte Carlo expectations only: ``None`` reuses the nodes drawn at fit (predictions
            are then deterministic); otherwise fresh nodes are drawn from this seed.

        Returns
        -------
        mean : ndarray of shape (n,) or (n, n_targets)
            Predictive mean.
        std : ndarray of shape (n,) or (n, n_targets)
            Predictive standard deviation (only if ``return_std``).
        cov : ndarray of shape (n, n) or (n, n, n_targets)
            Predictive covariance (only if ``return_cov``).
        """
        check_is_fitted(self)
        if return_std and return_cov:
            raise ValueError("At most one of return_std or return_cov can be requested.")
        check_bool("include_noise", include_noise)
        if is_dask_collection(X):
            if X_var is not None:
                raise ValueError("predict on a dask X takes no X_var: pass the input "
                                 "variances with a numpy X.")
            return self._predict_on_partitions(X, return_std, return_cov,
                                               include_noise=include_noise,
                                               expectation=expectation)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if X_var is not None:
            if return_cov:
                raise ValueError("return_cov is not available with uncertain inputs (X_var): "
                                 "the uncertain-input moments are per point. Use return_std.")
            X_var = _check_X_var(X_var, X.shape)
        noise = self.noise_variance_ if include_noise else 0.0
        with threads(self.n_jobs):
            if return_cov:
                mean, cov = self._moments(X, None, expectation, full_cov=True)
                cov = cov + noise * np.eye(X.shape[0])
                cov = cov[:, :, None] * (self.y_scale_ ** 2)[None, None, :]
                mean = mean * self.y_scale_ + self.y_mean_
                return self._target_shape(mean), (cov[:, :, 0] if self._y_ndim == 1 else cov)
            mean, var = self._moments(X, X_var, expectation, full_cov=False,
                                      random_state=random_state)
        mean = self._target_shape(mean * self.y_scale_ + self.y_mean_)
        if not return_std:
            return mean
        std = np.sqrt(np.maximum(var + noise, 0.0)) * self.y_scale_
        return mean, self._target_shape(std)

    def predict_log_density(self, X, y, X_var=None, expectation=None):
        """Log predictive density of each test pair (summed over targets), in nats.

        The predictive of y is Gaussian for deterministic inputs; for uncertain inputs it is the
        moment-matched Gaussian of Girard et al. (2003).

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Test inputs.
        y : array-like of shape (n,) or (n, n_targets)
            Test targets.
        X_var : float or array-like of shape (n, n_features), default=None
            Variances of Gaussian test inputs.
        expectation : str, default=None
            As in :meth:`predict`.

        Returns
        -------
        log_density : ndarray of shape (n,)
            ``log p(y_n | x_n, data)``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        Y = self._check_targets(y, X.shape[0], self.y_mean_.shape[0])
        mean, std = self.predict(X, return_std=True, X_var=X_var, expectation=expectation)
        # in standardised units, less the log of the scale: the squared scale overflows for
        # targets of magnitude ~1e154 and more
        scale = self.y_scale_
        lp = gaussian_log_density((Y - self.y_mean_) / scale,
                                  (mean.reshape(Y.shape) - self.y_mean_) / scale,
                                  (std.reshape(Y.shape) / scale) ** 2)
        return lp.sum(axis=1) - np.sum(np.log(scale))

    def sample_y(self, X, n_samples=1, random_state=0):
        """Draw joint samples of the latent function at deterministic inputs.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Inputs.
        n_samples : int, default=1
            Number of samples.
        random_state : int, RandomState instance or None, default=0
            Seed of the draws (as in scikit-learn's ``GaussianProcessRegressor.sample_y``).

        Returns
        -------
        samples : ndarray of shape (n, n_samples) or (n, n_targets, n_samples)
            Draws of f (noise not included), in the units of y.
        """
        check_is_fitted(self)
        check_int("n_samples", n_samples, min_value=1)
        rng = check_random_state(random_state)
        mean, cov = self.predict(X, return_cov=True, include_noise=False)
        if self._y_ndim == 1:
            return rng.multivariate_normal(mean, cov, n_samples).T
        return np.stack([rng.multivariate_normal(mean[:, d], cov[:, :, d], n_samples).T
                         for d in range(mean.shape[1])], axis=1)
