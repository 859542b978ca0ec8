"""LDGD on Dask: a 2-worker LocalCluster started here gives the in-memory fit and predictions."""

import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from sklearn_lvgp import LDGD  # noqa: E402
from sklearn_lvgp.engine import _executor as engine_executor  # noqa: E402

N = 240
PART = 60


@pytest.fixture
def chunks_of_60(monkeypatch):
    """In-memory chunks of 60 rows: the partitions the Dask inputs below use."""
    monkeypatch.setattr(engine_executor, "MIN_CHUNK_WORK", 1)
    monkeypatch.setattr(engine_executor, "TARGET_CHUNKS", 4)


def _classes(n=N):
    r = np.random.default_rng(5)
    y = np.repeat([0, 1, 2], n // 3)
    latent = r.standard_normal((n, 2)) + y[:, None]
    X = np.tanh(latent @ r.standard_normal((2, 6))) + 0.1 * r.standard_normal((n, 6))
    return X, y


def _fit_both(X, y, **kw):
    kw = {"n_components": 2, "n_inducing": 6, "random_state": 0, "transform_max_iter": 10, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mem = LDGD(**kw).fit(X, y)
        dsk = LDGD(**kw).fit(da.from_array(X, chunks=(PART, X.shape[1])),
                             da.from_array(y, chunks=PART))
    return mem, dsk


def _assert_same_model(dsk, mem, rtol):
    assert dsk.n_iter_ == mem.n_iter_
    np.testing.assert_allclose(dsk.elbo_history_, mem.elbo_history_, rtol=rtol)
    np.testing.assert_allclose(dsk._x_flat, mem._x_flat, rtol=rtol,
                               atol=rtol * np.max(np.abs(mem._x_flat)))
    np.testing.assert_allclose(dsk.latent_mean_, mem.latent_mean_, rtol=rtol, atol=rtol)
    np.testing.assert_array_equal(dsk.classes_, mem.classes_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_lbfgs_dask_fit_equals_in_memory_fit(client, chunks_of_60):
    """Full-batch L-BFGS-B on sigma points, partitions = chunks: the same model. The start is
    fixed by the parameters (random latent start, no normalisation); the initial noise comes
    from dask's column variances, whose last bits differ from numpy's."""
    X, y = _classes()
    mem, dsk = _fit_both(X, y, expectation="unscented", optimizer="lbfgs", max_iter=10,
                         x_init="random", normalize_X="none")
    _assert_same_model(dsk, mem, 1e-8)
    X_new = da.from_array(X[:30] + 0.05, chunks=(12, 6))
    proba = dsk.predict_proba(X_new)
    assert isinstance(proba, da.Array)
    np.testing.assert_allclose(proba.compute(), mem.predict_proba(X[:30] + 0.05), rtol=1e-7,
                               atol=1e-9)
    mean, std = dsk.transform(X_new, return_std=True)
    m_mem, s_mem = mem.transform(X[:30] + 0.05, return_std=True)
    np.testing.assert_allclose(mean.compute(), m_mem, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(std.compute(), s_mem, rtol=1e-7, atol=1e-9)
    labels = dsk.predict(X_new)
    assert isinstance(labels, da.Array)
    np.testing.assert_array_equal(labels.compute(), mem.predict(X[:30] + 0.05))
    f, v = dsk.predict_f(X_new, return_var=True)
    np.testing.assert_allclose(v.compute(), mem.predict_f(X[:30] + 0.05, return_var=True)[1],
                               rtol=1e-7, atol=1e-9)
    # in memory, the model fitted on Dask predicts as the in-memory one
    np.testing.assert_allclose(dsk.predict_proba(X[:30]), mem.predict_proba(X[:30]), rtol=1e-7,
                               atol=1e-9)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("expectation", ["monte_carlo", "unscented"])
def test_adam_dask_fit_equals_in_memory_fit(client, chunks_of_60, expectation):
    """Data-parallel minibatch gradients: the same minibatches and draws, the same model; the
    PCA start and the standardisation come from dask reductions."""
    X, y = _classes()
    mem, dsk = _fit_both(X, y, expectation=expectation, optimizer="adam", max_iter=20,
                         batch_size=50)
    _assert_same_model(dsk, mem, 1e-8)
    np.testing.assert_allclose(dsk.X_scale_, mem.X_scale_, rtol=1e-12)
    draws, _ = dsk.sample(1, n_samples=3, random_state=0)
    np.testing.assert_allclose(draws, mem.sample(1, n_samples=3, random_state=0)[0],
                               rtol=1e-7, atol=1e-9)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_dask_dataframe_with_names_and_string_labels(client):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y = _classes(90)
    frame = dd.from_pandas(pd.DataFrame(X, columns=list("abcdef")), npartitions=3)
    labels = np.array(["x", "y", "z"])[y]
    model = LDGD(n_components=2, n_inducing=5, expectation="unscented", max_iter=5,
                 transform_max_iter=5, random_state=0).fit(frame, labels)
    assert list(model.feature_names_in_) == list("abcdef") and model.n_features_in_ == 6
    assert list(model.classes_) == ["x", "y", "z"]
    assert model.latent_mean_.shape == (90, 2)
    assert set(model.predict(pd.DataFrame(X[:4], columns=list("abcdef")))) <= {"x", "y", "z"}


def test_dask_input_errors_are_clear(client):
    X, y = _classes(60)
    Xd = da.from_array(X, chunks=(20, 6))
    with pytest.raises(ValueError, match="does not support amortized=True"):
        LDGD(amortized=True, n_inducing=5).fit(Xd, y)
    with pytest.raises(ValueError, match="does not support early_stopping=True"):
        LDGD(early_stopping=True, n_inducing=5).fit(Xd, y)
    with pytest.raises(ValueError, match="y has 59 rows but X has 60"):
        LDGD(n_inducing=5).fit(Xd, y[:59])
    with pytest.raises(ValueError, match="requires y"):
        LDGD(n_inducing=5).fit(Xd)
