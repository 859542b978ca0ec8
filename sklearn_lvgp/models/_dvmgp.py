"""DVMGP: deep variational Mahalanobis Gaussian process regression (de Souza 2020, ch. 4)."""


import numbers
import warnings

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, RegressorMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._core.init import pca_components_of_scatter
from .._core.linalg import settled_jitter
from .._core.parallel import threads
from .._core.scaling import NORMALIZE_OPTIONS, normalization
from .._core.validation import (
    check_bool,
    check_data_scale,
    check_float,
    check_int,
    check_min_samples,
    check_n_inducing,
    check_option,
)
from ..base import _BaseLVGPRegressor
from ..bounds._dvmgp import (
    RowData,
    dvmgp_initial_blocks,
    dvmgp_objective,
    dvmgp_packer,
    qv_cholesky,
)
from ..bounds._dvmgp_predictive import DVMGPPredictive
from ..engine._dask import DaskRows, _dask, gather_rows, is_dask_collection, map_row_blocks
from ..optim._lbfgsb import minimize_adam, minimize_lbfgsb
from ..variational._projection import output_kernel, projection_kernels

__all__ = ["DVMGP"]

#: Training rows of a fit on Dask gathered to the driver for the initial k-means centres.
INIT_ROWS = 20_000


class DVMGP(ClassNamePrefixFeaturesOutMixin, TransformerMixin, RegressorMixin, _BaseLVGPRegressor):
    """Deep variational Mahalanobis Gaussian process regressor.

    A two-layer model (de Souza 2020, ch. 4): every input is mapped to a latent point
    ``z = W(x) x`` by an input-dependent Q×D projection whose entries are GPs over x (row q shares
    an ARD-RBF kernel of variance κ_q²), and the output is a GP with a standard RBF kernel scaled
    by σ_f on the latent space. q(W) is sparse (``n_inducing_projection`` inducing inputs Ξ,
    Gaussian q(V) per entry with covariance shared along each row), q(u) of the output layer is
    integrated out, and each latent point is Gaussian under q, so the bound is the collapsed
    Bayesian-GPLVM bound with closed-form RBF Ψ-statistics at those Gaussians minus KL(q(V)‖p(V)).

    Parameters
    ----------
    n_components : int, default=None
        Latent dimension Q; ``None`` is the number of features.
    n_inducing : int, default=50
        Inducing inputs m_u of the output GP (in latent space); at most n_samples.
    n_inducing_projection : int, default=25
        Inducing inputs m_v of the projection GPs (in input space); at most n_samples.
    qv_covariance : {"diag", "full"}, default="diag"
        Shape of the q(V) covariance Σ_q shared by the entries of row q: diagonal, or a full
        lower-triangular Cholesky factor.
    optimizer : {"lbfgs", "adam"}, default="lbfgs"
        L-BFGS-B, or full-batch Adam (the paper's choice).
    n_iter_fixed_noise : int, default=100
        Iterations of a first phase with the noise variance held at its initial value; then
        ``max_iter`` iterations train everything, Adam restarting with a fresh state. The paper's
        schedule is ``optimizer="adam", learning_rate=0.01, n_iter_fixed_noise=2000,
        max_iter=5000``. ``0`` skips the first phase.
    max_iter : int, default=1000
        Iterations of the second phase.
    tol : float or None, default=None
        Second phase: Adam stops when the mean bound over 100 steps improves by less than
        ``tol`` (relative) on the 100 before, L-BFGS-B when 100 iterations improved it by less;
        with early stopping, the relative gain a held-out check needs (``None``: 1e-4).
        ``None``: the fixed Adam budget and scipy's tests for L-BFGS-B. A second phase that
        reaches ``max_iter`` first emits ``ConvergenceWarning``.
    early_stopping : bool, default=False
        Adam only: hold out ``validation_fraction`` of the rows and end the second phase when
        their mean log predictive density has not improved for ``n_iter_no_change`` checks
        (every 100 steps), keeping the best checked state.
    validation_fraction : float, default=0.1
        Held-out fraction for early stopping.
    n_iter_no_change : int, default=5
        Patience of early stopping, in checks.
    learning_rate : float, default=0.01
        Adam step size.
    noise_variance_init : float, default=0.01
        Initial noise variance as a fraction of the (normalised) target variance.
    projection_length_scale_init : float, default=None
        Initial length scales of the W-kernels ``k_q`` (standardised input units). ``None`` is
        ``sqrt(max(D, 2) / 2)``: 1 for two features, as in the paper, and growing with D so
        that two typical inputs stay as correlated a priori as in two dimensions. The paper's
        fixed value 1 leaves ``W(x)`` at its zero prior mean, with variance κ_q² ‖x‖², away
        from the few Ξ in higher dimensions, and the fit collapses to noise.
    normalize_X : {"standardize", "center", "none"}, default="standardize"
        Normalisation of the inputs with training statistics. The projection ``W(x) x``
        vanishes at ``x = 0``, so the origin matters and standardising is advised.
    normalize_y : bool, default=True
        Standardise the targets; predictions are returned in the original units.
    jitter : float, default=1e-6
        Relative jitter on ``K_u`` and on each ``K_v`` (times their mean diagonal).
    random_state : int, RandomState instance or None, default=None
        Seeds the K-means initialisation of the inducing inputs.
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
        Continue from the previous fit's parameters, standardisation and jitter when the data
        and the model have the same shapes (otherwise fit afresh): only the second phase runs
        (``max_iter`` iterations; Adam's moments restart), and ``n_iter_``/``elbo_history_``
        accumulate.

    Attributes
    ----------
    inducing_inputs_ : ndarray of shape (n_inducing, n_components)
        Inducing inputs ζ of the output GP.
    inducing_inputs_projection_ : ndarray of shape (n_inducing_projection, n_features)
        Inducing inputs Ξ of the projection GPs (in standardised input space).
    qv_mean_ : ndarray of shape (n_components, n_features, n_inducing_projection)
        Means μ_qd of q(v_qd).
    qv_chol_ : ndarray of shape (n_components, n_inducing_projection) or \
            (n_components, n_inducing_projection, n_inducing_projection)
        Cholesky diagonal (or lower factor) of Σ_q.
    projection_kernels_ : list of RBF
        The fitted W-kernels ``k_q``.
    signal_std_ : float
        Output scale σ_f.
    noise_variance_ : float
        Noise variance σ² (in normalised target units).
    relevance_ : ndarray of shape (n_components,)
        κ_q², the variance of ``k_q``: the relevance of latent dimension q.
    elbo_ : float
        Final evidence lower bound (normalised units).
    elbo_history_ : ndarray
        Bound after each iteration of both phases.
    n_iter_ : int
        Total optimiser iterations.
    validation_scores_ : ndarray or None
        Held-out mean log predictive density (normalised targets) at each check of the second
        phase with ``early_stopping=True``; ``None`` without early stopping.
    X_mean_, X_scale_ : ndarray of shape (n_features,)
        Input normalisation, ``(X - X_mean_) / X_scale_``.
    y_mean_, y_scale_ : ndarray of shape (n_targets,)
        Target standardisation.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of str
        Names of the features seen during fit, when they are all strings.

    Notes
    -----
    ``fit`` takes a :class:`dask.array.Array` or a dask DataFrame (``y`` as well). The rows stay
    partitioned where they live: every evaluation of the bound, in both phases and with either
    optimiser, runs on the partitions, which return M-sized partial sums (Gal, van der Wilk &
    Rasmussen 2014). The standardisation and the target variance are dask reductions; the PCA
    directions that start the q(V) means are the eigenvectors of the D × D covariance of the
    training rows (a dask reduction); the k-means centres that start Ξ and ζ come from at most
    20 000 training rows gathered to the driver (all of them for smaller data, so the fit then
    equals the in-memory one up to rounding; else a uniform sample drawn from
    ``random_state``). With ``early_stopping`` the held-out rows are gathered for their score.
    ``predict`` (without ``return_cov``) and ``transform`` of a dask input return dask arrays.

    References
    ----------
    de Souza, D. A. R. M. A. (2020). Contributions on latent projections for Gaussian process
    modeling. MSc dissertation, Universidade Federal do Ceará, ch. 4.

    Titsias, M. K., Lázaro-Gredilla, M. (2013). Variational inference for Mahalanobis distance
    metrics in Gaussian process regression. NeurIPS.

    Gal, Y., van der Wilk, M., Rasmussen, C. E. (2014). Distributed variational inference in
    sparse Gaussian process regression and latent variable models. NeurIPS.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp import DVMGP
    >>> rng = np.random.RandomState(0)
    >>> X = rng.standard_normal((60, 2))
    >>> y = np.sin(X[:, 0]) + 0.05 * rng.standard_normal(60)
    >>> model = DVMGP(n_inducing=10, n_inducing_projection=5, max_iter=50, random_state=0)
    >>> model.fit(X, y).predict(X[:3]).shape
    (3,)
    """

    def __init__(self, n_components=None, n_inducing=50, n_inducing_projection=25,
                 qv_covariance="diag", optimizer="lbfgs", n_iter_fixed_noise=100, max_iter=1000,
                 tol=None, early_stopping=False, validation_fraction=0.1, n_iter_no_change=5,
                 learning_rate=0.01, noise_variance_init=0.01,
                 projection_length_scale_init=None, normalize_X="standardize",
                 normalize_y=True, jitter=1e-6, random_state=None, n_jobs=None, verbose=0,
                 callback=None, warm_start=False):
        self.n_components = n_components
        self.n_inducing = n_inducing
        self.n_inducing_projection = n_inducing_projection
        self.qv_covariance = qv_covariance
        self.optimizer = optimizer
        self.n_iter_fixed_noise = n_iter_fixed_noise
        self.max_iter = max_iter
        self.tol = tol
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.learning_rate = learning_rate
        self.noise_variance_init = noise_variance_init
        self.projection_length_scale_init = projection_length_scale_init
        self.normalize_X = normalize_X
        self.normalize_y = normalize_y
        self.jitter = jitter
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.warm_start = warm_start

    # ----------------------------------------------------------------------------- checks
    def _check_params(self, X, y):
        name = type(self).__name__
        check_min_samples(X.shape[0], name)
        check_int("n_components", self.n_components, min_value=1, allow_none=True)
        check_n_inducing(self.n_inducing, X.shape[0], name)
        M = check_int("n_inducing_projection", self.n_inducing_projection, min_value=1)
        if M > X.shape[0]:
            raise ValueError(
                f"{name} needs at least n_inducing_projection={M} samples, got n_samples = "
                f"{X.shape[0]}. Lower n_inducing_projection or pass more data.")
        check_option("qv_covariance", self.qv_covariance, ("diag", "full"))
        check_option("optimizer", self.optimizer, ("lbfgs", "adam"))
        check_int("n_iter_fixed_noise", self.n_iter_fixed_noise, min_value=0)
        check_int("max_iter", self.max_iter, min_value=1)
        check_float("tol", self.tol, 0.0, allow_none=True)
        self._check_early_stopping(X.shape[0])
        if self.early_stopping and self.optimizer != "adam":
            raise ValueError("early_stopping applies to optimizer='adam' (L-BFGS-B stops on its "
                             f"own tests); got optimizer={self.optimizer!r}.")
        n_train = X.shape[0] - max(1, int(round(self.validation_fraction * X.shape[0])))
        if self.early_stopping and max(self.n_inducing, M) > n_train:
            raise ValueError(
                f"early_stopping leaves {n_train} training rows, fewer than n_inducing="
                f"{self.n_inducing} or n_inducing_projection={M}; lower them or "
                "validation_fraction.")
        check_float("learning_rate", self.learning_rate, 0.0, exclusive_min=True)
        check_float("noise_variance_init", self.noise_variance_init, 0.0, exclusive_min=True)
        check_float("projection_length_scale_init", self.projection_length_scale_init, 0.0,
                    exclusive_min=True, allow_none=True)
        check_option("normalize_X", self.normalize_X, NORMALIZE_OPTIONS)
        check_bool("normalize_y", self.normalize_y)
        check_float("jitter", self.jitter, 0.0)
        check_bool("warm_start", self.warm_start)

    # -------------------------------------------------------------------------------- fit
    def _sizes(self, D):
        """``(Q, m_u, m_v)``: the latent dimension and the two numbers of inducing inputs."""
        Q = D if self.n_components is None else int(self.n_components)
        return Q, int(self.n_inducing), int(self.n_inducing_projection)

    def _architecture(self, D, D_y):
        """What a ``warm_start`` fit must share with the previous one to continue it."""
        return (D, D_y, *self._sizes(D), self.qv_covariance, self.normalize_X,
                bool(self.normalize_y), bool(self.early_stopping),
                float(self.validation_fraction))

    def _packer(self, Q, D, m_u, m_v):
        return dvmgp_packer(self.qv_covariance, Q, D, m_u, m_v)

    def _length_scale_init(self, D):
        """Initial length scale of the W-layer kernels (``projection_length_scale_init`` if set)."""
        if self.projection_length_scale_init is not None:
            return float(self.projection_length_scale_init)
        # keeps E‖x − x'‖² / ℓ² = 4 for standardised inputs, the paper's value at D = 2 (ℓ = 1)
        return float(np.sqrt(max(D, 2) / 2.0))

    def _fit(self, X, y, random_state):
        """Standardise, hold out the early-stopping rows, optimise and commit."""
        Y = self._targets_2d(y)
        continuing = self._continues_fit(self._architecture(X.shape[1], Y.shape[1]))
        if not continuing:
            self.X_mean_, self.X_scale_ = normalization(X, self.normalize_X)
            self.y_mean_, self.y_scale_ = self._target_moments(Y)
        Xs, Ys, held_out = self._held_out((X - self.X_mean_) / self.X_scale_,
                                          (Y - self.y_mean_) / self.y_scale_, random_state)
        var_y = float(np.mean(np.var(Ys, axis=0)))
        fitted = self._optimise_phases(continuing, (Xs, Ys), held_out, var_y, random_state,
                                       lambda: (Xs, None), X.shape[1])
        return self._commit(*fitted, (Xs, Ys))

    def _fit_dask(self, X, y, random_state):
        """The fit on dask collections: the bound runs on the partitions of the standardised
        rows (see the Notes); with ``early_stopping`` on those of the training rows, the rows
        split by the same permutation as in memory."""
        dask, _ = _dask()
        if y is None:
            raise ValueError("DVMGP requires y to be passed, but the target y is None.")
        rows = DaskRows({"X": X, "y": y})
        X_d, Y_d = rows.arrays["X"], rows.arrays["y"]
        self._set_dask_features(rows)
        self._check_params(X_d, Y_d)
        self._y_ndim = 1 if len(y.shape) == 1 else 2
        N, D = X_d.shape
        Q, m_u, m_v = self._sizes(D)
        continuing = self._continues_fit(self._architecture(D, Y_d.shape[1]))
        if not continuing:
            self.X_mean_, self.X_scale_, self.y_mean_, self.y_scale_ = (
                np.asarray(a, dtype=np.float64)
                for a in dask.compute(*normalization(X_d, self.normalize_X),
                                      *self._target_moments(Y_d)))
        srows = DaskRows({"X": (X_d - self.X_mean_) / self.X_scale_,
                          "Y": (Y_d - self.y_mean_) / self.y_scale_})
        Xs_d, Ys_d = srows.arrays["X"], srows.arrays["Y"]
        if self.early_stopping:
            perm = random_state.permutation(N)
            n_val = max(1, int(round(self.validation_fraction * N)))
            train = perm[n_val:]
            held_out = (gather_rows(Xs_d, perm[:n_val]), gather_rows(Ys_d, perm[:n_val]))
            data = RowData(srows.subset(train), train.size, Ys_d.shape[1])
            Xs_train, Ys_train = Xs_d[np.sort(train)], Ys_d[np.sort(train)]
        else:
            train, held_out = np.arange(N), None
            data = RowData(srows, N, Ys_d.shape[1])
            Xs_train, Ys_train = Xs_d, Ys_d
        var_y = float(Ys_train.var(axis=0).mean().compute())

        def start():
            # k-means on at most INIT_ROWS training rows (a sample drawn after the k-means
            # seed), PCA from the covariance of all of them (a reduction)
            n_init = max(INIT_ROWS, m_u, m_v)
            idx = (train if train.size <= n_init
                   else np.sort(random_state.choice(train, n_init, replace=False)))
            Xc = Xs_train - Xs_train.mean(axis=0)
            scatter, spread = dask.compute(Xc.T @ Xc,
                                           Xs_train.max(axis=0) - Xs_train.min(axis=0))
            return (gather_rows(Xs_d, idx),
                    pca_components_of_scatter(scatter, spread, train.size, Q))

        fitted = self._optimise_phases(continuing, (data, None), held_out, var_y, random_state,
                                       start, D)
        return self._commit(*fitted, (data, None))

    def _optimise_phases(self, continuing, data, held_out, var_y, random_state, start, D):
        """The two phases (noise fixed, then everything) from the initial blocks of de Souza
        (2020, §4.4), or, for a ``warm_start`` fit of the same structure, the second phase
        from the previous parameters and jitter (iterations and bound history accumulate).

        ``data``: the standardised training ``(X, Y)``, or ``(RowData, None)``; ``held_out``:
        the normalised ``(X, Y)`` of early stopping, or ``None``; ``start()``: the rows the
        k-means start from and the PCA directions (``None``: from those rows). Returns the
        flat parameters, their packer, the jitter, the bound history and the iteration count.
        """
        Q, m_u, m_v = self._sizes(D)
        packer = self._packer(Q, D, m_u, m_v)
        var_y = var_y if var_y > 0 else 1.0
        if continuing:
            x, jitter = packer.pack(self._params), self._jitter
            history, n_iter = [self.elbo_history_], self.n_iter_
            phases = [(int(self.max_iter), False)]
        else:
            # an int random_state seeds K-means directly (19960111 reproduces the paper's init)
            seed = (int(self.random_state) if isinstance(self.random_state, numbers.Integral)
                    else int(random_state.randint(np.iinfo(np.int32).max)))
            rows, P = start()
            params0 = dvmgp_initial_blocks(rows, Q, m_u, m_v, seed, self._length_scale_init(D),
                                           self.noise_variance_init, var_y, P=P)
            jitter = settled_jitter(output_kernel(params0["signal_std"], Q).K(params0["zeta"]),
                                    self.jitter, name="K_u", scale=var_y)
            x = packer.pack(params0)
            history, n_iter = [], 0
            phases = [(int(self.n_iter_fixed_noise), True), (int(self.max_iter), False)]
        self.validation_scores_ = None
        for budget, fix_noise in phases:
            if budget == 0:
                continue
            x, hist, n, checks = self._phase(packer, x, data, jitter, budget, fix_noise, var_y,
                                             None if fix_noise else held_out)
            history.append(-np.asarray(hist))
            n_iter += n
            if checks is not None:
                self.validation_scores_ = np.asarray(checks)
        history = np.concatenate(history) if history else np.zeros(0)
        return x, packer, jitter, history, n_iter

    def _phase(self, packer, x0, data, jitter, budget, fix_noise, var_y, held_out):
        """One optimiser phase of ``budget`` iterations, the noise held at its start if
        ``fix_noise``. Returns the parameters, the minimised objective at every iteration,
        the iterations run and the held-out scores (``None`` without early stopping)."""
        noise = packer.slice("noise")
        workspaces = []  # the chunks' buffers, reused by every evaluation of this phase

        def objective(flat):
            p = packer.unpack(flat)
            value, grads, _ = dvmgp_objective(*data, p, jitter, self.qv_covariance,
                                              workspaces=workspaces)
            g = -packer.pack_grad(grads, p)
            if fix_noise:
                g[noise] = 0.0
            return -value, g

        def score(flat):
            """Mean log predictive density of the held-out rows (early stopping)."""
            p = packer.unpack(flat)
            post = dvmgp_objective(*data, p, jitter, self.qv_covariance)[2]
            log_density = DVMGPPredictive(p, post, self.qv_covariance, jitter).log_density
            return float(np.mean(log_density(*held_out).sum(axis=1)))

        name = type(self).__name__ + (" (noise fixed)" if fix_noise else "")
        tol = None if fix_noise else self.tol  # the first phase is a fixed budget
        if self.optimizer == "adam":
            with warnings.catch_warnings():
                if fix_noise:  # a fixed budget, not a convergence target
                    warnings.simplefilter("ignore", ConvergenceWarning)
                res = minimize_adam(objective, x0, learning_rate=self.learning_rate,
                                    max_iter=budget, tol=tol if held_out is None else None,
                                    window=100, verbose=self.verbose, name=name,
                                    validation=None if held_out is None else score,
                                    n_iter_no_change=self.n_iter_no_change,
                                    validation_tol=1e-4 if self.tol is None else self.tol)
            return res.x, res.history, res.n_iter, res.validation_history
        bounds = np.full((packer.size, 2), [-np.inf, np.inf])
        bounds[packer.slice("wtheta")] = np.log([1e-5, 1e5])
        bounds[noise] = ([x0[noise][0]] * 2 if fix_noise
                         else np.log([1e-8 * var_y, 1e3 * var_y]))
        with warnings.catch_warnings():
            if fix_noise:  # a fixed budget, not a convergence target
                warnings.simplefilter("ignore", ConvergenceWarning)
            res = minimize_lbfgsb(objective, x0, bounds=bounds, max_iter=budget,
                                  verbose=self.verbose, name=name, stop_tol=tol)
        return res.x, res.history, res.n_iter, None

    def _commit(self, x, packer, jitter, history, n_iter, data):
        """The fitted state at the final parameters ``x`` (the bound on the training ``data``,
        as in :meth:`_optimise_phases`)."""
        p = packer.unpack(x)
        value, _, post = dvmgp_objective(*data, p, jitter, self.qv_covariance, max_tries=6)
        self._params, self._jitter, self._post = p, jitter, post
        self.elbo_ = float(value)
        self.elbo_history_ = history
        self.n_iter_ = n_iter
        self.inducing_inputs_ = p["zeta"]
        self.inducing_inputs_projection_ = p["Xi"]
        self.qv_mean_ = np.ascontiguousarray(np.swapaxes(p["mu"], 1, 2))
        self.qv_chol_ = qv_cholesky(p, self.qv_covariance)
        self.projection_kernels_ = projection_kernels(p["wtheta"])
        self.signal_std_ = float(p["signal_std"])
        self.noise_variance_ = float(p["noise"])
        self.relevance_ = np.exp(p["wtheta"][:, 0])
        return self

    # --------------------------------------------------------------------------- prediction
    def _standardise(self, X):
        Xs = self._standardised_inputs(X)
        check_data_scale("X (standardised with the training statistics)", Xs, spread=False)
        return Xs

    def _predictive(self):
        """The fitted predictive distribution (normalised units)."""
        return DVMGPPredictive(self._params, self._post, self.qv_covariance, self._jitter)

    def predict(self, X, return_std=False, return_cov=False):
        """Predictive mean (and standard deviation or joint covariance) of y at new inputs.

        The predictive distribution is not Gaussian (W is uncertain); these are its exact first
        two moments (de Souza 2020, §4.3.1, with the noise variance counted once). The joint
        covariance integrates over the joint q(W) of all the inputs: their latent points are
        correlated through the W-layer GPs (see
        :func:`sklearn_lvgp.bounds._joint_uncertain.rbf_joint_moments`); it costs
        O(n² m_u² Q) for n inputs.

        Parameters
        ----------
        X : array-like or dask array of shape (n, n_features)
            Inputs; a dask array or DataFrame gives dask arrays, computed partition by
            partition (``return_cov`` is then not available).
        return_std : bool, default=False
            Also return the predictive standard deviation of y, noise included.
        return_cov : bool, default=False
            Also return the joint predictive covariance of y across the inputs, noise included
            on the diagonal (shape (n, n), or (n, n, n_targets) for several targets).

        Returns
        -------
        mean : ndarray of shape (n,) or (n, n_targets)
            Predictive mean in the original target units.
        std : ndarray of shape (n,) or (n, n_targets)
            Predictive standard deviation (only if ``return_std``).
        cov : ndarray of shape (n, n) or (n, n, n_targets)
            Joint predictive covariance (only if ``return_cov``).
        """
        if return_std and return_cov:
            raise ValueError("At most one of return_std or return_cov can be requested.")
        if is_dask_collection(X):
            return self._predict_on_partitions(X, return_std, return_cov)
        Xs = self._standardise(X)
        if return_cov:
            with threads(self.n_jobs):
                m, cov = self._predictive().joint(Xs)
            mean = self._target_shape(m * self.y_scale_ + self.y_mean_)
            cov = cov * (self.y_scale_ ** 2)[None, None, :]
            return mean, (cov[:, :, 0] if self._y_ndim == 1 else cov)
        with threads(self.n_jobs):
            m, v = self._predictive().moments(Xs)
        mean = self._target_shape(m * self.y_scale_ + self.y_mean_)
        if not return_std:
            return mean
        return mean, self._target_shape(np.sqrt(v) * self.y_scale_)

    def predict_log_density(self, X, y):
        """Per-point log predictive density of the targets, in nats (original units).

        The Gaussian with the predictive moments of :meth:`predict` is used, as for the NLPD of
        de Souza (2020, §4.4); with several targets the per-target log densities are summed.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Inputs.
        y : array-like of shape (n,) or (n, n_targets)
            Targets.

        Returns
        -------
        log_density : ndarray of shape (n,)
            ``log N(y_i | mean_i, var_i)``.
        """
        Xs = self._standardise(X)
        Y = self._check_targets(y, Xs.shape[0], self.y_mean_.shape[0])
        # in standardised units, less the log of the scale (its square overflows beyond ~1e154)
        Ys = (Y - self.y_mean_) / self.y_scale_
        with threads(self.n_jobs):
            log_density = self._predictive().log_density(Xs, Ys)
        return (log_density - np.log(self.y_scale_)).sum(axis=1)

    def transform(self, X, return_std=False):
        """Latent projection ``E[W(x)] x`` of inputs (the map of de Souza 2020, Fig. 7).

        Parameters
        ----------
        X : array-like or dask array of shape (n, n_features)
            Inputs (original units; standardised internally as in fit); a dask array or
            DataFrame gives dask arrays, computed partition by partition.
        return_std : bool, default=False
            Also return the latent standard deviations, the square roots of
            η(x) = Var[w_q·(x)]‖x‖².

        Returns
        -------
        mean : ndarray of shape (n, n_components)
            Latent means h(x).
        std : ndarray of shape (n, n_components)
            Latent standard deviations (only if ``return_std``).
        """
        if is_dask_collection(X):
            check_is_fitted(self)
            return map_row_blocks(lambda b: self.transform(b, return_std=return_std), X,
                                  self.inducing_inputs_.shape[1], 2 if return_std else 1)
        Xs = self._standardise(X)
        with threads(self.n_jobs):
            h, eta = self._predictive().latent(Xs)
        return (h, np.sqrt(eta)) if return_std else h

    def sample_y(self, X, n_samples=1, random_state=0):
        """Draw targets from the predictive distribution at each input.

        Each draw samples the latent point z ~ N(h(x), diag η(x)) (i.e. W from its q marginals),
        then f | z under the collapsed q(u), then the noise. Rows are drawn independently from
        their own predictive distributions (not jointly across rows).

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Inputs.
        n_samples : int, default=1
            Draws per input.
        random_state : int, RandomState instance or None, default=0
            Source of the draws.

        Returns
        -------
        y_samples : ndarray of shape (n, n_samples) or (n, n_targets, n_samples)
            Draws in the original target units.
        """
        Xs = self._standardise(X)
        S = check_int("n_samples", n_samples, min_value=1)
        rs = check_random_state(random_state)
        with threads(self.n_jobs):
            out = self._predictive().sample(Xs, S, rs)
        out = out * self.y_scale_ + self.y_mean_
        return out[:, :, 0] if self._y_ndim == 1 else np.ascontiguousarray(np.swapaxes(out, 1, 2))

    @property
    def _n_features_out(self):
        return self.inducing_inputs_.shape[1]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
