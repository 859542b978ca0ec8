"""UnscentedGPLVM: Bayesian GPLVM whose Ψ-statistics work for any kernel (de Souza et al. 2021)."""

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._core.init import fill_missing, initial_latent_start, nearest_rows, select_inducing
from .._core.linalg import settled_jitter
from .._core.pairwise import PairwiseRows
from .._core.parallel import threads
from .._core.params import ParamPacker
from .._core.scaling import NORMALIZE_OPTIONS, normalization, observed_log_scale
from .._core.validation import (
    check_bool,
    check_data_scale,
    check_float,
    check_int,
    check_latent_points,
    check_min_samples,
    check_n_inducing,
    check_natgrad_gamma,
    check_option,
)
from .._core.warn import warn
from ..base import _BaseLatentTransformer
from ..bounds._collapsed_masked import collapsed_psi_bound, predictive_for
from ..engine._dask import DaskPairwiseRows, DaskRows, _dask
from ..expectations import EXPECTATIONS, PointRule, make_rule, monte_carlo_rule
from ..kernels._stationary import default_rbf
from ..nn._ldgd_encoder import encoder_latents, encoder_started_at
from ..optim._alternating import DaskLocals, InMemoryLocals, fit_alternating, heldout_latents
from ..optim._lbfgsb import minimize_adam, minimize_lbfgsb
from ..optim._svi import fit_svi

__all__ = ["UnscentedGPLVM"]

#: Rows from which ``optimizer="auto"`` uses the alternating local/global optimiser.
ALTERNATING_MIN_ROWS = 100_000

class UnscentedGPLVM(ClassNamePrefixFeaturesOutMixin, _BaseLatentTransformer):
    """Bayesian Gaussian-process latent variable model with any kernel.

    Fits q(x_n) = N(μ_n, diag S_n) for every row by maximising the collapsed variational bound of
    Titsias & Lawrence (2010). The kernel expectations (Ψ-statistics) are computed in closed form
    where one exists (RBF, linear and their sums) or with a point-set rule — the unscented
    transform (2Q points; Souza et al. 2021), Gauss–Hermite or Monte Carlo — for any kernel.
    ``NaN`` entries of ``X`` are missing values the bound skips (user guide: "Missing values").

    Parameters
    ----------
    n_components : int, default=2
        Latent dimension Q.
    kernel : Kernel, default=None
        Covariance function on the latent space, cloned and never modified. ``None`` is an ARD
        :class:`~sklearn_lvgp.kernels.RBF` whose variance is the mean column variance of the
        data and whose length scales are the standard deviations of the initial latent means.
    expectation : {"auto", "analytic", "unscented", "gauss_hermite", "monte_carlo"}, default="auto"
        How Ψ-statistics are computed. ``"auto"`` is ``"analytic"`` where a closed form exists,
        otherwise ``"unscented"``. The one used is stored in ``expectation_``.
    n_inducing : int, default=20
        Number of inducing inputs M (must not exceed the number of samples).
    gh_order : int, default=2
        Gauss–Hermite points per dimension (``gh_order ** n_components`` points in all).
    n_samples : int, default=32
        Monte Carlo samples per data point (``expectation="monte_carlo"``).
    init : {"pca", "pca_unscaled", "random"} or array-like of shape (n_samples, n_components), \
            default="pca"
        Initial latent means. ``"pca"``: PCA scores divided by the standard deviation of the first
        one, so the latents match the N(0, I) prior whatever the data scale (relative scales are
        kept); ``"pca_unscaled"``: raw PCA scores (the papers' choice); ``"random"``: N(0, 0.01).
    latent_variance_init : float, default=0.1
        Initial latent variances.
    noise_variance_init : float, default=None
        Initial Gaussian noise variance; ``None`` is 1% of the mean column variance.
    normalize_X : {"center", "standardize", "none"}, default="center"
        Subtract the column means (and divide by powers of two near the column spreads if
        the data would overflow, e.g. at 1e±150), also divide by the standard deviations, or
        use the data as they are (the paper's experiments); predictions, ``inverse_transform``
        and ``score_samples`` are in the original units.
    optimizer : {"auto", "lbfgs", "alternating", "adam", "svi"}, default="auto"
        ``"lbfgs"``: one L-BFGS-B over all parameters. ``"alternating"``: rounds of a local
        step (each chunk of rows improves its q(x_n) with the model fixed, in parallel) and a
        global step (L-BFGS-B over Z, θ and σ²), as Gal, van der Wilk & Rasmussen (2014) do;
        memory then holds no optimiser state per row (``max_iter`` counts rounds). ``"svi"``:
        stochastic variational inference on the uncollapsed bound with an explicit q(u)
        (Hensman, Fusi & Lawrence 2013): minibatches of ``batch_size`` rows, natural-gradient
        steps on q(u), Adam on θ, Z, σ² and the batch rows' q(x_n) (``max_iter`` counts
        epochs); ``elbo_`` is then the bound over all rows at the optimal q(u), set by a final
        pass, and ``elbo_history_`` the mean minibatch estimate of each epoch. ``"auto"`` is Adam for Monte Carlo,
        ``"alternating"`` from 100 000 rows and L-BFGS-B below.
    max_iter : int, default=2000
        Maximum optimiser iterations (rounds with ``"alternating"``, epochs with ``"svi"``).
    batch_size : int, default=None
        Rows per step of ``optimizer="svi"``; ``None`` is ``min(n_samples, 1000)``.
    natgrad_gamma : float or tuple (gamma0, gamma1, K), default=0.1
        Natural-gradient step size on q(u) with ``optimizer="svi"``, in (0, 1] (the first
        step is 1: q(u) starts at the optimum for the first minibatch); a tuple is a
        log-linear schedule from ``gamma0`` to ``gamma1`` over ``K`` steps, as in DeepGP.
    encoder : {None, "mlp"}, default=None
        With ``optimizer="svi"``: ``"mlp"`` amortises q(x_n) by a ReLU network of the row
        (zeros at its missing entries; hidden widths 50 and 20, a mean and a softplus standard
        deviation head, the mean head started at ``init``), trained by Adam instead of a q(x_n)
        per row; ``latent_mean_`` and ``latent_variance_`` are then its outputs, and so is the
        q(x*) of a new row in ``transform`` and ``score_samples`` (amortised: no per-row
        optimisation, ``transform_max_iter`` unused).
    tol : float, default=None
        Optimiser tolerance (L-BFGS-B ``ftol``/``gtol``; Adam and SVI windowed relative
        change).
        ``None`` keeps scipy's defaults, and runs Adam for exactly ``max_iter`` steps.
    early_stopping : bool, default=False
        Adam only (``"auto"`` then means Adam): hold out ``validation_fraction`` of the rows
        and stop when their mean held-out bound (``score_samples``, their ``q(x*)`` inferred
        as ``transform`` does) has not improved for ``n_iter_no_change`` checks (every 100
        steps), keeping the best checked state; the held-out rows' latents are then inferred
        with the final model.
    validation_fraction : float, default=0.1
        Held-out fraction for early stopping.
    n_iter_no_change : int, default=5
        Patience of early stopping, in checks.
    learning_rate : float, default=0.01
        Adam step size.
    transform_max_iter : int, default=200
        Iterations of each new row's own L-BFGS when inferring its latent q(x*) in
        ``transform`` and ``score_samples`` (every row is its own problem, with its own
        convergence test); training rows return their fitted ``latent_mean_``.
    jitter : float, default=1e-6
        Relative jitter on ``Kuu`` (escalated with a warning if needed).
    random_state : int, RandomState instance or None, default=None
        Seeds the inducing-point choice, random initialisations, Monte Carlo nodes and kernel
        initialisation (e.g. network weights).
    n_jobs : int, default=None
        Threads for the jitted loops and BLAS (``-1`` = all cores).
    verbose : int, default=0
        > 0: progress bar or lines (as DeepGP); -1 also silences the first-compile notice.
    callback : callable or None, default=None
        ``callback(estimator, info)`` after every optimiser iteration of ``fit``; ``info`` is a
        dict with ``iteration``, ``stage`` (``"lbfgs"`` or ``"adam"``), ``bound`` (the
        ELBO or its minibatch estimate; higher is better), ``elapsed`` and, at held-out checks,
        ``validation_score``. Returning ``True`` stops that optimisation as converged.
    warm_start : bool, default=False
        Start from the previous fit's latent distributions, inducing inputs, kernel, noise and
        normalisation when ``X`` and the model have the same shape (otherwise fit afresh);
        ``n_iter_`` and ``elbo_history_`` accumulate.

    Attributes
    ----------
    latent_mean_ : ndarray of shape (n_samples, n_components)
        Means of q(X).
    latent_variance_ : ndarray of shape (n_samples, n_components)
        Variances of q(X).
    inducing_inputs_ : ndarray of shape (n_inducing, n_components)
        Optimised inducing inputs Z.
    kernel_ : Kernel
        The fitted kernel.
    noise_variance_ : float
        Fitted Gaussian noise variance.
    expectation_ : str
        The expectation rule used.
    optimizer_ : str
        The optimiser used (``"auto"`` resolved).
    elbo_ : float
        Final evidence lower bound (including the KL term).
    elbo_history_ : ndarray
        Best bound after each optimiser iteration.
    n_iter_ : int
        Number of optimiser iterations.
    validation_scores_ : ndarray or None
        Mean held-out bound at each check with ``early_stopping=True``; ``None`` without.
    relevance_ : ndarray of shape (n_components,)
        Per-latent-dimension relevance (inverse ARD length scales where defined). A kernel with
        one length scale for all dimensions gives equal relevances, and ``fit`` warns.
    X_mean_, X_scale_ : ndarray of shape (n_features,)
        Normalisation of the data, ``(X - X_mean_) / X_scale_`` (zeros and ones where
        ``normalize_X`` does not centre or scale, see ``normalize_X``).
    n_features_in_ : int
        Number of features seen during fit.

    References
    ----------
    de Souza, D. A., Mesquita, D., Mattos, C. L. C., Gomes, J. P. P. (2021). Learning GPLVM
    with arbitrary kernels using the unscented transformation. AISTATS.

    Titsias, M. K., Lawrence, N. D. (2010). Bayesian Gaussian process latent variable model.
    AISTATS.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn_lvgp import UnscentedGPLVM
    >>> X = load_iris().data
    >>> model = UnscentedGPLVM(n_components=2, n_inducing=10, max_iter=50, random_state=0)
    >>> model.fit_transform(X).shape
    (150, 2)
    """

    def __init__(self, n_components=2, kernel=None, expectation="auto", n_inducing=20,
                 gh_order=2, n_samples=32, init="pca", latent_variance_init=0.1,
                 noise_variance_init=None, normalize_X="center", optimizer="auto", max_iter=2000,
                 batch_size=None, natgrad_gamma=0.1, encoder=None, tol=None,
                 early_stopping=False, validation_fraction=0.1, n_iter_no_change=5,
                 learning_rate=0.01, transform_max_iter=200, jitter=1e-6,
                 random_state=None, n_jobs=None, verbose=0, callback=None, warm_start=False):
        self.n_components = n_components
        self.kernel = kernel
        self.expectation = expectation
        self.n_inducing = n_inducing
        self.gh_order = gh_order
        self.n_samples = n_samples
        self.init = init
        self.latent_variance_init = latent_variance_init
        self.noise_variance_init = noise_variance_init
        self.normalize_X = normalize_X
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.natgrad_gamma = natgrad_gamma
        self.encoder = encoder
        self.tol = tol
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.learning_rate = learning_rate
        self.transform_max_iter = transform_max_iter
        self.jitter = jitter
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.warm_start = warm_start

    def _check_params(self, X, y):
        check_int("n_components", self.n_components, min_value=1)
        check_option("expectation", self.expectation, EXPECTATIONS)
        check_n_inducing(self.n_inducing, X.shape[0], type(self).__name__)
        check_int("gh_order", self.gh_order, min_value=1)
        check_int("n_samples", self.n_samples, min_value=1)
        check_float("latent_variance_init", self.latent_variance_init, 0.0, exclusive_min=True)
        check_float("noise_variance_init", self.noise_variance_init, 0.0, exclusive_min=True,
                    allow_none=True)
        check_option("normalize_X", self.normalize_X, NORMALIZE_OPTIONS)
        check_bool("warm_start", self.warm_start)
        check_option("optimizer", self.optimizer, ("auto", "lbfgs", "alternating", "adam", "svi"))
        check_int("batch_size", self.batch_size, min_value=1, allow_none=True)
        if check_natgrad_gamma(self.natgrad_gamma) is None:
            raise ValueError("natgrad_gamma must be a float or (gamma0, gamma1, K), not None.")
        check_int("max_iter", self.max_iter, min_value=1)
        check_float("tol", self.tol, 0.0, allow_none=True)
        check_float("learning_rate", self.learning_rate, 0.0, exclusive_min=True)
        check_int("transform_max_iter", self.transform_max_iter, min_value=1)
        check_float("jitter", self.jitter, 0.0)
        self._check_early_stopping(X.shape[0], self.n_inducing)
        if self.encoder is not None and (self.encoder != "mlp" or self.optimizer != "svi"):
            raise ValueError("encoder must be None or 'mlp', with optimizer='svi'; got "
                             f"encoder={self.encoder!r}, optimizer={self.optimizer!r}.")
        if self.early_stopping and self.optimizer in ("lbfgs", "alternating", "svi"):
            raise ValueError("early_stopping applies to the Adam path (optimizer='adam' or "
                             f"'auto'); got optimizer={self.optimizer!r}.")
        self._kernel, self._white_noise = self._kernel_and_noise(self.n_components)
        if isinstance(self.init, str):
            check_option("init", self.init, ("pca", "pca_unscaled", "random"))
        if self.expectation == "monte_carlo" and self.optimizer in ("lbfgs", "alternating"):
            raise ValueError("expectation='monte_carlo' gives a stochastic objective; use "
                             f"optimizer='adam', 'svi' or 'auto', not {self.optimizer!r}.")
        check_min_samples(X.shape[0], type(self).__name__)

    def _warm_start_key(self, X):
        """What a ``warm_start`` fit must share with the previous fit to continue from it."""
        return (X.shape, int(self.n_components), repr(self.kernel), self.n_inducing,
                self.expectation, self.optimizer, self.normalize_X, bool(self.early_stopping),
                float(self.validation_fraction))

    def _alternates(self, X):
        """Whether a fit of the complete rows ``X`` alternates local and global steps."""
        auto = (X.shape[0] >= ALTERNATING_MIN_ROWS and self.expectation != "monte_carlo"
                and not self.early_stopping)
        alternates = auto if self.optimizer == "auto" else self.optimizer == "alternating"
        return alternates and not np.isnan(X).any()

    def _initial_model(self, mu0, latent_scales, var_y, random_state):
        """Kernel, rule, optimiser, Z, noise, jitter and box of log σ² at the start (``mu0`` may
        be a dask array; ``latent_scales``, its column scales, set the default kernel)."""
        N, Q = mu0.shape
        var_y = var_y if var_y > 0 else 1.0
        kernel = default_rbf(latent_scales, var_y) if self._kernel is None else self._kernel
        kernel = kernel.initialize(Q, random_state)
        name, rule = make_rule(self.expectation, kernel, Q, gh_order=self.gh_order,
                               n_samples=self.n_samples, random_state=random_state, n_points=N)
        optimizer = self.optimizer if self.optimizer != "auto" else (
            "adam" if name == "monte_carlo" or self.early_stopping else
            "alternating" if N >= ALTERNATING_MIN_ROWS else "lbfgs")
        Z0 = select_inducing(mu0, self.n_inducing, random_state)
        noise0 = (float(self.noise_variance_init) if self.noise_variance_init is not None
                  else self._white_noise or 0.01 * var_y)
        jitter = settled_jitter(kernel.K(Z0), self.jitter)
        noise_box = [np.log(1e-10 * var_y), np.log(1e3 * var_y)]
        return kernel, name, rule, optimizer, Z0, noise0, jitter, noise_box

    def _fit(self, X, y, random_state):
        Q = self.n_components
        continuing = self._continues_fit(self._warm_start_key(X))
        pairwise = PairwiseRows if self._alternates(X) else None  # sums as on Dask: same bits
        if not continuing:
            self.X_mean_, self.X_scale_ = normalization(X, self.normalize_X, pairwise)
        Y_all = self._normalized(X)
        check_data_scale("X (after normalize_X)", Y_all)
        train, held_out = self._held_out_rows(X.shape[0], random_state)
        rows = slice(None) if train is None else train
        Y = Y_all[rows]
        N = Y.shape[0]
        Y_init, empty, var_y = fill_missing(Y)  # NaN: column means; rows with no entry
        mu0, scales, var_y = initial_latent_start(Y_init, Q, self.init, random_state, var_y=var_y,
                                                  scales=self._kernel is None, rows_of=pairwise)
        kernel, name, rule, optimizer, Z0, noise0, jitter, noise_box = self._initial_model(
            mu0, scales, var_y, random_state)
        stochastic = name == "monte_carlo"
        S0 = np.full((N, Q), float(self.latent_variance_init))
        mu0[empty], S0[empty] = 0.0, 1.0  # a row with no observed entry: the prior, its optimum
        if continuing:  # the previous solution
            mu0, S0 = self.latent_mean_[rows], self.latent_variance_[rows]
            Z0, kernel, noise0 = self.inducing_inputs_, self.kernel_.clone(), self.noise_variance_
            jitter = self._jitter
        packer = ParamPacker([("mu", (N, Q)), ("S", (N, Q), "log"), ("Z", Z0.shape),
                              ("theta", (kernel.n_theta,)), ("noise", (), "log")])
        work = kernel.clone()
        mc_state = check_random_state(random_state.randint(np.iinfo(np.int32).max))
        bound = collapsed_psi_bound(Y)  # chunked map-reduce (masked where Y has NaN)
        if optimizer == "svi":
            enc = None if self.encoder is None else encoder_started_at(
                Y, mu0, mc_state, np.sqrt(self.latent_variance_init))
            out = fit_svi(Y, mu0, S0, work, Z0, noise0, rule, jitter=jitter, tol=self.tol,
                          batch_size=min(N, 1000) if self.batch_size is None else self.batch_size,
                          max_epochs=self.max_iter, learning_rate=self.learning_rate,
                          natgrad_gamma=self.natgrad_gamma, noise_bounds=noise_box,
                          random_state=mc_state, verbose=self.verbose, name=type(self).__name__,
                          encoder=enc, draw_rule=(lambda n: monte_carlo_rule(
                              self.n_samples, Q, mc_state, n_points=n)) if stochastic else None)
            x = packer.pack({"mu": out.mu, "S": out.S, "Z": out.Z, "theta": out.theta,
                             "noise": out.noise_variance})
            n_iter, history, checks, bound = out.n_epochs, out.history, None, out
        elif optimizer == "alternating":
            out = self._alternate(InMemoryLocals(bound, mu0.copy(), S0.copy()), work, Z0, noise0,
                                  rule, jitter, noise_box)
            x = packer.pack({"mu": out.mu, "S": out.S, "Z": out.Z, "theta": out.theta,
                             "noise": out.noise_variance})
            n_iter, history, checks = out.n_rounds, out.history, None
        else:
            def objective(flat):
                p = packer.unpack(flat)
                work.theta = p["theta"]
                r = (monte_carlo_rule(self.n_samples, Q, mc_state, n_points=N) if stochastic
                     else rule)
                value, grads, _ = bound.elbo(work, p["Z"], p["mu"], p["S"], float(p["noise"]), r,
                                             jitter=jitter)
                return -value, -packer.pack_grad(grads, p)

            x0 = packer.pack({"mu": mu0, "S": S0, "Z": Z0, "theta": kernel.theta, "noise": noise0})
            opts = {"max_iter": self.max_iter, "verbose": self.verbose,
                    "name": type(self).__name__}
            if optimizer == "lbfgs":
                res = minimize_lbfgsb(objective, x0, tol=self.tol, **opts,
                                      bounds=packer.box(theta=work.bounds, noise=noise_box))
            else:
                validation = None if train is None else self._held_out_validation(
                    packer, work, Y, X[held_out], rule, stochastic, jitter)
                res = minimize_adam(
                    objective, x0, learning_rate=self.learning_rate,
                    tol=None if validation else self.tol, validation=validation,
                    n_iter_no_change=self.n_iter_no_change,
                    validation_tol=1e-4 if self.tol is None else self.tol, **opts)
            x, n_iter, history = res.x, res.n_iter, -np.asarray(res.history)
            checks = res.validation_history
        # deterministic rule for prediction and the final posterior (MC: one frozen draw)
        rule = monte_carlo_rule(self.n_samples, Q, mc_state) if stochastic else rule
        self._hold(packer.unpack(x), work, Y, rule, jitter, bound)
        self._commit(name, optimizer, n_iter, history, continuing, random_state)
        self.validation_scores_ = checks
        if train is not None:
            self._fill_held_out_latents(train, held_out,
                                        lambda: self._infer_latents(Y_all[held_out]))
            self._Y = Y_all
        self._row_index = {row.tobytes(): i for i, row in enumerate(X)}
        return self

    def _fit_dask(self, X, y, random_state):
        """The alternating fit, rows and q(x_n) kept where they live (same draws as in memory)."""
        _, da = _dask()
        rows = DaskRows({"X": X})
        X_d = rows.arrays["X"]
        self._set_dask_features(rows)
        self._check_params(X_d, None)
        self._refuse_on_dask(
            (self.early_stopping, "early_stopping=True", "held-out rows are scored on the driver"),
            (self.expectation == "monte_carlo", "expectation='monte_carlo'", "a random rule"),
            (self.optimizer not in ("auto", "alternating"), f"optimizer={self.optimizer!r}",
             "use optimizer='alternating'"))
        mean, scale = normalization(X_d, self.normalize_X, DaskPairwiseRows)
        rows = DaskRows({"Y": (X_d - mean) / scale})
        mu0, scales, var_y = initial_latent_start(
            rows.arrays["Y"], self.n_components, self.init, random_state, var_y=None,
            scales=self._kernel is None, rows_of=DaskPairwiseRows)
        kernel, name, rule, _, Z0, noise0, jitter, noise_box = self._initial_model(
            mu0, scales, var_y, random_state)
        random_state.randint(np.iinfo(np.int32).max)  # the in-memory fit's Monte Carlo seed draw
        state = DaskLocals(rows)
        state.set_locals(mu0, da.full(mu0.shape, float(self.latent_variance_init),
                                      chunks=mu0.chunks))
        work = kernel.clone()
        out = self._alternate(state, work, Z0, noise0, rule, jitter, noise_box)
        F, _, self._post = state.evaluate(work, out.Z, out.noise_variance, rule, jitter=jitter,
                                          max_tries=6)
        self.elbo_ = float(F - state.kl())
        self.X_mean_, self.X_scale_ = mean, scale
        self.kernel_, self.latent_mean_, self.latent_variance_ = work, out.mu, out.S
        self.inducing_inputs_, self.noise_variance_ = out.Z, out.noise_variance
        self._rule, self._jitter, self._Y, self._row_index = rule, jitter, None, {}  # no rows
        self._encoder = None  # optimizer='svi' is refused on Dask
        self._commit(name, "alternating", out.n_rounds, out.history, False, random_state)
        return self

    def _alternate(self, state, work, Z0, noise0, rule, jitter, noise_box):
        """Alternating local/global optimisation of ``state`` (in memory or on Dask)."""
        return fit_alternating(state, work, Z0, noise0, rule, noise_bounds=noise_box,
                               jitter=jitter, max_rounds=self.max_iter,
                               tol=1e-7 if self.tol is None else float(self.tol),
                               verbose=self.verbose, name=type(self).__name__)

    def _commit(self, name, optimizer, n_iter, history, continuing, random_state):
        """The fitted attributes beside the model; warns when relevance_ cannot rank dims."""
        self.expectation_, self.optimizer_ = name, optimizer
        self._record_iterations(n_iter, history, continuing)
        r = self.relevance_ = self.kernel_.relevance(self.n_components)
        if r.size > 1 and np.all(r == r[0]):
            warn(f"{type(self).__name__}: the kernel {self.kernel_!r} has one length scale for "
                 f"all {r.size} latent dimensions, so relevance_ is the same for each and says "
                 "nothing about them. Pass an ARD kernel (e.g. length_scale=np.ones("
                 "n_components)) to rank the dimensions.", UserWarning)
        self._transform_seed = int(random_state.randint(np.iinfo(np.int32).max))

    def _held_out_validation(self, packer, work, Y, X_val, rule, stochastic, jitter):
        """``validation(flat)``: mean held-out bound of the raw rows ``X_val`` at their inferred
        ``q(x*)`` under the model of ``flat`` (Monte Carlo rules frozen at one draw)."""
        if stochastic:
            rule = monte_carlo_rule(self.n_samples, self.n_components, np.random.RandomState(0))

        def hold(model, flat):
            model._transform_seed = 0
            model._hold(packer.unpack(flat), work.clone(), Y, rule, jitter)

        def score(model):
            mu, S = model._infer_latents(model._normalized(X_val))
            return np.mean(model._held_out_scores(X_val, mu, S))

        return self._held_out_scorer(hold, score)

    def _hold(self, p, kernel, Y, rule, jitter, bound=None):
        """Hold the model of the unpacked ``p`` fitted on ``Y``, its ``elbo_`` and q(u)
        (``bound``: a :class:`~sklearn_lvgp.optim._svi.SviResult` holds its own)."""
        kernel.theta = p["theta"]
        self.kernel_, self.latent_mean_, self.latent_variance_ = kernel, p["mu"], p["S"]
        self.inducing_inputs_, self.noise_variance_ = p["Z"], float(p["noise"])
        self._rule, self._jitter, self._Y = rule, jitter, Y
        self._encoder = getattr(bound, "encoder", None)
        if hasattr(bound, "post"):
            self._post, self.elbo_ = bound.post, bound.elbo
            return
        bound = collapsed_psi_bound(Y) if bound is None else bound
        elbo, _, self._post = bound.elbo(kernel, p["Z"], p["mu"], p["S"], float(p["noise"]), rule,
                                         jitter=jitter, max_tries=6)
        self.elbo_ = float(elbo)

    def _normalized(self, X):
        return (X - self.X_mean_) / self.X_scale_

    def _predictive(self, masked=False):
        """The fitted model for new rows (``masked``: with NaN) and latent points (MC: one draw)."""
        rule = self._rule
        if isinstance(rule, PointRule) and rule.nodes.ndim == 3:
            rule = monte_carlo_rule(self.n_samples, self.n_components,
                                    check_random_state(self._transform_seed))
        return predictive_for(self.kernel_, self.inducing_inputs_, rule, self._post, masked)

    def _infer_latents(self, Ystar):
        """``(mu, S)`` of unseen normalised rows with the model fixed: the encoder's output when
        amortised, else each row its own L-BFGS problem started at the q(x) of its nearest
        reference row (de Souza et al. 2021)."""
        if self._encoder is not None:
            return encoder_latents(self._encoder, Ystar)
        if self._Y is not None:  # the training rows
            refs, ref_mu, ref_S = self._Y, self.latent_mean_, self.latent_variance_
        else:  # a Dask fit keeps no rows: the inducing inputs, by their images
            ref_mu = self.inducing_inputs_
            refs = self._normalized(self.inverse_transform(ref_mu))
            ref_S = np.full_like(ref_mu, float(self.latent_variance_init))
        nearest = nearest_rows(np.nan_to_num(Ystar), np.nan_to_num(refs))  # NaN: the mean
        return heldout_latents(  # the fitted (kernel, Z, rule, post)
            *self._predictive(), Ystar, ref_mu[nearest], ref_S[nearest],
            max_iter=self.transform_max_iter, tol=self.tol, verbose=self.verbose,
            name=f"{type(self).__name__}.transform", budget="transform_max_iter")

    def _latents(self, X):
        """Latent means/variances of validated rows: stored for training rows, inferred else."""
        idx = np.array([self._row_index.get(row.tobytes(), -1) for row in X], dtype=np.intp)
        mu, S = np.empty((X.shape[0], self.n_components)), np.empty((X.shape[0], self.n_components))
        seen = idx >= 0
        mu[seen], S[seen] = self.latent_mean_[idx[seen]], self.latent_variance_[idx[seen]]
        if np.any(~seen):
            with threads(self.n_jobs):
                new = self._normalized(X[~seen])
                check_data_scale("X (normalised with the training statistics)", new,
                                 spread=False)
                mu[~seen], S[~seen] = self._infer_latents(new)
        return mu, S

    def _held_out_scores(self, X, mu, S):
        """Per-row held-out bound (KL included) of validated rows ``X`` at their ``q(x*)``, as
        a density of ``X`` (the normalisation's log-Jacobian subtracted)."""
        Ystar = self._normalized(X)
        with threads(self.n_jobs):
            out = self._predictive(np.isnan(Ystar).any()).heldout_scores(Ystar, mu, S)
        return out - observed_log_scale(Ystar, self.X_scale_)

    def _latent_moments(self, X):
        """Training rows: the fitted ``latent_mean_``; unseen rows: :meth:`_infer_latents`."""
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite="allow-nan")
        mu, S = self._latents(X)
        return mu, np.sqrt(S)

    def fit_transform(self, X, y=None):
        """Fit and return the latent means of the training rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : None
            Ignored.

        Returns
        -------
        latent_mean : ndarray of shape (n_samples, n_components)
            A copy of ``latent_mean_``.
        """
        return self.fit(X).latent_mean_.copy()

    def score_samples(self, X):
        """Per-row held-out evidence lower bound (model and q(u) fixed), in nats.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Rows in data space.

        Returns
        -------
        scores : ndarray of shape (n,)
            Per-row bound at the inferred q(x*), KL included.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite="allow-nan")
        return self._held_out_scores(X, *self._latents(X))

    def score(self, X, y=None):
        """Mean per-row held-out bound (higher is better).

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Rows in data space.
        y : None
            Ignored.

        Returns
        -------
        score : float
            ``mean(score_samples(X))``.
        """
        return float(np.mean(self.score_samples(X)))

    def predict_uncertain(self, mean, var, full_cov=False, include_noise=True):
        """Compute the moments of the data-space predictive at Gaussian latent inputs.

        The exact mean and variance of the non-Gaussian predictive (Girard et al. 2003).

        Parameters
        ----------
        mean : array-like of shape (n, n_components)
            Means of the latent inputs.
        var : array-like of shape (n, n_components)
            Variances of the latent inputs (``>= 0``).
        full_cov : bool, default=False
            Return the (n, D, D) covariance across outputs.
        include_noise : bool, default=True
            Add the Gaussian noise variance to the diagonal.

        Returns
        -------
        mean : ndarray of shape (n, n_features)
            Predictive mean.
        var : ndarray of shape (n, n_features) or (n, n_features, n_features)
            Predictive variance (or covariance).
        """
        check_is_fitted(self)
        mean = check_latent_points("mean", mean, self.n_components)
        var = check_latent_points("var", var, self.n_components, mean.shape[0])
        if np.any(var < 0):
            raise ValueError("var must be non-negative.")
        with threads(self.n_jobs):
            m, v = self._predictive().moments(mean, var, full_cov,
                                              self.noise_variance_ if include_noise else None)
        scale = np.outer(self.X_scale_, self.X_scale_) if full_cov else self.X_scale_ ** 2
        return m * self.X_scale_ + self.X_mean_, v * scale

    def inverse_transform(self, X, return_std=False, latent_var=None, include_noise=True):
        """Map latent points to data space (predictive mean).

        Parameters
        ----------
        X : array-like of shape (n, n_components)
            Latent points.
        return_std : bool, default=False
            Also return per-output predictive standard deviations.
        latent_var : array-like of shape (n, n_components), default=None
            Latent variances; when given the uncertain-input moments (Girard et al. 2003) are used.
        include_noise : bool, default=True
            Include the noise variance in the standard deviation.

        Returns
        -------
        Y : ndarray of shape (n, n_features)
            Predictive mean.
        std : ndarray of shape (n, n_features)
            Predictive standard deviation (only if ``return_std``).
        """
        check_is_fitted(self)
        X = check_latent_points("X", X, self.n_components)
        if latent_var is not None:
            m, v = self.predict_uncertain(X, latent_var, include_noise=include_noise)
            return (m, np.sqrt(v)) if return_std else m
        with threads(self.n_jobs):
            m, v = self._predictive().moments(
                X, noise_variance=self.noise_variance_ if include_noise else None)
        m = m * self.X_scale_ + self.X_mean_
        return (m, np.sqrt(v) * self.X_scale_) if return_std else m

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # missing at random: the bound skips NaN entries
        # MC nodes come from random_state: reproducible, no non_deterministic tag
        return tags
