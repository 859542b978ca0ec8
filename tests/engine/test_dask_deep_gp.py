"""DeepGP on Dask through its protocol bounds: a 2-worker LocalCluster started here gives the
in-memory minibatch bounds and fits, with and without latent covariates."""


import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from sklearn_lvgp import DeepGP  # noqa: E402
from sklearn_lvgp.engine._dask import DaskRows  # noqa: E402

LATENT = {"latent_dim": 1, "hidden_dims": 2, "encoder_hidden": (5,)}


def _data(n=300):
    r = np.random.default_rng(3)
    X = r.uniform(-2, 2, (n, 3))
    y = np.sin(X[:, 0]) + 0.1 * r.standard_normal(n)
    return X, y


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("kw", [{"n_layers": 2}, {"n_layers": 2, "expectation": "unscented"},
                                {"n_layers": 2, "inference": "iwvi", "n_importance": 3,
                                 **LATENT},
                                {"n_layers": 1, **LATENT}],
                         ids=["dsvi-mc", "dsvi-unscented", "latent-iwvi", "latent-vi"])
def test_minibatch_bound_on_dask_rows_equals_in_memory(client, kw):
    """The same bound object on a minibatch of partitioned rows (``DaskRows.subset``, the draws
    as row arrays beside it) and on the rows in memory, one chunk or several."""
    X, y = _data()
    m = DeepGP(n_inducing=6, max_iter=2, random_state=0, **kw).fit(X, y)
    model = m._model
    Xs = (X - m.X_mean_) / m.X_scale_
    Ys = ((y - m.y_mean_) / m.y_scale_)[:, None]
    rows = DaskRows({"X": da.from_array(Xs, chunks=(75, 3)),
                     "y": da.from_array(Ys, chunks=(75, 1))})
    idx = np.random.default_rng(0).permutation(300)[:90]
    x = m._x + 0.01 * np.random.default_rng(1).standard_normal(m._x.size)
    draws = model.draw_rows(idx.size, 2, np.random.RandomState(5))
    f_d, g_d = model.evaluate(x, rows.subset(idx, extra=draws), 300 / 90, 2)
    for chunk_rows in (None, 7):
        model.chunk_rows = chunk_rows
        try:
            f_m, g_m = model.elbo(x, Xs[idx], Ys[idx], 300 / 90, 2, np.random.RandomState(5))
        finally:
            model.chunk_rows = None
        assert f_d == pytest.approx(f_m, rel=1e-10)
        np.testing.assert_allclose(g_d, g_m, rtol=1e-9, atol=1e-10 * np.max(np.abs(g_m)))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("inference", ["iwvi", "vi"])
def test_latent_deep_gp_dask_fit_equals_in_memory_fit(client, inference):
    """Latent covariates on Dask: the same minibatches, draws and encoder start, the same model
    (the partitions' partials are added in partition order, so equal up to rounding)."""
    X, y = _data()
    kw = {"n_layers": 2, "n_inducing": 8, "max_iter": 15, "batch_size": 64,
          "inference": inference, "n_importance": 3, "random_state": 0, **LATENT}
    mem = DeepGP(**kw).fit(X, y)
    dsk = DeepGP(**kw).fit(da.from_array(X, chunks=(75, 3)), da.from_array(y, chunks=75))
    assert dsk.n_iter_ == mem.n_iter_ == 15
    np.testing.assert_allclose(dsk._x, mem._x, rtol=1e-8, atol=1e-8 * np.max(np.abs(mem._x)))
    np.testing.assert_allclose(dsk.elbo_history_, mem.elbo_history_, rtol=1e-8)
    pred = dsk.predict(da.from_array(X[:20], chunks=(10, 3)), return_std=True)
    assert all(isinstance(p, da.Array) for p in pred)
    for got, want in zip(pred, mem.predict(X[:20], return_std=True), strict=True):
        np.testing.assert_allclose(got.compute(), want, rtol=1e-7, atol=1e-9)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("kw", [{"n_layers": 2}, {"n_layers": 2, "expectation": "unscented"},
                                {"n_layers": 2, "inference": "iwvi", "n_importance": 3,
                                 **LATENT},
                                {"n_layers": 1, "whiten": False, **LATENT}],
                         ids=["dsvi-mc", "dsvi-unscented", "latent-iwvi", "latent-vi"])
def test_natgrad_step_on_dask_rows_equals_in_memory(client, kw):
    """The last layer's natural-gradient step from the data sums of the partitions holding a
    minibatch's rows (its draws beside them) is the step on the rows in memory."""
    X, y = _data()
    m = DeepGP(n_inducing=6, max_iter=2, random_state=0, **kw).fit(X, y)
    model = m._model
    Xs = (X - m.X_mean_) / m.X_scale_
    Ys = ((y - m.y_mean_) / m.y_scale_)[:, None]
    rows = DaskRows({"X": da.from_array(Xs, chunks=(75, 3)),
                     "y": da.from_array(Ys, chunks=(75, 1))})
    idx = np.random.default_rng(0).permutation(300)[:90]
    x = m._x + 0.01 * np.random.default_rng(1).standard_normal(m._x.size)
    draws = model.draw_rows(idx.size, 2, np.random.RandomState(5))
    got = model.natgrad_rows(x, rows.subset(idx, extra=draws), 300 / 90, 2, 0.3)
    want = model.natgrad(x, Xs[idx], Ys[idx], 300 / 90, 2, 0.3, np.random.RandomState(5))
    assert not np.allclose(want, x)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10 * np.max(np.abs(want)))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("kw", [{}, {"natgrad_gamma": (1e-3, 0.1, 5), **LATENT}],
                         ids=["dsvi", "latent-vi"])
def test_natgrad_deep_gp_dask_fit_equals_in_memory_fit(client, kw):
    """natgrad_gamma on Dask: the same minibatches and draws for both steps of each
    iteration, the same model up to rounding."""
    X, y = _data()
    kw = {"n_layers": 2, "n_inducing": 8, "max_iter": 15, "batch_size": 64,
          "natgrad_gamma": 0.1, "random_state": 0, **kw}
    mem = DeepGP(**kw).fit(X, y)
    dsk = DeepGP(**kw).fit(da.from_array(X, chunks=(75, 3)), da.from_array(y, chunks=75))
    assert dsk.n_iter_ == mem.n_iter_ == 15
    np.testing.assert_allclose(dsk._x, mem._x, rtol=1e-8, atol=1e-8 * np.max(np.abs(mem._x)))
    np.testing.assert_allclose(dsk.elbo_history_, mem.elbo_history_, rtol=1e-8)


def test_what_needs_rows_in_memory_is_refused_by_name(client):
    X, y = _data(40)
    Xd, yd = da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10)
    with pytest.raises(ValueError, match="does not support optimizer='lbfgs'"):
        DeepGP(n_inducing=5, n_layers=1, optimizer="lbfgs").fit(Xd, yd)
