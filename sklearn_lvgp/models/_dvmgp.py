"""DVMGP: deep variational Mahalanobis Gaussian process regression (de Souza 2020, ch. 4)."""


import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, RegressorMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._core.parallel import threads
from .._core.scaling import NORMALIZE_OPTIONS
from .._core.validation import (
    check_bool,
    check_data_scale,
    check_early_stopping,
    check_float,
    check_int,
    check_n_inducing,
    check_option,
)
from ..base import _BaseLVGPRegressor
from ..bounds._joint_uncertain import rbf_joint_moments
from ..engine._dask import is_dask_collection, map_row_blocks
from ..likelihoods._gaussian import gaussian_log_density
from ..variational._projection import latent_covariance, projection_kernels
from ._dvmgp_dask import fit_dvmgp_dask
from ._dvmgp_parts import (
    _chol,
    _elbo_and_grads,
    fit_parameters,
    latent_points,
    length_scale_init,
    make_packer,
    output_moments,
    sample_targets,
)

__all__ = ["DVMGP"]

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
        ``None``: the fixed Adam budget and scipy's tests for L-BFGS-B.
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
        Print optimisation progress when > 0.
    callback : callable or None, default=None
        ``callback(estimator, info)`` after every optimiser iteration of ``fit``; ``info`` is a
        dict with ``iteration``, ``stage`` (``"lbfgs"`` or ``"adam"``), ``objective`` (the
        bound or its minibatch estimate), ``elapsed`` seconds and, at held-out checks,
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
        if X.shape[0] < 2:
            raise ValueError(f"{name} needs at least 2 samples, got n_samples = {X.shape[0]}.")
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
        check_early_stopping(self, X.shape[0])
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
    def _packer(self, Q, D, m_u, m_v):
        return make_packer(self.qv_covariance, Q, D, m_u, m_v)

    def _fit(self, X, y, random_state):
        x, packer, jitter, history, n_iter, Xs, Ys = fit_parameters(self, X,
                                                                     self._targets_2d(y),
                                                                     random_state)
        return self._commit(x, packer, jitter, history, n_iter, Xs, Ys)

    def _fit_dask(self, X, y, random_state):
        *fitted, data = fit_dvmgp_dask(self, X, y, random_state)
        return self._commit(*fitted, data, None)

    def _commit(self, x, packer, jitter, history, n_iter, Xs, Ys):
        """The fitted state at the final parameters ``x`` (the bound on the training rows
        ``Xs``, ``Ys``, or on their :class:`~sklearn_lvgp.models._dvmgp_parts.RowData`)."""
        p = packer.unpack(x)
        self._params = p
        self._jitter = jitter
        value, _, post = _elbo_and_grads(Xs, Ys, p, jitter, self.qv_covariance, max_tries=6)
        self._post = post
        self.elbo_ = float(value)
        self.elbo_history_ = history
        self.n_iter_ = n_iter
        self.inducing_inputs_ = p["zeta"]
        self.inducing_inputs_projection_ = p["Xi"]
        self.qv_mean_ = np.ascontiguousarray(np.swapaxes(p["mu"], 1, 2))
        self.qv_chol_ = _chol(p, self.qv_covariance)
        self.projection_kernels_ = projection_kernels(p["wtheta"])
        self.signal_std_ = float(p["signal_std"])
        self.noise_variance_ = float(p["noise"])
        self.relevance_ = np.exp(p["wtheta"][:, 0])
        return self

    def _length_scale_init(self, D):
        return length_scale_init(self.projection_length_scale_init, D)

    # --------------------------------------------------------------------------- prediction
    def _standardise(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        Xs = (X - self.X_mean_) / self.X_scale_
        check_data_scale("X (standardised with the training statistics)", Xs, spread=False)
        return Xs

    def _latent(self, Xs):
        return latent_points(self._params, self.qv_covariance, self._jitter, Xs)

    def _moments_normalised(self, Xs):
        """Mean and variance of y* (noise included) in normalised units (de Souza 2020, §4.3.1)."""
        return output_moments(self._params, self._post, self.qv_covariance, self._jitter, Xs)

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
                m, cov = self._joint_normalised(Xs)
            mean = self._target_shape(m * self.y_scale_ + self.y_mean_)
            cov = cov * (self.y_scale_ ** 2)[None, None, :]
            return mean, (cov[:, :, 0] if self._y_ndim == 1 else cov)
        with threads(self.n_jobs):
            m, v = self._moments_normalised(Xs)
        mean = self._target_shape(m * self.y_scale_ + self.y_mean_)
        if not return_std:
            return mean
        return mean, self._target_shape(np.sqrt(v) * self.y_scale_)

    def _joint_normalised(self, Xs):
        """Mean and joint covariance of y* (noise on the diagonal), normalised units."""
        p = self._params
        h, _ = self._latent(Xs)
        C = latent_covariance(Xs, p["Xi"], p["mu"], _chol(p, self.qv_covariance),
                              projection_kernels(p["wtheta"]), self._jitter)
        mean, cov = rbf_joint_moments(self._post, self.inducing_inputs_,
                                      self.signal_std_ ** 2, h, C)
        idx = np.arange(Xs.shape[0])
        cov[idx, idx, :] += self.noise_variance_
        return mean, cov

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
        with threads(self.n_jobs):
            m, v = self._moments_normalised(Xs)
        # in standardised units, less the log of the scale (its square overflows beyond ~1e154)
        Ys = (Y - self.y_mean_) / self.y_scale_
        return (gaussian_log_density(Ys, m, v) - np.log(self.y_scale_)).sum(axis=1)

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
            h, eta = self._latent(Xs)
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
            h, eta = self._latent(Xs)
            out = sample_targets(self._post, self.inducing_inputs_, self.signal_std_,
                                 self.noise_variance_, h, eta, S, self.y_mean_.shape[0], rs)
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

