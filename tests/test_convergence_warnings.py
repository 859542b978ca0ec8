"""ConvergenceWarning: the parameter that ends the run is named, the user's line is blamed."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import DVMGP, GPCDE, LDGD, DeepGP, UnscentedGPLVM


def _convergence_warnings(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()  # the line the warnings must be attributed to
    return [w for w in caught if issubclass(w.category, ConvergenceWarning)]


def _data(n=40, d=4, seed=0):
    rs = np.random.RandomState(seed)
    X = rs.normal(size=(n, d))
    return X, X[:, 0] + 0.1 * rs.normal(size=n)


def test_transform_names_transform_max_iter_and_the_callers_line():
    X, _ = _data(30, 5)
    model = UnscentedGPLVM(n_components=2, n_inducing=8, max_iter=5, transform_max_iter=1,
                           random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X[:20])
    # transform goes through scikit-learn's set_output wrapper
    caught = _convergence_warnings(lambda: model.transform(X[20:] + 0.5))
    assert caught
    message = str(caught[0].message)
    assert "transform_max_iter=1" in message and "Increase transform_max_iter" in message
    assert "Increase max_iter" not in message
    assert caught[0].filename == __file__


def _adam_fits():
    X, y = _data()
    yc = (y > 0).astype(int)
    return [
        ("LDGD", lambda: LDGD(n_components=2, n_inducing=6, optimizer="adam", max_iter=3,
                              transform_max_iter=0, random_state=0).fit(X, yc)),
        ("DeepGP", lambda: DeepGP(n_layers=1, n_inducing=6, max_iter=3,
                                  random_state=0).fit(X, y)),
        ("GPCDE", lambda: GPCDE(n_inducing=6, gh_order=5, optimizer="adam", max_iter=3,
                                n_predict_samples=10, random_state=0).fit(X, y)),
        ("DVMGP", lambda: DVMGP(n_inducing=6, n_inducing_projection=3, optimizer="adam",
                                n_iter_fixed_noise=2, max_iter=3, tol=1e-4,
                                random_state=0).fit(X, y)),
    ]


@pytest.mark.parametrize("name, fit", _adam_fits(), ids=[n for n, _ in _adam_fits()])
def test_adam_budget_spent_warns_naming_max_iter_and_tol(name, fit):
    caught = [w for w in _convergence_warnings(fit) if "Adam" in str(w.message)]
    assert len(caught) == 1, [str(w.message) for w in caught]
    message = str(caught[0].message)
    assert name in message
    assert "max_iter=3" in message and "tol=" in message and "Increase max_iter" in message
    assert caught[0].filename == __file__


def test_adam_without_tol_or_partial_fit_does_not_warn():
    X, y = _data()
    quiet = [
        lambda: DeepGP(n_layers=1, n_inducing=6, max_iter=3, tol=None,
                       random_state=0).fit(X, y),
        lambda: DeepGP(n_layers=1, n_inducing=6, batch_size=10, random_state=0).partial_fit(X, y),
    ]
    for fit in quiet:
        assert not [w for w in _convergence_warnings(fit) if "Adam" in str(w.message)]


def test_warning_inside_grid_search_points_at_the_users_line():
    # GridSearchCV runs the fits through joblib: its frames are skipped like scikit-learn's
    from sklearn.model_selection import GridSearchCV

    from sklearn_lvgp import SparseGPRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (40, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(40)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        GridSearchCV(SparseGPRegressor(max_iter=2, n_inducing=5, random_state=0),
                     {"n_inducing": [4, 5]}, cv=2).fit(X, y)
    budget = [w for w in caught if issubclass(w.category, ConvergenceWarning)
              and "max_iter" in str(w.message)]
    assert budget and all(w.filename == __file__ for w in budget), \
        [(w.filename, str(w.message)[:60]) for w in budget]
