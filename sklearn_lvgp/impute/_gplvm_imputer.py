"""GPLVMImputer: missing entries filled with a Bayesian GPLVM's predictive mean."""

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.impute import MissingIndicator
from sklearn.utils._missing import is_scalar_nan
from sklearn.utils.validation import check_is_fitted, validate_data

from ..models._unscented_gplvm import UnscentedGPLVM

__all__ = ["GPLVMImputer"]


class GPLVMImputer(TransformerMixin, BaseEstimator):
    """Impute missing values with the predictive mean of a Bayesian GPLVM.

    A :class:`~sklearn_lvgp.UnscentedGPLVM` is fitted to the observed entries only (its bound
    sums over them: the entries are taken as missing at random, Titsias & Lawrence 2010). Each
    row's latent q(x_n) is inferred from its own observed entries, and its missing entries are
    replaced by the predictive mean ``E[y_nd]`` under q(x_n) (the uncertain-input moments of
    Girard et al. 2003); :meth:`transform_std` gives their predictive standard deviations.
    Rows seen in ``fit`` keep the q(x_n) fitted with the model; new rows have theirs inferred
    with the model fixed (as :meth:`UnscentedGPLVM.transform` does).

    Parameters
    ----------
    estimator : UnscentedGPLVM, default=None
        The model, cloned before fitting: every GPLVM option (``n_components``, ``kernel``,
        ``n_inducing``, ``max_iter``, ``random_state``, ...) is set on it, as
        :class:`~sklearn.impute.IterativeImputer` takes its regressor. ``None`` is
        ``UnscentedGPLVM(n_components=min(5, d), n_inducing=min(20, n),
        normalize_X="standardize", random_state=random_state)`` for ``n`` rows and ``d``
        features with an observed entry (its ARD kernel switches off the latent dimensions
        the data do not need).
    missing_values : float or int, default=np.nan
        The placeholder of the missing entries; ``X`` may contain NaN only when this is NaN.
    add_indicator : bool, default=False
        Append the columns of a :class:`~sklearn.impute.MissingIndicator` (the features with
        missing entries in ``fit``) to the output.
    keep_empty_features : bool, default=False
        Keep the features whose every entry is missing in ``fit`` (imputed with 0, as
        :class:`~sklearn.impute.SimpleImputer` does); by default they are dropped from the
        output.
    random_state : int, RandomState instance or None, default=None
        Seed of the default model (``estimator=None``), for reproducible imputations; a given
        ``estimator`` keeps its own ``random_state``.

    Attributes
    ----------
    estimator_ : UnscentedGPLVM
        The fitted model (on the features that have an observed entry).
    indicator_ : MissingIndicator or None
        The indicator of ``add_indicator=True``.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during ``fit`` (string column names only).

    See Also
    --------
    sklearn.impute.IterativeImputer : Round-robin regression imputation.
    sklearn.impute.KNNImputer : Nearest-neighbour imputation.

    References
    ----------
    Titsias, M. K., Lawrence, N. D. (2010). Bayesian Gaussian process latent variable model.
    AISTATS.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp import UnscentedGPLVM
    >>> from sklearn_lvgp.impute import GPLVMImputer
    >>> rng = np.random.default_rng(0)
    >>> t = rng.uniform(-2, 2, 60)
    >>> X = np.column_stack([np.sin(t), np.cos(t), t, t ** 2])
    >>> X[rng.random(X.shape) < 0.2] = np.nan
    >>> imputer = GPLVMImputer(UnscentedGPLVM(n_inducing=10, max_iter=200, random_state=0))
    >>> completed = imputer.fit_transform(X)
    >>> bool(np.isnan(completed).any())
    False
    """

    def __init__(self, estimator=None, *, missing_values=np.nan, add_indicator=False,
                 keep_empty_features=False, random_state=None):
        self.estimator = estimator
        self.missing_values = missing_values
        self.add_indicator = add_indicator
        self.keep_empty_features = keep_empty_features
        self.random_state = random_state

    def _validate(self, X, reset):
        """Float64 ``X`` with NaN at the missing entries, and the missing mask."""
        allow_nan = is_scalar_nan(self.missing_values)
        X = validate_data(self, X, dtype=np.float64, reset=reset,
                          ensure_all_finite="allow-nan" if allow_nan else True)
        missing = np.isnan(X) if allow_nan else X == self.missing_values
        return (X if allow_nan else np.where(missing, np.nan, X)), missing

    def fit(self, X, y=None):
        """Fit the GPLVM to the observed entries of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data with missing entries coded as ``missing_values``.
        y : None
            Ignored.

        Returns
        -------
        self : GPLVMImputer
            The fitted imputer.
        """
        if not isinstance(self.add_indicator, (bool, np.bool_)) or \
                not isinstance(self.keep_empty_features, (bool, np.bool_)):
            raise TypeError("add_indicator and keep_empty_features must be bools.")
        if self.estimator is not None and not isinstance(self.estimator, UnscentedGPLVM):
            raise TypeError("estimator must be an UnscentedGPLVM (or None), got "
                            f"{type(self.estimator).__name__}.")
        X, missing = self._validate(X, reset=True)
        self._valid = ~missing.all(axis=0)
        if not self._valid.any():
            raise ValueError("GPLVMImputer: every feature of X is missing in every row.")
        X_fit = X[:, self._valid]
        model = (UnscentedGPLVM(n_components=min(5, X_fit.shape[1]),
                                n_inducing=min(20, X_fit.shape[0]), normalize_X="standardize",
                                random_state=self.random_state)
                 if self.estimator is None else self.estimator)
        self.estimator_ = clone(model).fit(X_fit)
        self.indicator_ = (MissingIndicator(missing_values=np.nan, error_on_new=False).fit(
            np.where(missing, np.nan, 0.0)) if self.add_indicator else None)
        return self

    def _moments(self, X):
        """Validated ``X``, its missing mask, and the predictive mean and variance of the
        fitted features at the q(x_n) of each row with a missing entry (zeros elsewhere)."""
        check_is_fitted(self)
        X, missing = self._validate(X, reset=False)
        mean = np.zeros((X.shape[0], int(self._valid.sum())))
        var = np.zeros_like(mean)
        rows = missing[:, self._valid].any(axis=1)
        if rows.any():
            mu, sd = self.estimator_.transform(X[rows][:, self._valid], return_std=True)
            mean[rows], var[rows] = self.estimator_.predict_uncertain(mu, sd ** 2)
        return X, missing, mean, var

    def _columns(self, A, empty_value):
        """``A`` over the fitted features, with the empty ones kept (``empty_value``) or
        dropped per ``keep_empty_features``."""
        if not self.keep_empty_features:
            return A
        out = np.full((A.shape[0], self._valid.size), empty_value)
        out[:, self._valid] = A
        return out

    def transform(self, X):
        """Replace the missing entries of ``X`` by their predictive means.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data with missing entries coded as ``missing_values``.

        Returns
        -------
        X_imputed : ndarray of shape (n_samples, n_features_out)
            ``X`` with every missing entry imputed (observed entries unchanged), the features
            missing everywhere in ``fit`` dropped (unless ``keep_empty_features``) and the
            indicator columns appended (``add_indicator``).
        """
        X, missing, mean, _ = self._moments(X)
        full = np.where(missing, 0.0, X)
        full[:, self._valid] = np.where(missing[:, self._valid], mean, X[:, self._valid])
        out = full if self.keep_empty_features else full[:, self._valid]
        if self.indicator_ is not None:
            out = np.hstack([out, self.indicator_.transform(np.where(missing, np.nan, 0.0))])
        return out

    def transform_std(self, X):
        """Predictive standard deviation of every imputed entry (0 at observed entries).

        The standard deviation of ``y_nd`` (noise included) under the row's q(x_n), the
        uncertain-input moments of Girard et al. (2003): ``mean ± 1.645 · std`` is a 90 %
        predictive interval of each imputed entry.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data with missing entries coded as ``missing_values``.

        Returns
        -------
        std : ndarray of shape (n_samples, n_features_out)
            Aligned with the imputed columns of :meth:`transform` (without the indicator
            columns); 0 at the observed entries and at the features empty in ``fit``.
        """
        _, missing, _, var = self._moments(X)
        std = np.where(missing[:, self._valid], np.sqrt(var), 0.0)
        return self._columns(std, 0.0)

    def get_feature_names_out(self, input_features=None):
        """Get the names of the output features.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Input feature names; ``None`` takes ``feature_names_in_`` or ``x0 ... x(n-1)``.

        Returns
        -------
        feature_names_out : ndarray of str objects
            The kept input features, then the indicator's ``missingindicator_<name>``.
        """
        check_is_fitted(self)
        if input_features is None:
            input_features = getattr(self, "feature_names_in_",
                                     [f"x{i}" for i in range(self.n_features_in_)])
        input_features = np.asarray(input_features, dtype=object)
        if input_features.shape != (self.n_features_in_,):
            raise ValueError(f"input_features should have length {self.n_features_in_}, got "
                             f"{input_features.shape[0] if input_features.ndim else 0}.")
        names = input_features if self.keep_empty_features else input_features[self._valid]
        if self.indicator_ is not None:
            names = np.concatenate([names,
                                    self.indicator_.get_feature_names_out(input_features)])
        return np.asarray(names, dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = is_scalar_nan(self.missing_values)
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
