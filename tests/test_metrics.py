"""Sample KDE log density (Salimbeni 2020, Table 5.1) and DeepGP.predict_log_density(method="kde").

Tolerances. For samples ``x_1..x_n ~ N(m, s^2)`` and a Gaussian kernel ``K(x) = N(y | x, h^2)``
with a fixed bandwidth ``h``, the KDE value is ``p = mean_s K(x_s)`` with

* ``E[K] = N(y | m, s^2 + h^2)`` (the kernel-smoothed Gaussian), and
* ``E[K^2] = N(y | m, s^2 + h^2 / 2) / (2 h sqrt(pi))`` (since ``N(y | x, h^2)^2`` is
  ``N(x | y, h^2 / 2) / (2 h sqrt(pi))``),

so by the delta method ``log p`` is ``log E[K]`` with standard deviation
``sd = sqrt((E[K^2] - E[K]^2) / n) / E[K]`` (its bias, ``-sd^2 / 2``, is below 1e-3 here). Each
point is asserted within ``5 sd`` and the mean over points within ``5 sd / sqrt(n_points)``.
With Silverman's rule the bandwidth is estimated from the samples (relative error of ``h^2``
about ``sqrt(2 / n) = 3 %``, i.e. ``h^2`` off by ~0.002 s^2, which moves ``log E[K]`` by less
than ``0.002 (1 + z^2) / 2``); an extra ``0.01`` covers it for ``|z| <= 3``.
"""

import numpy as np
import pytest
from sklearn.neighbors import KernelDensity

from sklearn_lvgp import DeepGP
from sklearn_lvgp.metrics import kde_log_density, silverman_bandwidth


def _smoothed(y, m, s2, h):
    """log N(y | m, s^2 + h^2) and the delta-method sd of the n-sample KDE (module docstring)."""
    v1 = s2 + h * h
    v2 = s2 + h * h / 2.0
    EK = np.exp(-0.5 * (y - m) ** 2 / v1) / np.sqrt(2 * np.pi * v1)
    EK2 = np.exp(-0.5 * (y - m) ** 2 / v2) / np.sqrt(2 * np.pi * v2) / (2 * h * np.sqrt(np.pi))
    return np.log(EK), lambda n: np.sqrt((EK2 - EK * EK) / n) / EK


def test_kde_of_gaussian_samples_fixed_bandwidth(rng):
    n_points, n = 300, 2000
    m = rng.uniform(-2, 2, n_points)
    s = rng.uniform(0.2, 3.0, n_points)
    z = rng.uniform(-3, 3, n_points)
    y = m + z * s
    h = 0.25 * s
    samples = m[:, None] + s[:, None] * rng.standard_normal((n_points, n))
    log_p = kde_log_density(samples, y, bandwidth=h)
    expected, sd = _smoothed(y, m, s * s, h)
    sd = sd(n)
    assert np.all(np.abs(log_p - expected) <= 5 * sd)
    assert abs(np.mean(log_p - expected)) <= 5 * np.sqrt(np.mean(sd * sd) / n_points)


def test_kde_of_gaussian_samples_silverman(rng):
    n_points, n = 300, 2000
    m = rng.uniform(-2, 2, n_points)
    s = rng.uniform(0.2, 3.0, n_points)
    z = rng.uniform(-3, 3, n_points)
    y = m + z * s
    samples = m[:, None] + s[:, None] * rng.standard_normal((n_points, n))
    log_p = kde_log_density(samples, y)
    expected, sd = _smoothed(y, m, s * s, 1.06 * s * n ** -0.2)
    sd = sd(n)
    assert np.all(np.abs(log_p - expected) <= 5 * sd + 0.01)
    assert abs(np.mean(log_p - expected)) <= 5 * np.sqrt(np.mean(sd * sd) / n_points) + 0.01
    # the smoothing bias is real: the exact Gaussian log density is larger at the centre
    exact_centre = -0.5 * np.log(2 * np.pi * s * s)
    centre = kde_log_density(samples, m)
    assert np.mean(exact_centre - centre) == pytest.approx(0.5 * np.log(1 + 1.06 ** 2 * n ** -0.4),
                                                           abs=0.01)


def test_silverman_bandwidth_value(rng):
    samples = rng.standard_normal((4, 500)) * np.array([[0.5], [1.0], [2.0], [7.0]])
    expected = 1.06 * np.std(samples, axis=1) * 500 ** (-1.0 / 5)
    np.testing.assert_allclose(silverman_bandwidth(samples), expected, rtol=1e-14)


def test_kde_equals_sklearn_kernel_density(rng):
    """Same estimator as the IWVI evaluation script (sklearn KernelDensity, Silverman h)."""
    samples = rng.gamma(2.0, 1.5, (5, 700))  # skewed: not a Gaussian identity
    y = np.array([0.1, 1.0, 3.0, 8.0, 30.0])
    log_p = kde_log_density(samples, y)
    h = silverman_bandwidth(samples)
    ref = [KernelDensity(bandwidth=float(h[i])).fit(samples[i][:, None]).score([[y[i]]])
           for i in range(5)]
    np.testing.assert_allclose(log_p, ref, rtol=1e-10)


def test_kde_far_tail_is_finite_and_exact():
    samples = np.array([[0.0, 1.0]])
    y = np.array([1000.0])
    log_p = kde_log_density(samples, y, bandwidth=1.0)
    lk = -0.5 * (y[0] - samples[0]) ** 2 - 0.5 * np.log(2 * np.pi)
    assert np.isfinite(log_p[0])
    assert log_p[0] == pytest.approx(np.logaddexp(lk[0], lk[1]) - np.log(2), rel=1e-14)


def test_kde_blocks_do_not_change_values(rng, monkeypatch):
    import sklearn_lvgp.metrics as metrics

    samples = rng.standard_normal((37, 50))
    y = rng.standard_normal(37)
    full = kde_log_density(samples, y)
    monkeypatch.setattr(metrics, "_BLOCK", 120)  # 2 rows per block
    np.testing.assert_array_equal(kde_log_density(samples, y), full)


@pytest.mark.parametrize("samples, y, bandwidth, match", [
    (np.zeros(5), np.zeros(5), 1.0, "2-D"),
    (np.zeros((3, 0)), np.zeros(3), 1.0, "non-empty"),
    (np.ones((3, 4)), np.zeros(2), 1.0, "shape"),
    (np.ones((3, 4)), np.zeros((3, 1)), 1.0, "shape"),
    (np.array([[0.0, np.nan]]), np.zeros(1), 1.0, "NaN"),
    (np.array([[0.0, 1.0]]), np.array([np.inf]), 1.0, "NaN"),
    (np.array([[0.0, 1.0]]), np.zeros(1), 0.0, "positive"),
    (np.array([[0.0, 1.0]]), np.zeros(1), -1.0, "positive"),
    (np.array([[0.0, 1.0]]), np.zeros(1), np.ones(2), "shape"),
    (np.array([[0.0, 1.0]]), np.zeros(1), "scott", "silverman"),
    (np.array([[0.0]]), np.zeros(1), "silverman", "at least 2"),
    (np.array([[1.0, 1.0, 1.0]]), np.zeros(1), "silverman", "all equal"),
])
def test_kde_bad_input(samples, y, bandwidth, match):
    with pytest.raises(ValueError, match=match):
        kde_log_density(samples, y, bandwidth=bandwidth)


# Tests of the DeepGP KDE score
@pytest.fixture(scope="module")
def svgp_1d():
    r = np.random.RandomState(3)
    X = r.uniform(-3, 3, (80, 1))
    y = 10.0 + 4.0 * np.sin(X[:, 0]) + 0.8 * r.randn(80)
    model = DeepGP(n_layers=1, n_inducing=15, max_iter=150, learning_rate=0.02,
                   natgrad_gamma=0.5, batch_size=None, random_state=0).fit(X, y)
    Xt = np.linspace(-3, 3, 150)[:, None]
    yt = 10.0 + 4.0 * np.sin(Xt[:, 0]) + 0.8 * r.randn(150)
    return model, Xt, yt


def test_predict_log_density_default_is_mixture(svgp_1d):
    model, Xt, yt = svgp_1d
    a = model.predict_log_density(Xt, yt)
    b = model.predict_log_density(Xt, yt, method="mixture")
    np.testing.assert_array_equal(a, b)
    # one layer: the mixture is the single Gaussian N(mean, std^2), original units
    mean, std = model.predict(Xt, return_std=True)
    exact = -0.5 * np.log(2 * np.pi * std ** 2) - 0.5 * (yt - mean) ** 2 / std ** 2
    np.testing.assert_allclose(a, exact, rtol=1e-10, atol=1e-10)


def test_log_density_kde_matches_smoothed_mixture(svgp_1d):
    """1-layer model: KDE of 2000 draws vs the Gaussian predictive smoothed by Silverman's h."""
    model, Xt, yt = svgp_1d
    n = 2000
    kde = model.predict_log_density(Xt, yt, method="kde", n_kde_samples=n, random_state=1)
    mean, std = model.predict(Xt, return_std=True)
    z = (yt - mean) / std
    assert np.max(np.abs(z)) < 4
    expected, sd = _smoothed(yt, mean, std ** 2, 1.06 * std * n ** -0.2)
    sd = sd(n)
    assert np.all(np.abs(kde - expected) <= 5 * sd + 0.01 + 0.002 * z * z)
    assert abs(np.mean(kde - expected)) <= 5 * np.sqrt(np.mean(sd * sd) / len(yt)) + 0.01
    mixture = model.predict_log_density(Xt, yt)
    # the smoothing bias per point is -log(1 + c^2)/2 + z^2 c^2 / (2 (1 + c^2)), c^2 = 0.054
    assert np.mean(np.abs(kde - mixture)) < 0.1
    # reproducible with a seed, different with another
    again = model.predict_log_density(Xt, yt, method="kde", n_kde_samples=n, random_state=1)
    np.testing.assert_array_equal(kde, again)


def test_log_density_kde_chunks_rows(svgp_1d, monkeypatch):
    import sklearn_lvgp._core.blocks as blocks

    model, Xt, yt = svgp_1d
    monkeypatch.setattr(blocks, "PREDICT_POINTS", 1)  # one row per block (50 samples, 1 layer)
    out = model.predict_log_density(Xt[:7], yt[:7], method="kde", n_kde_samples=50, random_state=0)
    assert out.shape == (7,) and np.all(np.isfinite(out))


def test_log_density_kde_two_layers_runs():
    r = np.random.RandomState(0)
    X = r.uniform(-2, 2, (40, 2))
    y = np.sin(X[:, 0]) + 0.1 * r.randn(40)
    model = DeepGP(n_layers=2, n_inducing=8, max_iter=20, random_state=0).fit(X, y)
    out = model.predict_log_density(X[:5], y[:5], method="kde", n_kde_samples=300)
    assert out.shape == (5,) and np.all(np.isfinite(out))


def test_log_density_kde_bad_input(svgp_1d):
    model, Xt, yt = svgp_1d
    with pytest.raises(ValueError, match="method"):
        model.predict_log_density(Xt, yt, method="histogram")
    with pytest.raises(ValueError, match="n_kde_samples"):
        model.predict_log_density(Xt, yt, method="kde", n_kde_samples=1)
    with pytest.raises(ValueError, match="NaN"):
        model.predict_log_density(Xt, np.full(len(yt), np.nan), method="kde", n_kde_samples=10)
    r = np.random.RandomState(0)
    X = r.randn(30, 2)
    Y = np.column_stack([X[:, 0], X[:, 1]])
    multi = DeepGP(n_layers=1, n_inducing=5, max_iter=5, random_state=0).fit(X, Y)
    with pytest.raises(ValueError, match="1-D density"):
        multi.predict_log_density(X, Y, method="kde", n_kde_samples=10)


def test_density_scorer_selects_in_grid_search_and_reaches_through_a_pipeline():
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_lvgp import SparseGPRegressor
    from sklearn_lvgp.metrics import log_predictive_density

    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, (60, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(60)
    pipe = make_pipeline(StandardScaler(), SparseGPRegressor(n_inducing=8, random_state=0))
    pipe.fit(X, y)
    Xs = pipe[0].transform(X)
    expected = pipe[-1].predict_log_density(Xs, y).mean()
    assert log_predictive_density(pipe, X, y) == pytest.approx(expected)
    w = rng.uniform(size=60)
    assert log_predictive_density(pipe, X, y, sample_weight=w) == pytest.approx(
        np.average(pipe[-1].predict_log_density(Xs, y), weights=w))
    search = GridSearchCV(SparseGPRegressor(random_state=0), {"n_inducing": [2, 10]},
                          scoring=log_predictive_density, cv=3).fit(X, y)
    assert search.best_params_ == {"n_inducing": 10}
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    with pytest.raises(TypeError, match="StandardScaler has none"):
        log_predictive_density(StandardScaler().fit(X), X, y)
