"""DeepGPClassifier: binary and multiclass deep-GP classification (Salimbeni 2020, ch. 2)."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.preprocessing import StandardScaler

from sklearn_lvgp import DeepGPClassifier
from sklearn_lvgp.likelihoods import Bernoulli, RobustMax, Softmax, StudentT

FAST = {"n_inducing": 15, "max_iter": 300, "learning_rate": 0.05, "n_predict_samples": 20,
        "random_state": 0}


def _xor(n=200, seed=0):
    r = np.random.RandomState(seed)
    X = r.uniform(-2, 2, (n, 2))
    return X, np.where(X[:, 0] * X[:, 1] > 0, "same", "different")


def _bands(n=200, seed=0):
    r = np.random.RandomState(seed)
    X = r.uniform(-2, 2, (n, 2))
    return X, np.array([10, 20, 30])[np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.7, 0.7])]


@pytest.mark.parametrize("kw", [{"n_layers": 1}, {"n_layers": 2},
                                {"n_layers": 2, "likelihood": Bernoulli(link="logit")},
                                {"n_layers": 1, "natgrad_gamma": 0.1}],
                         ids=["svgp", "dgp2", "dgp2-logit", "svgp-ngd"])
def test_binary_toy_accuracy_and_labels(kw):
    X, y = _xor()
    Xt, yt = _xor(seed=1)
    clf = DeepGPClassifier(**FAST, **kw).fit(X, y)
    assert list(clf.classes_) == ["different", "same"]
    assert isinstance(clf.likelihood_, Bernoulli)
    assert np.mean(clf.predict(Xt) == yt) > 0.9
    proba = clf.predict_proba(Xt)
    assert proba.shape == (200, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(Xt)), proba)


@pytest.mark.parametrize("kw", [{"n_layers": 1}, {"n_layers": 2, "likelihood": Softmax()},
                                {"n_layers": 2, "expectation": "unscented"},
                                {"n_layers": 1, "natgrad_gamma": (1e-3, 0.1, 20)}],
                         ids=["svgp-robustmax", "dgp2-softmax", "dgp2-unscented", "svgp-ngd"])
def test_multiclass_toy_accuracy(kw):
    X, y = _bands()
    Xt, yt = _bands(seed=1)
    clf = DeepGPClassifier(**FAST, **kw).fit(X, y)
    assert list(clf.classes_) == [10, 20, 30]
    assert clf.predict_proba(Xt).shape == (200, 3)
    assert np.mean(clf.predict(Xt) == yt) > 0.9
    if "likelihood" not in kw:
        assert isinstance(clf.likelihood_, RobustMax)


def test_breast_cancer_against_sklearn_gpc():
    """A sanity comparison with scikit-learn's Laplace GP classifier (not timed)."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    ours = DeepGPClassifier(n_layers=1, n_inducing=30, max_iter=500, learning_rate=0.03,
                            batch_size=None, random_state=0).fit(Xtr, ytr)
    gpc = GaussianProcessClassifier(random_state=0).fit(Xtr, ytr)
    acc_ours = np.mean(ours.predict(Xte) == yte)
    acc_gpc = np.mean(gpc.predict(Xte) == yte)
    assert acc_ours > 0.93
    assert acc_ours > acc_gpc - 0.03


def test_grid_search_with_neg_log_loss():
    X, y = _xor(120)
    search = GridSearchCV(DeepGPClassifier(n_layers=1, n_inducing=10, max_iter=100,
                                           random_state=0),
                          {"learning_rate": [0.01, 0.05]}, scoring="neg_log_loss", cv=2)
    search.fit(X, y)
    assert np.isfinite(search.best_score_) and search.best_score_ < 0


def test_warm_start_continues():
    X, y = _xor(120)
    clf = DeepGPClassifier(n_layers=1, n_inducing=10, max_iter=30, warm_start=True,
                           tol=None, random_state=0)
    clf.fit(X, y)
    x_first = clf._x.copy()
    clf.fit(X, y)
    assert clf.n_iter_ == 60 and len(clf.elbo_history_) == 60
    assert not np.array_equal(clf._x, x_first)


def test_early_stopping_records_held_out_scores():
    X, y = _xor(150)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = DeepGPClassifier(n_layers=1, n_inducing=10, max_iter=300, early_stopping=True,
                               learning_rate=0.05, random_state=0).fit(X, y)
    assert clf.validation_scores_ is not None and len(clf.validation_scores_) >= 1
    assert np.all(clf.validation_scores_ <= 0)


def test_thread_count_gives_the_same_model():
    X, y = _xor(200)
    kw = {"n_layers": 2, "n_inducing": 10, "max_iter": 20, "random_state": 0}
    a = DeepGPClassifier(n_jobs=1, **kw).fit(X, y)
    b = DeepGPClassifier(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_array_equal(a._x, b._x)


@pytest.mark.parametrize("kwargs, y, match", [
    ({"likelihood": StudentT()}, None, "classification likelihood"),
    ({"likelihood": Bernoulli()}, np.repeat([0, 1, 2], 10), "two-class"),
    ({}, np.zeros(30), "class"),
])
def test_errors(kwargs, y, match):
    X = np.random.RandomState(0).randn(30, 2)
    y = np.repeat([0, 1], 15) if y is None else y
    with pytest.raises(ValueError, match=match):
        DeepGPClassifier(n_inducing=5, max_iter=2, **kwargs).fit(X, y)


def test_dask_fit_matches_in_memory(client):
    da = pytest.importorskip("dask.array")
    X, y = _xor(200)
    codes = (y == "same").astype(int)
    kw = {"n_layers": 2, "n_inducing": 8, "max_iter": 10, "batch_size": 64, "random_state": 0}
    mem = DeepGPClassifier(**kw).fit(X, codes)
    dsk = clone(DeepGPClassifier(**kw)).fit(da.from_array(X, chunks=(50, 2)),
                                            da.from_array(codes, chunks=50))
    np.testing.assert_array_equal(dsk.classes_, mem.classes_)
    np.testing.assert_allclose(dsk._x, mem._x, rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match="early_stopping=True"):
        DeepGPClassifier(early_stopping=True, **kw).fit(da.from_array(X, chunks=(50, 2)),
                                                        da.from_array(codes, chunks=50))
