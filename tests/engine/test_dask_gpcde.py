"""GPCDE on Dask: a 2-worker LocalCluster started here gives the in-memory fit."""


import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from sklearn_lvgp import GPCDE  # noqa: E402
from sklearn_lvgp.engine import _executor as engine_executor  # noqa: E402


@pytest.fixture
def four_chunks(monkeypatch):
    """Four in-memory chunks over all rows: the partitions the Dask inputs below use."""
    monkeypatch.setattr(engine_executor, "MIN_CHUNK_WORK", 1)
    monkeypatch.setattr(engine_executor, "TARGET_CHUNKS", 4)


def _two_branches(n=300, seed=5):
    r = np.random.default_rng(seed)
    X = r.uniform(-2, 2, (n, 2))
    sign = np.where(r.random(n) < 0.5, 1.0, -1.0)
    y = sign * np.sin(X[:, 0]) + 0.2 * X[:, 1] + 0.1 * r.standard_normal(n)
    return X, y


def _dask(X, y):
    rows = X.shape[0] // 4
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


ADAM = {"n_inducing": 8, "gh_order": 6, "optimizer": "adam", "batch_size": 64, "max_iter": 15,
        "tol": None, "learning_rate": 0.05, "init": "prior", "n_predict_samples": 20,
        "random_state": 0}

CONFIGS = {
    "quadrature": {},
    "free-monte-carlo": {"q_w": "gaussian", "n_samples": 2},
    "amortized-projection": {"q_w": "amortized", "expectation": "unscented",
                             "input_projection_dim": 2, "encoder_hidden": (6,)},
    "mixing-no-natgrad": {"output_mixing_dim": 1, "natgrad_gamma": None},
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", list(CONFIGS))
def test_gpcde_dask_adam_fit_equals_in_memory_fit(client, four_chunks, name):
    """The same minibatches, draws and natural-gradient steps, each minibatch evaluated where
    its rows live: the same model up to rounding (dask's standardisation and the partitions'
    order of the minibatch sums differ in the last bits)."""
    X, y = _two_branches()
    kw = {**ADAM, **CONFIGS[name]}
    mem = GPCDE(**kw).fit(X, y)
    dsk = GPCDE(**kw).fit(*_dask(X, y))
    assert dsk.n_iter_ == mem.n_iter_ == 15 and dsk.optimizer_ == "adam"
    np.testing.assert_allclose(dsk._x, mem._x, rtol=1e-8, atol=1e-8 * np.max(np.abs(mem._x)))
    np.testing.assert_allclose(dsk.elbo_history_, mem.elbo_history_, rtol=1e-8)
    assert dsk.elbo_ == pytest.approx(mem.elbo_, rel=1e-8)
    mean, std = dsk.predict(da.from_array(X[:40], chunks=(20, 2)), return_std=True)
    assert isinstance(mean, da.Array) and mean.shape == (40,)
    m_mem, s_mem = mem.predict(X[:40], return_std=True)
    np.testing.assert_allclose(mean.compute(), m_mem, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(std.compute(), s_mem, rtol=1e-7)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_gpcde_dask_lbfgs_fit_with_switched_off_start_equals_in_memory_fit(client,
                                                                           four_chunks,
                                                                           monkeypatch):
    """``init="gp"`` on Dask: the switched-off sparse GP regression on the collapsed bound of
    the partitions, full-batch natural-gradient steps and L-BFGS-B on the full bound, each pass
    one task per partition (the in-memory chunks are the partitions). The column moments are
    numpy's in both fits here: dask's differ in the last bits, which the 1000 L-BFGS-B
    iterations of the switched-off fit amplify along its flat directions."""
    from sklearn_lvgp._core.scaling import column_moments
    from sklearn_lvgp.models import _gpcde

    monkeypatch.setattr(_gpcde, "column_moments", lambda A: column_moments(np.asarray(A)))
    X, y = _two_branches(200, seed=1)
    kw = {"n_inducing": 6, "gh_order": 6, "max_iter": 15, "init": "gp", "batch_size": None,
          "normalize_y": False, "random_state": 0}
    mem = GPCDE(**kw).fit(X, y)
    dsk = GPCDE(**kw).fit(*_dask(X, y))
    assert dsk.optimizer_ == mem.optimizer_ == "lbfgs"
    assert dsk.n_iter_ == mem.n_iter_
    assert dsk.gp_elbo_ == pytest.approx(mem.gp_elbo_, rel=1e-10)
    assert dsk.elbo_ == pytest.approx(mem.elbo_, rel=1e-10)
    np.testing.assert_allclose(dsk._x, mem._x, rtol=1e-8, atol=1e-8 * np.max(np.abs(mem._x)))
    np.testing.assert_allclose(dsk.predict(X[:20]), mem.predict(X[:20]), rtol=1e-8, atol=1e-10)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_gpcde_fits_a_dask_dataframe_with_names(client):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y = _two_branches(120)
    frame = dd.from_pandas(pd.DataFrame(X, columns=["a", "b"]), npartitions=3)
    target = dd.from_pandas(pd.Series(y, name="y"), npartitions=3)
    model = GPCDE(**{**ADAM, "max_iter": 3}).fit(frame, target)
    assert list(model.feature_names_in_) == ["a", "b"] and model.n_features_in_ == 2
    assert model.predict(X[:3]).shape == (3,)


def test_gpcde_dask_input_errors_are_clear(client):
    X, y = _two_branches(40)
    with pytest.raises(ValueError, match="does not support early_stopping=True"):
        GPCDE(early_stopping=True, n_inducing=5).fit(*_dask(X, y))
    with pytest.raises(ValueError, match="requires y"):
        GPCDE(n_inducing=5).fit(da.from_array(X, chunks=(10, 2)))
    model = GPCDE(**{**ADAM, "max_iter": 2}).fit(X, y)
    with pytest.raises(ValueError, match="return_std only"):
        model.predict(da.from_array(X, chunks=(10, 2)), return_cov=True)
