"""The chunked engine on Dask: a 2-worker LocalCluster started here gives the in-memory results."""


import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from sklearn_lvgp import DeepGP, SparseGPRegressor, UnscentedGPLVM  # noqa: E402
from sklearn_lvgp.bounds._collapsed import CollapsedPsiBound  # noqa: E402
from sklearn_lvgp.engine import _executor as engine_executor  # noqa: E402
from sklearn_lvgp.engine._dask import DaskRows  # noqa: E402
from sklearn_lvgp.kernels import Matern32  # noqa: E402
from sklearn_lvgp.optim._alternating import DaskLocals  # noqa: E402


@pytest.fixture
def chunks_of_75(monkeypatch):
    """In-memory chunks of 75 rows: the partitions the Dask inputs below use."""
    monkeypatch.setattr(engine_executor, "MIN_CHUNK_WORK", 1)
    monkeypatch.setattr(engine_executor, "TARGET_CHUNKS", 4)


def _regression(n=300):
    r = np.random.default_rng(0)
    X = r.uniform(-2, 2, (n, 2))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * r.standard_normal(n)
    return X, y


def _latent_data(n=300):
    r = np.random.default_rng(1)
    return r.standard_normal((n, 5)) @ np.diag([3.0, 2.0, 1.0, 0.5, 0.2])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sgpr_dask_fit_equals_in_memory_fit(client, chunks_of_75):
    """Same chunks, same start, same iterations: the same model. The start is fixed here: the
    data-derived defaults come from dask's reductions (last bits differ from numpy's), which
    L-BFGS-B can amplify along a fit."""
    from sklearn_lvgp.kernels import RBF

    X, y = _regression()
    kw = {"n_inducing": 10, "max_iter": 30, "random_state": 0, "noise_variance_init": 0.1,
          "kernel": RBF(length_scale=[1.0, 1.0])}
    mem = SparseGPRegressor(**kw).fit(X, y)
    dsk = SparseGPRegressor(**kw).fit(da.from_array(X, chunks=(75, 2)), da.from_array(y, 75))
    assert dsk.n_iter_ == mem.n_iter_
    assert dsk.elbo_ == pytest.approx(
        mem.elbo_, rel=1e-8)
    np.testing.assert_allclose(dsk.kernel_.theta, mem.kernel_.theta, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(dsk.inducing_inputs_, mem.inducing_inputs_, rtol=1e-8,
                               atol=1e-8)
    assert dsk.noise_variance_ == pytest.approx(mem.noise_variance_, rel=1e-8)
    mean, std = dsk.predict(da.from_array(X[:50], chunks=(20, 2)), return_std=True)
    assert isinstance(mean, da.Array) and mean.shape == (50,)
    m_mem, s_mem = mem.predict(X[:50], return_std=True)
    np.testing.assert_allclose(mean.compute(), m_mem, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(std.compute(), s_mem, rtol=1e-7)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sgpr_fits_a_dask_dataframe_with_names(client):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y = _regression(120)
    frame = dd.from_pandas(pd.DataFrame(X, columns=["a", "b"]), npartitions=3)
    target = dd.from_pandas(pd.Series(y, name="y"), npartitions=3)
    model = SparseGPRegressor(n_inducing=5, max_iter=5, random_state=0).fit(frame, target)
    assert list(model.feature_names_in_) == ["a", "b"] and model.n_features_in_ == 2
    assert model.predict(X[:3]).shape == (3,)


def test_dask_psi_bound_equals_in_memory_bound(client, chunks_of_75):
    Y = _latent_data()
    r = np.random.default_rng(2)
    mu, S, Z = r.standard_normal((300, 2)), r.uniform(0.1, 0.5, (300, 2)), r.standard_normal((6, 2))
    for kernel, rule in ((Matern32(length_scale=[1.0, 0.7]), "unscented"), (None, "analytic")):
        from sklearn_lvgp.expectations import make_rule
        from sklearn_lvgp.kernels import RBF

        kernel = (kernel or RBF(length_scale=[0.9, 1.2])).initialize(2, np.random.RandomState(0))
        rule = make_rule(rule, kernel, 2)[1]
        F0, g0, _ = CollapsedPsiBound(Y).evaluate(kernel, Z, mu, S, 0.3, rule, need_local=False)
        state = DaskLocals(DaskRows({"Y": da.from_array(Y, chunks=(75, 5))}))
        state.set_locals(mu, S)
        F1, g1, _ = state.evaluate(kernel, Z, 0.3, rule)
        assert F1 == pytest.approx(F0, rel=1e-12)
        for key in ("Z", "theta", "noise"):
            np.testing.assert_allclose(g1[key], g0[key], rtol=1e-10, atol=1e-12, err_msg=key)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_gplvm_dask_fit_equals_in_memory_alternating_fit(client):
    """Same rounds, any chunks: the same model. The local steps solve each row on its own, so
    the in-memory chunks need not be the partitions. The start is fixed by the parameters here;
    the data-derived defaults (column means, scales) come from dask's reductions, whose last
    bits differ from numpy's. The global step's sums over the partitions also differ from
    those over the in-memory chunks in their last bits, and L-BFGS-B can amplify such
    differences along a fit."""
    from sklearn_lvgp.kernels import RBF

    Y = _latent_data()
    kw = {"n_inducing": 8, "optimizer": "alternating", "max_iter": 2, "random_state": 0,
          "init": "random", "normalize_X": "none", "kernel": RBF(length_scale=[0.5, 0.5]),
          "noise_variance_init": 0.1}
    mem = UnscentedGPLVM(**kw).fit(Y)
    dsk = UnscentedGPLVM(**kw).fit(da.from_array(Y, chunks=(75, 5)))
    assert dsk.n_iter_ == mem.n_iter_ and dsk.optimizer_ == "alternating"
    assert dsk.elbo_ == pytest.approx(mem.elbo_, rel=1e-6)
    np.testing.assert_allclose(dsk.elbo_history_, mem.elbo_history_, rtol=1e-6)
    np.testing.assert_allclose(dsk.latent_mean_, mem.latent_mean_, rtol=0, atol=1e-3)
    T = dsk.transform(da.from_array(Y[:10], chunks=(5, 5)))
    assert isinstance(T, da.Array) and T.compute().shape == (10, 2)


def test_dask_input_errors_are_clear(client):
    X, y = _regression(40)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        SparseGPRegressor(n_inducing=5).fit(da.from_array(bad, chunks=(10, 2)), y)
    with pytest.raises(ValueError, match="does not support early_stopping=True"):
        DeepGP(early_stopping=True, n_inducing=5).fit(da.from_array(X, chunks=(10, 2)), y)
    with pytest.raises(ValueError, match="optimizer='alternating'"):
        UnscentedGPLVM(optimizer="lbfgs").fit(da.from_array(X, chunks=(10, 2)))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("expectation", ["monte_carlo", "unscented"])
def test_deep_gp_dask_fit_equals_in_memory_fit(client, expectation):
    """Data-parallel minibatch gradients: the same minibatches and draws, the same model."""
    r = np.random.default_rng(3)
    X = r.uniform(-2, 2, (300, 3))
    y = np.sin(X[:, 0]) + 0.1 * r.standard_normal(300)
    kw = {"n_layers": 2, "n_inducing": 10, "max_iter": 20, "batch_size": 64,
          "expectation": expectation, "random_state": 0}
    mem = DeepGP(**kw).fit(X, y)
    dsk = DeepGP(**kw).fit(da.from_array(X, chunks=(75, 3)), da.from_array(y, chunks=75))
    assert dsk.n_iter_ == mem.n_iter_ == 20
    np.testing.assert_allclose(dsk._x, mem._x, rtol=1e-8, atol=1e-8 * np.max(np.abs(mem._x)))
    np.testing.assert_allclose(dsk.elbo_history_, mem.elbo_history_, rtol=1e-8)
    pred = dsk.predict(da.from_array(X[:20], chunks=(10, 3)))
    assert isinstance(pred, da.Array)
    np.testing.assert_allclose(pred.compute(), mem.predict(X[:20]), rtol=1e-7, atol=1e-9)
