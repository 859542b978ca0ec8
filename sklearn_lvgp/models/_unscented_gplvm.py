"""UnscentedGPLVM: Bayesian GPLVM whose Ψ-statistics work for any kernel (de Souza et al. 2021)."""


import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._core.parallel import threads
from .._core.validation import check_finite_array
from ..base import _BaseLVGP
from ..bounds._collapsed_global import predictive_moments
from ..engine._dask import is_dask_collection, map_row_blocks
from ..expectations import PointRule, monte_carlo_rule
from ..optim._alternating import heldout_objective
from ._unscented_gplvm_dask import fit_gplvm_dask
from ._unscented_gplvm_fit import fit_in_memory
from ._unscented_gplvm_predict import heldout_scores, latents_for, uncertain_moments
from ._unscented_gplvm_setup import check_params, elbo_and_grads, initial_means

__all__ = ["UnscentedGPLVM"]


class UnscentedGPLVM(ClassNamePrefixFeaturesOutMixin, TransformerMixin, _BaseLVGP):
    """Bayesian Gaussian-process latent variable model with any kernel.

    Fits q(x_n) = N(μ_n, diag S_n) for every row by maximising the collapsed variational bound of
    Titsias & Lawrence (2010). The kernel expectations (Ψ-statistics) are computed in closed form
    where one exists (RBF, linear and their sums) or with a point-set rule — the unscented
    transform (2Q points; Souza et al. 2021), Gauss–Hermite or Monte Carlo — for any kernel.

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
        How the data are normalised before fitting: subtract the column means, also divide by
        the column standard deviations (predictions, ``inverse_transform`` and
        ``score_samples`` are in the original units either way), or use them as they are (the
        paper's experiments).
    optimizer : {"auto", "lbfgs", "alternating", "adam"}, default="auto"
        ``"lbfgs"``: one L-BFGS-B over all parameters. ``"alternating"``: rounds of a local
        step (each chunk of rows improves its q(x_n) with the model fixed, in parallel) and a
        global step (L-BFGS-B over Z, θ and σ²), as Gal, van der Wilk & Rasmussen (2014) do;
        memory then holds no optimiser state per row (``max_iter`` counts rounds). ``"auto"``
        is Adam for Monte Carlo, ``"alternating"`` from 100 000 rows and L-BFGS-B below.
    max_iter : int, default=2000
        Maximum optimiser iterations (rounds with ``"alternating"``).
    tol : float, default=None
        Optimiser tolerance (L-BFGS-B ``ftol``/``gtol``; Adam windowed relative change).
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
        Iterations of each new row's own L-BFGS when inferring its latent q(x*) (every row is
        its own problem, with its own convergence test).
    jitter : float, default=1e-6
        Relative jitter on ``Kuu`` (escalated with a warning if needed).
    random_state : int, RandomState instance or None, default=None
        Seeds the inducing-point choice, random initialisations, Monte Carlo nodes and kernel
        initialisation (e.g. network weights).
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
        ``normalize_X`` does not centre or scale).
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
                 tol=None, early_stopping=False, validation_fraction=0.1, n_iter_no_change=5,
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

    # ----------------------------------------------------------------------------- checks
    def _check_params(self, X, y):
        check_params(self, X)

    # -------------------------------------------------------------------------------- fit
    def _initial_means(self, Y, Q, random_state):
        return initial_means(self, Y, Q, random_state)

    def _fit(self, X, y, random_state):
        return fit_in_memory(self, X, random_state)

    def _fit_dask(self, X, y, random_state):
        if self.early_stopping:
            raise ValueError("early_stopping is not available for a Dask array input.")
        return fit_gplvm_dask(self, X, random_state)

    def _elbo_and_grads(self, kernel, Y, p, rule, jitter, max_tries=0, bound=None):
        """ELBO (collapsed bound − KL), its gradient wrt each constrained block, the posterior.

        ``bound``: the fit's :class:`~sklearn_lvgp.engine.CollapsedPsiBound` of ``Y`` (chunks,
        threads and buffers reused from one evaluation to the next); ``None`` makes one.
        """
        return elbo_and_grads(kernel, Y, p, rule, jitter, max_tries, bound)

    def _finalise(self, Y, bound=None):
        p = {"mu": self.latent_mean_, "S": self.latent_variance_, "Z": self.inducing_inputs_,
             "noise": self.noise_variance_}
        elbo, _, post = self._elbo_and_grads(self.kernel_, Y, p, self._rule, self._jitter,
                                             max_tries=6, bound=bound)
        self.elbo_ = float(elbo)
        self._post = post

    # ------------------------------------------------- new rows: q(x*) with the model fixed
    def _heldout(self, Ystar, mu, S, rule):
        """Held-out objective of rows ``Ystar`` (bound − KL), its Ψ adjoints and Ψ cache."""
        return heldout_objective(self.kernel_, self.inducing_inputs_, rule, self._post, Ystar,
                                 mu, S)

    def _normalized(self, X):
        return (X - self.X_mean_) / self.X_scale_

    def transform(self, X, return_std=False):
        """Posterior latent means (and standard deviations) of rows of data.

        Training rows return the fitted ``latent_mean_``; unseen rows are inferred by maximising
        their per-point bound with the model held fixed (L-BFGS-B, ``transform_max_iter``).

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Rows in data space.
        return_std : bool, default=False
            Also return the latent standard deviations.

        Returns
        -------
        mean : ndarray of shape (n, n_components)
            Latent means.
        std : ndarray of shape (n, n_components)
            Latent standard deviations (only if ``return_std``).
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            return map_row_blocks(lambda b: self.transform(b, return_std=return_std),
                                  X, self.n_components, 2 if return_std else 1)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        mu, S = latents_for(self, X)
        return (mu, np.sqrt(S)) if return_std else mu

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
        X = validate_data(self, X, dtype=np.float64, reset=False)
        mu, S = latents_for(self, X)
        return heldout_scores(self, X, mu, S)

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

    # --------------------------------------------------------------------------- prediction
    def _rule_shared(self):
        rule = self._rule
        if isinstance(rule, PointRule) and rule.nodes.ndim == 3:
            return monte_carlo_rule(self.n_samples, self.n_components,
                                    check_random_state(self._transform_seed))
        return rule

    def _check_latent(self, name, A, n=None):
        A = check_finite_array(name, A)
        if A.ndim != 2 or A.shape[1] != self.n_components or (n is not None and A.shape[0] != n):
            expected = f"({'n' if n is None else n}, {self.n_components})"
            raise ValueError(f"{name} must have shape {expected}, got {A.shape}.")
        return A

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
        mean = self._check_latent("mean", mean)
        var = self._check_latent("var", var, mean.shape[0])
        if np.any(var < 0):
            raise ValueError("var must be non-negative.")
        return uncertain_moments(self, mean, var, full_cov, include_noise)

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
        X = self._check_latent("X", X)
        if latent_var is not None:
            m, v = self.predict_uncertain(X, latent_var, include_noise=include_noise)
            return (m, np.sqrt(v)) if return_std else m
        with threads(self.n_jobs):
            Psi1 = self.kernel_.K(X, self.inducing_inputs_)
            psi0 = self.kernel_.Kdiag(X)
            m, v = predictive_moments(self._post, psi0, Psi1, None)
        m = m * self.X_scale_ + self.X_mean_
        if not return_std:
            return m
        if include_noise:
            v = v + self.noise_variance_
        return m, np.sqrt(v) * self.X_scale_

    # ------------------------------------------------------------------------------ sklearn
    @property
    def _n_features_out(self):
        return self.n_components

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        # Monte Carlo nodes come from random_state, so every rule is reproducible: no
        # non_deterministic tag (the checks it would skip pass).
        return tags
