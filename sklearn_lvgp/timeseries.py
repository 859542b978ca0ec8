"""Autoregressive (NARX) forecasting by free simulation, with uncertainty propagation.

A one-step-ahead regressor on lagged values is rolled out for ``horizon`` steps, each prediction
fed back as the newest lag. The classic GP-NARX rollout feeds back only the predicted mean; a
regressor that accepts uncertain inputs (``predict(X, X_var=..., return_std=True)``, e.g.
:class:`~sklearn_lvgp.SparseGPRegressor`) is also fed the predicted variance, so the uncertainty
grows with the horizon (Girard et al. 2003; de Souza et al. 2021, §4.2). Only per-lag variances
are propagated: cross-covariances between lags are ignored, as in de Souza et al. (2021, §4.2.1),
where the variances of the uncertain inputs are the past predicted variances.
"""

import inspect

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from ._core.validation import check_finite_array, check_int

__all__ = ["lagged_regressors", "free_simulation", "NARXForecaster"]

_PROPAGATE = ("auto", True, False)


def _check_series(series, lags):
    y = check_finite_array("series", series)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"series must be one-dimensional, got shape {y.shape}.")
    if y.shape[0] < lags + 1:
        raise ValueError(f"series of length {y.shape[0]} is too short for lags={lags}: at "
                         f"least lags + 1 = {lags + 1} values are needed.")
    return y


def lagged_regressors(series, lags):
    """Lagged input windows and one-step-ahead targets from a 1-D series.

    The input at time t is ``[y_t, y_{t-1}, ..., y_{t-lags+1}]`` (newest first) and its target
    is ``y_{t+1}``, for ``t = lags - 1, ..., len(series) - 2``: the NARX inputs of de Souza et al.
    (2021, §4.2.1), who use 12 lags.

    Parameters
    ----------
    series : array-like of shape (n,)
        The series.
    lags : int
        Number of lagged values per input.

    Returns
    -------
    X : ndarray of shape (n - lags, lags)
        Input windows, newest value first.
    y : ndarray of shape (n - lags,)
        Targets.

    Examples
    --------
    >>> from sklearn_lvgp.timeseries import lagged_regressors
    >>> X, y = lagged_regressors([1.0, 2.0, 3.0, 4.0], lags=2)
    >>> X.tolist(), y.tolist()
    ([[2.0, 1.0], [3.0, 2.0]], [3.0, 4.0])
    """
    lags = check_int("lags", lags, min_value=1)
    y = _check_series(series, lags)
    n = y.shape[0]
    X = np.column_stack([y[lags - 1 - j: n - 1 - j] for j in range(lags)])
    return X, y[lags:].copy()


def _accepts_input_variance(regressor):
    try:
        return "X_var" in inspect.signature(regressor.predict).parameters
    except (TypeError, ValueError):
        return False


def free_simulation(regressor, window, horizon, window_var=None, propagate_variance="auto",
                    **predict_params):
    """Roll a fitted one-step-ahead regressor forward ``horizon`` steps.

    Parameters
    ----------
    regressor : fitted regressor
        Trained on windows like those of :func:`lagged_regressors`. Its ``predict`` must accept
        ``return_std=True``; for variance propagation it must also accept ``X_var``.
    window : array-like of shape (lags,)
        The starting window, newest value first.
    horizon : int
        Number of steps to simulate (``>= 1``).
    window_var : float or array-like of shape (lags,), default=None
        Variances of the starting window's values (``None`` is zero).
    propagate_variance : {"auto", True, False}, default="auto"
        Feed predicted variances back as input variances. ``"auto"`` does so when the
        regressor's ``predict`` accepts ``X_var``; ``False`` is the classic mean-only GP-NARX.
    **predict_params
        Passed to ``predict`` (e.g. ``expectation="unscented"``).

    Returns
    -------
    mean : ndarray of shape (horizon,)
        Predicted means of the next ``horizon`` values.
    std : ndarray of shape (horizon,)
        Predictive standard deviations (as returned by the regressor's ``predict``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp import SparseGPRegressor
    >>> from sklearn_lvgp.timeseries import free_simulation, lagged_regressors
    >>> series = np.sin(np.arange(80) / 3.0)
    >>> X, y = lagged_regressors(series[:60], lags=4)
    >>> model = SparseGPRegressor(n_inducing=20, random_state=0).fit(X, y)
    >>> mean, std = free_simulation(model, X[-1], horizon=5)
    >>> mean.shape, bool(np.all(np.diff(std) > 0))
    ((5,), True)
    """
    check_is_fitted(regressor)
    horizon = check_int("horizon", horizon, min_value=1)
    w = check_finite_array("window", window)
    if w.ndim != 1 or w.shape[0] < 1:
        raise ValueError(f"window must be a non-empty 1-D array of lags, got shape {w.shape}.")
    lags = w.shape[0]
    if window_var is None:
        v = np.zeros(lags)
    else:
        v = check_finite_array("window_var", window_var)
        v = np.full(lags, float(v)) if v.ndim == 0 else v
        if v.shape != (lags,):
            raise ValueError(f"window_var must be a scalar or have shape ({lags},), "
                             f"got {v.shape}.")
        if np.any(v < 0):
            raise ValueError("window_var must be non-negative.")
    if propagate_variance not in _PROPAGATE:
        raise ValueError(f"propagate_variance must be one of {_PROPAGATE}, "
                         f"got {propagate_variance!r}.")
    accepts = _accepts_input_variance(regressor)
    if propagate_variance is True and not accepts:
        raise TypeError(f"{type(regressor).__name__}.predict does not accept X_var, so "
                        "variances cannot be propagated; use propagate_variance=False.")
    uncertain = accepts if propagate_variance == "auto" else propagate_variance
    if not uncertain and predict_params:
        raise TypeError(f"predict_params {sorted(predict_params)} are only used with "
                        "variance propagation.")
    mean = np.empty(horizon)
    std = np.empty(horizon)
    for h in range(horizon):
        if uncertain:
            m, s = regressor.predict(w[None, :], X_var=v[None, :], return_std=True,
                                     **predict_params)
        else:
            m, s = regressor.predict(w[None, :], return_std=True)
        mean[h] = float(np.ravel(m)[0])
        std[h] = float(np.ravel(s)[0])
        w = np.concatenate(([mean[h]], w[:-1]))
        v = np.concatenate(([std[h] ** 2], v[:-1]))
    return mean, std


class NARXForecaster(BaseEstimator):
    """Autoregressive forecaster: a regressor on lagged values, rolled out by free simulation.

    Parameters
    ----------
    estimator : regressor, default=None
        One-step-ahead regressor, cloned at fit. ``None`` is
        ``SparseGPRegressor(n_inducing="all", normalize_y=True)`` (an exact GP).
    lags : int, default=12
        Number of lagged values per input.
    propagate_variance : {"auto", True, False}, default="auto"
        See :func:`free_simulation`.

    Attributes
    ----------
    estimator_ : regressor
        The fitted one-step-ahead regressor.
    window_ : ndarray of shape (lags,)
        The last ``lags`` values of the training series, newest first (the default start).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.timeseries import NARXForecaster
    >>> series = np.sin(np.arange(60) / 3.0)
    >>> mean, std = NARXForecaster(lags=4).fit(series).forecast(3)
    >>> mean.shape
    (3,)
    """

    def __init__(self, estimator=None, lags=12, propagate_variance="auto"):
        self.estimator = estimator
        self.lags = lags
        self.propagate_variance = propagate_variance

    def fit(self, series, y=None):
        """Fit the one-step-ahead regressor on the lagged series.

        Parameters
        ----------
        series : array-like of shape (n,)
            The training series (at least ``lags + 1`` values).
        y : None
            Ignored.

        Returns
        -------
        self : NARXForecaster
            The fitted forecaster.
        """
        from .models._sgpr import SparseGPRegressor

        X, target = lagged_regressors(series, self.lags)
        if self.propagate_variance not in _PROPAGATE:
            raise ValueError(f"propagate_variance must be one of {_PROPAGATE}, "
                             f"got {self.propagate_variance!r}.")
        base = (SparseGPRegressor(n_inducing="all", normalize_y=True) if self.estimator is None
                else self.estimator)
        self.estimator_ = clone(base).fit(X, target)
        y_all = _check_series(series, self.lags)
        self.window_ = y_all[::-1][: self.lags].copy()
        return self

    def forecast(self, horizon, window=None, window_var=None, **predict_params):
        """Forecast the next ``horizon`` values.

        Parameters
        ----------
        horizon : int
            Number of steps (``>= 1``).
        window : array-like of shape (lags,), default=None
            Starting window, newest first; ``None`` continues the training series.
        window_var : float or array-like of shape (lags,), default=None
            Variances of the starting window.
        **predict_params
            Passed to the regressor's ``predict``.

        Returns
        -------
        mean, std : ndarray of shape (horizon,)
            Forecast means and standard deviations.
        """
        check_is_fitted(self)
        w = self.window_ if window is None else window
        return free_simulation(self.estimator_, w, horizon, window_var=window_var,
                               propagate_variance=self.propagate_variance, **predict_params)
