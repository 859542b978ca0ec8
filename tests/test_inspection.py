"""The displays of ``sklearn_lvgp.inspection`` draw what they say, with the Agg backend, and
refuse what they cannot draw with a clear error."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LinearRegression

from sklearn_lvgp import DVMGP, GPCDE, LDGD, DeepGP, SparseGPRegressor, UnscentedGPLVM

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sklearn_lvgp.inspection import (  # noqa: E402
    LatentSpaceDisplay,
    PredictiveDensityDisplay,
    TrainingCurveDisplay,
)

LATENT = {
    UnscentedGPLVM: {"n_components": 3, "n_inducing": 5, "max_iter": 10, "random_state": 0},
    LDGD: {"n_components": 3, "n_inducing": 5, "max_iter": 10, "transform_max_iter": 5,
           "random_state": 0},
}
REGRESSORS = {
    GPCDE: {"latent_dim": 1, "n_inducing": 5, "max_iter": 20, "gh_order": 5, "init": "prior",
            "random_state": 0},
    DeepGP: {"n_layers": 1, "n_inducing": 5, "max_iter": 20, "random_state": 0},
    DVMGP: {"n_inducing": 5, "n_inducing_projection": 4, "n_iter_fixed_noise": 3, "max_iter": 10,
            "n_components": 1, "random_state": 0},
    SparseGPRegressor: {"n_inducing": 5, "max_iter": 10, "random_state": 0},
}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _fit(est, X, y=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


def _latent_data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    return X, np.where(X[:, 0] > 0, "a", "b")


def _bimodal():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (30, 1))
    return X, np.sign(rng.standard_normal(30)) * X[:, 0] ** 2


@pytest.fixture(scope="module", params=list(LATENT), ids=lambda c: c.__name__)
def latent_model(request):
    X, y = _latent_data()
    est = request.param(**LATENT[request.param])
    return _fit(est, X, y if est.__class__ is LDGD else None)


@pytest.fixture(scope="module", params=list(REGRESSORS), ids=lambda c: c.__name__)
def regressor(request):
    X, y = _bimodal()
    return _fit(request.param(**REGRESSORS[request.param]), X, y)


def test_latent_space_display(latent_model):
    _, y = _latent_data()
    disp = LatentSpaceDisplay.from_estimator(latent_model, y=y, grid_resolution=7)
    relevance = np.atleast_2d(latent_model.relevance_).sum(axis=0)
    assert set(disp.dims) == set(np.argsort(-relevance)[:2])
    assert disp.latent.shape == (30, 2)
    np.testing.assert_array_equal(disp.latent, latent_model.latent_mean_[:, list(disp.dims)])
    assert disp.variance.shape == disp.grid_x.shape == (7, 7)
    assert np.all(disp.variance > 0)
    assert disp.scatter_.get_offsets().shape == (30, 2)
    assert disp.surface_.get_array().size == 49
    assert disp.ax_.get_xlabel() == f"latent dimension {disp.dims[0]}"
    assert disp.ax_.get_ylabel() == f"latent dimension {disp.dims[1]}"
    assert disp.figure_ is disp.ax_.figure
    assert [t.get_text() for t in disp.ax_.get_legend().get_texts()] == ["a", "b"]
    assert disp.colorbar_.ax.get_ylabel() == "predictive variance"


def test_latent_space_display_dims_ax_and_new_data(latent_model):
    X, _ = _latent_data()
    _, ax = plt.subplots()
    disp = LatentSpaceDisplay.from_estimator(latent_model, X[:5], dims=(2, 0), ax=ax,
                                             grid_resolution=4)
    assert disp.ax_ is ax and disp.dims == (2, 0)
    assert disp.latent.shape == (5, 2)
    assert disp.ax_.get_legend() is None
    # plot again on other axes from the computed values
    _, ax2 = plt.subplots()
    assert disp.plot(ax=ax2) is disp and disp.ax_ is ax2


def test_latent_space_display_errors(latent_model):
    with pytest.raises(TypeError, match="UnscentedGPLVM or LDGD"):
        LatentSpaceDisplay.from_estimator(LinearRegression())
    with pytest.raises(NotFittedError):
        LatentSpaceDisplay.from_estimator(UnscentedGPLVM())
    with pytest.raises(ValueError, match="dims must be two different"):
        LatentSpaceDisplay.from_estimator(latent_model, dims=(1, 1))
    with pytest.raises(ValueError, match="dims must be two different"):
        LatentSpaceDisplay.from_estimator(latent_model, dims=(0, 3))
    with pytest.raises(ValueError, match="y must have shape"):
        LatentSpaceDisplay.from_estimator(latent_model, y=np.zeros(4))


def test_latent_space_display_needs_two_components():
    X, _ = _latent_data()
    est = _fit(UnscentedGPLVM(n_components=1, n_inducing=5, max_iter=3, random_state=0), X)
    with pytest.raises(ValueError, match="n_components >= 2"):
        LatentSpaceDisplay.from_estimator(est)


def test_predictive_density_display(regressor):
    X, y = _bimodal()
    disp = PredictiveDensityDisplay.from_estimator(regressor, X, y, n_x=6, n_y=5)
    assert disp.density.shape == disp.grid_x.shape == (5, 6)
    assert np.all(np.isfinite(disp.density)) and np.all(disp.density >= 0)
    np.testing.assert_allclose(disp.grid_x[0, [0, -1]], [X.min() - 0.1 * np.ptp(X),
                                                         X.max() + 0.1 * np.ptp(X)])
    assert disp.scatter_.get_offsets().shape == (30, 2)
    assert disp.ax_.get_xlabel() == "x" and disp.ax_.get_ylabel() == "y"
    assert type(regressor).__name__ in disp.ax_.get_title()
    assert disp.colorbar_.ax.get_ylabel() == "p(y | x)"
    # the heat map is exp(predict_log_density) at the grid points
    i, j = 2, 3
    expected = np.exp(regressor.predict_log_density([[disp.grid_x[i, j]]], [disp.grid_y[i, j]]))
    np.testing.assert_allclose(disp.density[i, j], expected[0], rtol=1e-6)


def test_predictive_density_display_ranges_and_1d_input():
    X, y = _bimodal()
    est = _fit(SparseGPRegressor(**REGRESSORS[SparseGPRegressor]), X, y)
    _, ax = plt.subplots()
    disp = PredictiveDensityDisplay.from_estimator(est, X[:, 0], y, x_range=(-2, 2),
                                                   y_range=(-1, 3), n_x=3, n_y=4, ax=ax)
    assert disp.ax_ is ax
    np.testing.assert_allclose(disp.grid_x[0], [-2, 0, 2])
    np.testing.assert_allclose(disp.grid_y[:, 0], np.linspace(-1, 3, 4))


def test_predictive_density_display_errors():
    X, y = _bimodal()
    est = _fit(SparseGPRegressor(**REGRESSORS[SparseGPRegressor]), X, y)
    with pytest.raises(TypeError, match="DeepGP, GPCDE, DVMGP or SparseGPRegressor"):
        PredictiveDensityDisplay.from_estimator(LinearRegression().fit(X, y), X, y)
    with pytest.raises(NotFittedError):
        PredictiveDensityDisplay.from_estimator(GPCDE(), X, y)
    with pytest.raises(ValueError, match="X must have one feature"):
        PredictiveDensityDisplay.from_estimator(est, np.hstack([X, X]), y)
    with pytest.raises(ValueError, match="y must be one target"):
        PredictiveDensityDisplay.from_estimator(est, X, y[:5])
    with pytest.raises(ValueError, match="low < high"):
        PredictiveDensityDisplay.from_estimator(est, X, y, y_range=(1, 0))
    X2 = np.random.default_rng(1).standard_normal((30, 2))
    est2 = _fit(SparseGPRegressor(**REGRESSORS[SparseGPRegressor]), X2, y)
    with pytest.raises(ValueError, match="one input feature"):
        PredictiveDensityDisplay.from_estimator(est2, X2[:, :1], y)


def test_training_curve_display(latent_model):
    disp = TrainingCurveDisplay.from_estimator(latent_model)
    history = np.asarray(latent_model.elbo_history_)
    np.testing.assert_array_equal(disp.line_.get_ydata(), history)
    np.testing.assert_array_equal(disp.line_.get_xdata(), np.arange(1, history.size + 1))
    assert disp.ax_.get_xlabel() == "iteration"
    assert "ELBO" in disp.ax_.get_ylabel()
    assert disp.validation_line_ is None and disp.validation_ax_ is None


def test_training_curve_display_with_validation_scores():
    disp = TrainingCurveDisplay(np.linspace(-10, -1, 40), np.array([-3.0, -2.0, -1.5, -1.4]))
    assert disp.plot() is disp
    np.testing.assert_allclose(disp.validation_line_.get_xdata(), [10, 20, 30, 40])
    assert disp.validation_ax_.get_ylabel() == "held-out score"


def test_training_curve_display_errors():
    X, y = _bimodal()
    with pytest.raises(NotFittedError):
        TrainingCurveDisplay.from_estimator(DeepGP())
    with pytest.raises(TypeError, match="no training curve"):
        TrainingCurveDisplay.from_estimator(LinearRegression().fit(X, y))


def test_training_curve_display_of_a_regressor(regressor):
    if not hasattr(regressor, "elbo_history_"):
        pytest.skip(f"{type(regressor).__name__} records no elbo_history_")
    disp = TrainingCurveDisplay.from_estimator(regressor)
    assert disp.line_.get_ydata().size == np.asarray(regressor.elbo_history_).size


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"sklearn_lvgp\[plot\]"):
        TrainingCurveDisplay(np.arange(3.0)).plot()
