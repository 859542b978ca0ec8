"""Scorers by name: ``scoring="log_predictive_density"`` in scikit-learn's model selection."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from sklearn_lvgp import SparseGPRegressor
from sklearn_lvgp.metrics import (
    SCORERS_REGISTERED,
    get_scorer,
    get_scorer_names,
    log_predictive_density,
    neg_log_predictive_density,
)


def _data():
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, (45, 1))
    return X, np.sin(X[:, 0]) + 0.1 * rng.randn(45)


def test_registered_with_the_installed_scikit_learn():
    # scikit-learn 1.x keeps its scorers in sklearn.metrics._scorer._SCORERS
    assert SCORERS_REGISTERED
    from sklearn.metrics import get_scorer as sklearn_get_scorer
    from sklearn.metrics import get_scorer_names as sklearn_names

    assert "log_predictive_density" in sklearn_names()
    assert sklearn_get_scorer("log_predictive_density") is log_predictive_density


def test_grid_search_by_name_selects_like_the_function():
    X, y = _data()
    grid = {"n_inducing": [2, 8]}
    by_name = GridSearchCV(SparseGPRegressor(random_state=0), grid,
                           scoring="log_predictive_density", cv=3).fit(X, y)
    by_function = GridSearchCV(SparseGPRegressor(random_state=0), grid,
                               scoring=log_predictive_density, cv=3).fit(X, y)
    assert by_name.best_params_ == {"n_inducing": 8}
    np.testing.assert_array_equal(by_name.cv_results_["mean_test_score"],
                                  by_function.cv_results_["mean_test_score"])
    # the score is the log density: higher is better, the better model scores higher
    scores = by_name.cv_results_["mean_test_score"]
    assert scores[1] > scores[0]


def test_cross_val_score_by_name_and_multimetric():
    X, y = _data()
    model = SparseGPRegressor(n_inducing=8, random_state=0)
    scores = cross_val_score(model, X, y, scoring="log_predictive_density", cv=3)
    folds = [(X[t], y[t], X[v], y[v]) for t, v in KFold(3).split(X)]
    want = [SparseGPRegressor(n_inducing=8, random_state=0).fit(a, b)
            .predict_log_density(c, d).mean() for a, b, c, d in folds]
    np.testing.assert_allclose(scores, want, rtol=1e-12)
    search = GridSearchCV(model, {"n_inducing": [8]}, cv=3, refit="log_predictive_density",
                          scoring=["r2", "log_predictive_density"]).fit(X, y)
    np.testing.assert_allclose(search.cv_results_["mean_test_log_predictive_density"],
                               np.mean(want), rtol=1e-12)


def test_package_get_scorer():
    assert get_scorer("log_predictive_density") is log_predictive_density
    assert callable(get_scorer("r2"))
    assert get_scorer(None) is None
    assert get_scorer(log_predictive_density) is log_predictive_density
    names = get_scorer_names()
    assert "log_predictive_density" in names and "r2" in names
    with pytest.raises(ValueError, match="'no_such' is neither a sklearn_lvgp scorer "
                                         r"\(\['log_predictive_density'\]\)"):
        get_scorer("no_such")


def test_deprecated_alias_warns_naming_the_new_name():
    X, y = _data()
    model = SparseGPRegressor(n_inducing=8, random_state=0).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = neg_log_predictive_density(model, X, y)  # the line the warning names
    assert value == log_predictive_density(model, X, y)
    assert len(caught) == 1 and caught[0].category is FutureWarning
    assert "use log_predictive_density" in str(caught[0].message)
    assert caught[0].filename == __file__
