"""DeepGPClassifier: deep Gaussian-process classification with doubly-stochastic variational
inference.

Salimbeni & Deisenroth (2017) and Salimbeni (2020), chs. 2-3: the deep GP of
:class:`~sklearn_lvgp.DeepGP` with a classification likelihood in its last layer (Bernoulli for
two classes, robust-max or softmax for more). The model is
:class:`sklearn_lvgp.bounds._dsvi_model._DSVI`; the base class runs the deep-GP life cycle.
"""

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._core.scaling import column_moments
from .._core.validation import (
    check_n_inducing,
)
from ..base import _BaseDeepGP
from ..bounds._dsvi_init import hidden_widths
from ..bounds._dsvi_likelihood import path_class_probabilities
from ..engine._dask import DaskRows, _dask
from ..likelihoods import Bernoulli, Likelihood, RobustMax

__all__ = ["DeepGPClassifier"]

#: Rows of a dask fit gathered to the driver for the initial k-means inducing inputs and inner
#: mean functions.
INIT_ROWS = 20_000


class DeepGPClassifier(ClassifierMixin, _BaseDeepGP):
    """Deep Gaussian-process classification with doubly-stochastic variational inference.

    The deep GP of :class:`~sklearn_lvgp.DeepGP` (``n_layers`` sparse variational GP layers,
    inner layers sampled with the reparameterisation trick) with a classification likelihood
    on its last layer: one latent function and a Bernoulli likelihood for two classes, one
    latent function per class and a robust-max (or softmax) likelihood for more (Salimbeni
    2020, ch. 2). ``n_layers=1`` is the stochastic variational GP classifier (Hensman et al.
    2015). Class labels may be any values; ``classes_`` holds them in sorted order.

    Parameters
    ----------
    n_layers : int, default=2
        Number of GP layers (1 = SVGP).
    hidden_dims : int or sequence of int, default=None
        Widths of the inner layers; ``None`` is ``min(30, n_features)`` each.
    kernel : Kernel or sequence of Kernel, default=None
        Covariance of each layer, one for all or one per layer; ``None`` is an ARD
        :class:`~sklearn_lvgp.kernels.RBF` (as :class:`~sklearn_lvgp.DeepGP`).
    likelihood : Likelihood or None, default=None
        Classification likelihood of :mod:`sklearn_lvgp.likelihoods`: ``Bernoulli``
        (two classes, probit or logit link), ``RobustMax`` or ``Softmax`` (one latent
        function per class). ``None``: ``Bernoulli()`` (probit) for two classes,
        ``RobustMax()`` for more.
    inner_layer_init : {"prior", "collapsed"}, default="prior"
        Start of the inner layers (as :class:`~sklearn_lvgp.DeepGP`).
    n_inducing : int, default=100
        Inducing inputs per layer.
    whiten : bool, default=True
        Whitened ``q(u)``.
    n_samples : int, default=1
        Monte Carlo samples per data point in each training step.
    n_predict_samples : int, default=100
        Paths per test point in :meth:`predict_proba`.
    expectation : {"monte_carlo", "unscented"}, default="monte_carlo"
        Propagation through the inner layers (as :class:`~sklearn_lvgp.DeepGP`).
    optimizer : {"adam", "lbfgs"}, default="adam"
        ``"lbfgs"`` needs a deterministic objective (``expectation="unscented"`` or
        ``n_layers=1``) and the full batch.
    learning_rate : float, default=0.03
        Adam step size.
    learning_rate_schedule : {"constant", "staircase", "cosine"}, default="constant"
        As :class:`~sklearn_lvgp.DeepGP`.
    batch_size : int or None, default=10000
        Rows per Adam step (``None``: all).
    max_iter : int, default=10000
        Optimiser iterations.
    tol : float or None, default=1e-4
        Relative improvement of the bound below which the fit stops (as
        :class:`~sklearn_lvgp.DeepGP`).
    natgrad_gamma : float, tuple (gamma0, gamma1, K) or None, default=None
        Natural-gradient steps on the last layer's ``q(u)`` for the non-conjugate likelihood
        (Salimbeni 2020, ch. 3), alternating with Adam on the other parameters; a tuple is the
        log-linear warm-up from ``gamma0`` to ``gamma1`` over ``K`` steps (§3.4.2). Adam only.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the rows and stop when their mean log predictive
        probability has not improved for ``n_iter_no_change`` checks (every 100 steps).
    validation_fraction : float, default=0.1
        Held-out fraction for early stopping.
    n_iter_no_change : int, default=5
        Patience of early stopping, in checks.
    positive_transform : {"softplus", "log"}, default="softplus"
        Unconstrained variable behind the kernels' positive hyperparameters.
    jitter : float, default=1e-6
        Relative jitter on each ``K_uu``.
    random_state : int, RandomState instance or None, default=None
        Seeds k-means, minibatches, the Monte Carlo draws and the prediction paths.
    n_jobs : int, default=None
        Threads for the row chunks and the jitted kernel loops.
    verbose : int, default=0
        > 0: progress bar or lines (as DeepGP); -1 also silences the first-compile notice.
    callback : callable or None, default=None
        ``callback(estimator, info)`` after every optimiser iteration (as
        :class:`~sklearn_lvgp.DeepGP`).
    warm_start : bool, default=False
        Continue from the previous fit's parameters and optimiser state (same classes).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    likelihood_ : Likelihood
        The fitted likelihood.
    layers_ : list of SVGPLayer
        Fitted layers.
    inducing_inputs_ : list of ndarray
        The inducing inputs of each layer.
    elbo_ : float
        Final ELBO estimate.
    elbo_history_ : ndarray
        ELBO estimate at every iteration.
    n_iter_ : int
        Iterations run (cumulative over warm starts).
    validation_scores_ : ndarray or None
        Held-out mean log predictive probability at each check (early stopping).
    n_samples_seen_ : int
        Training rows.
    X_mean_, X_scale_ : ndarray of shape (n_features,)
        Input standardisation.
    n_features_in_ : int
        Number of input features.

    Notes
    -----
    ``fit`` also takes dask collections (rows evaluated where they live, as
    :class:`~sklearn_lvgp.DeepGP`); early stopping, ``optimizer="lbfgs"`` and ``warm_start``
    then raise a ``ValueError`` naming them.

    References
    ----------
    Salimbeni, H., Deisenroth, M. P. (2017). Doubly stochastic variational inference for deep
    Gaussian processes. NeurIPS.

    Hensman, J., Matthews, A., Ghahramani, Z. (2015). Scalable variational Gaussian process
    classification. AISTATS.

    Salimbeni, H. (2020). Deep Gaussian processes: advances in models and inference. PhD thesis,
    Imperial College London.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp import DeepGPClassifier
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-2, 2, (60, 1)); y = np.where(X[:, 0] > 0, "pos", "neg")
    >>> clf = DeepGPClassifier(n_layers=1, n_inducing=10, max_iter=50, random_state=0)
    >>> clf.fit(X, y).predict_proba(X[:3]).shape
    (3, 2)
    """

    def __init__(self, n_layers=2, hidden_dims=None, kernel=None, likelihood=None,
                 inner_layer_init="prior", n_inducing=100, whiten=True, n_samples=1,
                 n_predict_samples=100, expectation="monte_carlo", optimizer="adam",
                 learning_rate=0.03, learning_rate_schedule="constant", batch_size=10000,
                 max_iter=10000, tol=1e-4, natgrad_gamma=None, early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=5, positive_transform="softplus",
                 jitter=1e-6, random_state=None, n_jobs=None, verbose=0, callback=None,
                 warm_start=False):
        self.n_layers = n_layers
        self.hidden_dims = hidden_dims
        self.kernel = kernel
        self.likelihood = likelihood
        self.inner_layer_init = inner_layer_init
        self.n_inducing = n_inducing
        self.whiten = whiten
        self.n_samples = n_samples
        self.n_predict_samples = n_predict_samples
        self.expectation = expectation
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.learning_rate_schedule = learning_rate_schedule
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.natgrad_gamma = natgrad_gamma
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.positive_transform = positive_transform
        self.jitter = jitter
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.warm_start = warm_start

    # ----------------------------------------------------------------------------- checks
    def _validate_fit_data(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        return X, y

    def _check_params(self, X, y):
        self._check_deep_gp_params(X)
        if self.optimizer == "lbfgs" and self.expectation == "monte_carlo" and self.n_layers > 1:
            raise ValueError("optimizer='lbfgs' needs a deterministic objective: use "
                             "expectation='unscented' or n_layers=1, or optimizer='adam'.")
        lik = self.likelihood
        if lik is not None and not (isinstance(lik, Likelihood) and lik.is_classification):
            raise ValueError("likelihood must be a classification likelihood of "
                             f"sklearn_lvgp.likelihoods (Bernoulli, RobustMax, Softmax) or None, "
                             f"got {lik!r}.")
        check_n_inducing(self.n_inducing, X.shape[0], "DeepGPClassifier")

    def _class_likelihood(self, n_classes):
        """The likelihood for ``n_classes`` classes and its number of latent functions."""
        if n_classes < 2:
            raise ValueError("DeepGPClassifier needs samples of at least 2 classes in the data, "
                             f"but the data contain only one class: {self.classes_[0]!r}.")
        lik = self.likelihood
        if lik is None:
            lik = Bernoulli() if n_classes == 2 else RobustMax()
        return lik, lik.n_latent(n_classes)

    def _architecture(self, n_features, n_latent):
        """What a warm start must share with the previous fit to continue from it."""
        return (int(self.n_layers),
                tuple(hidden_widths(self.hidden_dims, self.n_layers, n_features)),
                int(n_features), int(n_latent), int(self.n_inducing), bool(self.whiten),
                self.expectation, self.positive_transform, float(self.jitter), repr(self.kernel),
                self.inner_layer_init, repr(self.likelihood),
                tuple(getattr(self, "classes_", ())))

    def _model_params(self):
        return {**self.get_params(), "latent_dim": None, "likelihood": self._likelihood}

    def _set_likelihood(self, fitted):
        self.likelihood_ = fitted

    # -------------------------------------------------------------------------------- fit
    def _fit(self, X, y, random_state):
        self.classes_, codes = np.unique(y, return_inverse=True)
        lik, n_latent = self._class_likelihood(self.classes_.size)
        Y = codes.reshape(-1, 1).astype(np.float64)
        continuing = (self.warm_start and hasattr(self, "_x")
                      and self._architecture(X.shape[1], n_latent) == self._arch)
        if not continuing:
            self.X_mean_, self.X_scale_ = column_moments(X)
            self._likelihood = lik.initialize(Y[:, 0] if lik.is_multiclass else Y)
            self._initialise((X - self.X_mean_) / self.X_scale_, n_latent, random_state)
        self._run((X - self.X_mean_) / self.X_scale_, Y, random_state, self.max_iter,
                  self.early_stopping)
        self.n_samples_seen_ = X.shape[0]
        return self

    def _fit_dask(self, X, y, random_state):
        """:meth:`fit` on dask collections: the classes and the input moments computed
        here, each Adam (and natural-gradient) step evaluated by the partitions holding its
        minibatch's rows."""
        if y is None:
            raise ValueError("DeepGPClassifier requires y to be passed, but the target y is "
                             "None.")
        dask, da = _dask()
        rows = DaskRows({"X": X, "y": y})
        self._set_dask_features(rows)
        X_d, y_d = rows.arrays["X"], rows.arrays["y"]
        self._check_params(X_d, y_d)
        unsupported = {"early_stopping=True": self.early_stopping,
                       "optimizer='lbfgs'": self.optimizer == "lbfgs",
                       "warm_start=True": self.warm_start}
        named = [name for name, used in unsupported.items() if used]
        if named:
            raise ValueError(f"DeepGPClassifier on dask input does not support "
                             f"{', '.join(named)}; fit on numpy arrays for these options.")
        y_d = y_d.reshape(-1)
        self.classes_ = np.unique(np.asarray(da.unique(y_d).compute()))
        lik, n_latent = self._class_likelihood(self.classes_.size)
        self.X_mean_, self.X_scale_ = (np.asarray(a) for a in dask.compute(*column_moments(X_d)))
        codes = y_d.map_blocks(lambda b: np.searchsorted(self.classes_, b).astype(np.float64),
                               dtype=np.float64)
        rows = DaskRows({"X": (X_d - self.X_mean_) / self.X_scale_, "y": codes[:, None]})
        N = rows.n_rows
        init = (np.arange(N) if N <= INIT_ROWS
                else np.sort(random_state.choice(N, INIT_ROWS, replace=False)))
        Y0 = np.asarray(rows.arrays["y"][init].compute())
        self._likelihood = lik.initialize(Y0[:, 0] if lik.is_multiclass else Y0)
        self._initialise(np.asarray(rows.arrays["X"][init].compute()), n_latent, random_state)
        self._run(None, None, random_state, self.max_iter, False, n_total=N, rows=rows)
        self.n_samples_seen_ = N
        return self

    # --------------------------------------------------------------------------- predict
    def predict_proba(self, X):
        """Class probabilities, averaged over the prediction paths through the layers.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities of the classes of ``classes_``, rows summing to one.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        mu, var, lik = self._path_components((X - self.X_mean_) / self.X_scale_)
        p = path_class_probabilities(lik, mu, var)
        return p / p.sum(axis=1, keepdims=True)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log class probabilities.
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """Most probable class of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]
