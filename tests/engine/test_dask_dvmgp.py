"""DVMGP on Dask: a 2-worker LocalCluster started here gives the in-memory fit."""


import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from sklearn_lvgp import DVMGP  # noqa: E402
from sklearn_lvgp.engine import _executor as engine_executor  # noqa: E402


@pytest.fixture
def chunks_of_75(monkeypatch):
    """In-memory chunks of 75 rows: the partitions the Dask inputs below use."""
    monkeypatch.setattr(engine_executor, "MIN_CHUNK_WORK", 1)
    monkeypatch.setattr(engine_executor, "TARGET_CHUNKS", 4)


def _data(n=300):
    r = np.random.default_rng(4)
    X = r.uniform(-2, 2, (n, 2))
    y = np.where(X[:, 0] > 0, X[:, 1] ** 2, -X[:, 1]) + 0.1 * r.standard_normal(n)
    return X, y


# The data enter unnormalised here (normalize_X="none", normalize_y=False): the column moments
# are then exact on both sides, and the start differs only by the last bits of dask's target
# variance and of the PCA directions (covariance eigenvectors on Dask, an SVD in memory), which
# the optimisers can amplify along a fit.
KW = {"n_inducing": 8, "n_inducing_projection": 6, "normalize_X": "none", "normalize_y": False,
      "random_state": 0}


def _same_model(dsk, mem, rtol):
    assert dsk.n_iter_ == mem.n_iter_
    assert dsk.elbo_ == pytest.approx(mem.elbo_, rel=rtol)
    np.testing.assert_allclose(dsk.elbo_history_, mem.elbo_history_, rtol=rtol)
    for name in ("inducing_inputs_", "inducing_inputs_projection_", "qv_mean_", "qv_chol_",
                 "relevance_"):
        ref = getattr(mem, name)
        np.testing.assert_allclose(getattr(dsk, name), ref, rtol=rtol,
                                   atol=rtol * np.max(np.abs(ref)), err_msg=name)
    assert dsk.noise_variance_ == pytest.approx(mem.noise_variance_, rel=rtol)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_dvmgp_dask_lbfgs_fit_equals_in_memory_fit(client, chunks_of_75):
    """Both L-BFGS-B phases on the partitions: the in-memory model, and dask predictions."""
    X, y = _data()
    kw = {**KW, "n_iter_fixed_noise": 5, "max_iter": 15}
    mem = DVMGP(**kw).fit(X, y)
    dsk = DVMGP(**kw).fit(da.from_array(X, chunks=(75, 2)), da.from_array(y, chunks=75))
    _same_model(dsk, mem, 1e-8)
    Xt = da.from_array(X[:50], chunks=(20, 2))
    mean, std = dsk.predict(Xt, return_std=True)
    assert isinstance(mean, da.Array) and mean.shape == (50,)
    m_mem, s_mem = mem.predict(X[:50], return_std=True)
    np.testing.assert_allclose(mean.compute(), m_mem, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(std.compute(), s_mem, rtol=1e-5)
    h, s = dsk.transform(Xt, return_std=True)
    assert isinstance(h, da.Array) and h.shape == (50, 2)
    h_mem, s_mem = mem.transform(X[:50], return_std=True)
    np.testing.assert_allclose(h.compute(), h_mem, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.compute(), s_mem, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="return_std only"):
        dsk.predict(Xt, return_cov=True)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_dvmgp_dask_adam_fit_with_early_stopping_equals_in_memory_fit(client, chunks_of_75):
    """Full-batch Adam on the training rows where they live (a subset of the partitions), the
    held-out rows gathered for their score: the in-memory model."""
    X, y = _data()
    kw = {**KW, "optimizer": "adam", "learning_rate": 0.02, "n_iter_fixed_noise": 5,
          "max_iter": 100, "early_stopping": True, "validation_fraction": 0.2,
          "n_iter_no_change": 1}
    mem = DVMGP(**kw).fit(X, y)
    dsk = DVMGP(**kw).fit(da.from_array(X, chunks=(75, 2)), da.from_array(y, chunks=75))
    _same_model(dsk, mem, 1e-8)
    assert mem.validation_scores_ is not None
    np.testing.assert_allclose(dsk.validation_scores_, mem.validation_scores_, rtol=1e-8)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_dvmgp_fits_a_dask_dataframe_with_names_and_warm_starts(client):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y = _data(120)
    frame = dd.from_pandas(pd.DataFrame(X, columns=["a", "b"]), npartitions=3)
    target = dd.from_pandas(pd.Series(y, name="y"), npartitions=3)
    model = DVMGP(n_inducing=5, n_inducing_projection=4, n_iter_fixed_noise=3, max_iter=5,
                  random_state=0, warm_start=True).fit(frame, target)
    assert list(model.feature_names_in_) == ["a", "b"] and model.n_features_in_ == 2
    assert model.predict(X[:3]).shape == (3,)
    n_iter, mean = model.n_iter_, model.X_mean_
    model.fit(frame, target)
    assert model.n_iter_ > n_iter and model.X_mean_ is mean  # continued, not refitted
    with pytest.raises(ValueError, match="requires y"):
        DVMGP().fit(da.from_array(X, chunks=(40, 2)))
