"""NARX helpers: lagged regressors, free simulation, the forecaster, and the airline protocol."""

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.linear_model import BayesianRidge

from sklearn_lvgp import SparseGPRegressor
from sklearn_lvgp.datasets import load_airline
from sklearn_lvgp.kernels import RBF, Linear, Periodic
from sklearn_lvgp.timeseries import NARXForecaster, free_simulation, lagged_regressors


def test_lagged_regressors_newest_first():
    X, y = lagged_regressors(np.arange(6.0), lags=3)
    np.testing.assert_array_equal(X, [[2, 1, 0], [3, 2, 1], [4, 3, 2]])
    np.testing.assert_array_equal(y, [3, 4, 5])


def test_airline_series_and_protocol_fixture():
    y = load_airline()
    assert y.shape == (144,) and y[:3].tolist() == [112, 118, 132] and y[-1] == 432
    X, t = lagged_regressors(y, 12)
    targets = t[:48]  # months 12..59, the paper's training period
    assert targets.mean() == pytest.approx(182.9583333333, abs=1e-9)
    assert targets.std() == pytest.approx(38.3204462033, abs=1e-9)
    np.testing.assert_array_equal(X[0], y[11::-1])


@pytest.fixture(scope="module")
def sine_model():
    series = np.sin(np.arange(70) / 3.0) + 0.02 * np.random.default_rng(0).standard_normal(70)
    X, y = lagged_regressors(series[:60], lags=4)
    return series, SparseGPRegressor(n_inducing=20, random_state=0).fit(X, y)


def test_mean_only_rollout_matches_a_manual_loop(sine_model):
    series, model = sine_model
    window = series[59:55:-1]
    mean, std = free_simulation(model, window, 6, propagate_variance=False)
    w = window.copy()
    for h in range(6):
        m, s = model.predict(w[None], return_std=True)
        assert mean[h] == pytest.approx(m[0], rel=1e-12)
        assert std[h] == pytest.approx(s[0], rel=1e-12)
        w = np.concatenate((m, w[:-1]))


def test_variance_propagation_widens_the_forecast(sine_model):
    series, model = sine_model
    window = series[59:55:-1]
    _, std_mean_only = free_simulation(model, window, 10, propagate_variance=False)
    mean, std = free_simulation(model, window, 10)
    assert np.all(std[1:] > std_mean_only[1:])
    assert std[0] == pytest.approx(std_mean_only[0], rel=1e-8)  # first step: exact window
    assert np.sqrt(np.mean((mean - series[60:70]) ** 2)) < 0.2
    # any rule, passed through to predict
    mean_ut, _ = free_simulation(model, window, 10, expectation="unscented")
    np.testing.assert_allclose(mean_ut, mean, atol=0.05)


def test_forecaster_wraps_any_regressor(sine_model):
    series, _ = sine_model
    forecaster = NARXForecaster(lags=4).fit(series[:60])
    mean, std = forecaster.forecast(5)
    assert mean.shape == std.shape == (5,)
    np.testing.assert_array_equal(forecaster.window_, series[59:55:-1])
    plain = NARXForecaster(GaussianProcessRegressor(), lags=4).fit(series[:60])
    m2, s2 = plain.forecast(5)  # mean-only rollout for regressors without X_var
    assert m2.shape == (5,)
    with pytest.raises(TypeError, match="does not accept X_var"):
        free_simulation(plain.estimator_, series[59:55:-1], 3, propagate_variance=True)


@pytest.mark.parametrize("call, message", [
    (lambda m, s: free_simulation(m, s[:4], 0), "horizon must be >= 1"),
    (lambda m, s: free_simulation(m, s[:4], 3, window_var=-1.0), "non-negative"),
    (lambda m, s: free_simulation(m, s[:4], 3, window_var=np.ones(3)), "window_var must"),
    (lambda m, s: free_simulation(m, np.array([np.nan, 1, 2, 3]), 3), "NaN"),
    (lambda m, s: free_simulation(m, s[:4], 3, propagate_variance="yes"), "propagate_var"),
    (lambda m, s: lagged_regressors(s[:4], lags=4), "too short for lags=4"),
    (lambda m, s: lagged_regressors(np.ones((5, 2)), lags=2), "one-dimensional"),
    (lambda m, s: NARXForecaster(lags=12).fit(s[:10]), "at least lags \\+ 1 = 13"),
])
def test_bad_input(sine_model, call, message):
    series, model = sine_model
    with pytest.raises(ValueError, match=message):
        call(model, series)


def test_unfitted_regressor_rejected(sine_model):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        free_simulation(BayesianRidge(), sine_model[0][:4], 2)


# --------------------------------------------------- airline (de Souza et al. 2021, Table 3)
def airline_setup():
    """Standardised 12-lag training pairs, the start window and the metric, as in de Souza et al.
    (2021, §4.2.1) and the authors' public code."""
    y = load_airline()
    X, t = lagged_regressors(y, 12)
    mu, sd = t[:48].mean(), t[:48].std()
    Xs, ys = (X[:48] - mu) / sd, (t[:48] - mu) / sd

    def nlpd_rmse(mean, std):
        m, v, truth = mean[48:] * sd + mu, (std[48:] * sd) ** 2, y[60:]
        nlpd = 0.5 * np.log(2 * np.pi) + 0.5 * np.mean(np.log(v) + (truth - m) ** 2 / v)
        return nlpd, np.sqrt(np.mean((truth - m) ** 2))

    return Xs, ys, (y[11::-1] - mu) / sd, nlpd_rmse


def airline_kernel(Xs, periodic):
    kernel = (RBF(length_scale=10 * Xs.std(axis=0), variance=1.0)
              + Linear(variances=np.full(12, 0.01 / 12)))
    return Periodic(period=1.0, length_scale=1.0, variance=1.0) + kernel if periodic else kernel


def stage_one(Xs, ys, periodic):
    return SparseGPRegressor(kernel=airline_kernel(Xs, periodic), n_inducing="all",
                             noise_variance_init=0.01, max_iter=5000,
                             positive_transform="softplus").fit(Xs, ys)


def test_airline_uncertain_rollout_beats_gp_narx_rbf_linear():
    """Reduced Table 3 (RBF+Linear only; the periodic kernel and GH/MC rules are slow)."""
    Xs, ys, w0, nlpd_rmse = airline_setup()
    gp = stage_one(Xs, ys, periodic=False)
    narx = nlpd_rmse(*free_simulation(gp, w0, 132, propagate_variance=False))
    s2 = gp.noise_variance_
    ut = nlpd_rmse(*free_simulation(gp, w0, 132, window_var=s2, expectation="unscented"))
    analytic = nlpd_rmse(*free_simulation(gp, w0, 132, window_var=s2, expectation="analytic"))
    assert abs(narx[0] - 11.37) <= 1.0 and abs(narx[1] - 69.40) <= 6.94
    assert abs(ut[0] - analytic[0]) <= 0.1 and abs(ut[1] - analytic[1]) <= 0.02 * analytic[1]
    assert ut[0] <= narx[0] - 2.0


@pytest.mark.slow
def test_airline_table3_full():
    Xs, ys, w0, nlpd_rmse = airline_setup()
    for periodic, narx_target in ((False, 11.37), (True, 7.46)):
        gp = stage_one(Xs, ys, periodic)
        narx = nlpd_rmse(*free_simulation(gp, w0, 132, propagate_variance=False))
        s2 = gp.noise_variance_
        rules = ["unscented", "gauss_hermite"] + ([] if periodic else ["analytic"])
        scores = {r: nlpd_rmse(*free_simulation(gp, w0, 132, window_var=s2, expectation=r))
                  for r in rules}
        assert abs(narx[0] - narx_target) <= 1.0
        nlpds = [v[0] for v in scores.values()]
        assert max(nlpds) - min(nlpds) <= 0.1
        assert max(nlpds) <= narx[0] - 2.0
