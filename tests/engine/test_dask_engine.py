"""The chunked engine on Dask: a 2-worker LocalCluster started here gives the in-memory results."""


import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from sklearn_lvgp import DeepGP, SparseGPRegressor, UnscentedGPLVM  # noqa: E402
from sklearn_lvgp.bounds._collapsed import CollapsedPsiBound  # noqa: E402
from sklearn_lvgp.engine import InMemoryRows  # noqa: E402
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
    """Default blocks (small here) on both sides: the in-memory bits, whatever the partitions."""
    Y = _latent_data()
    r = np.random.default_rng(2)
    mu, S, Z = r.standard_normal((300, 2)), r.uniform(0.1, 0.5, (300, 2)), r.standard_normal((6, 2))
    for kernel, rule in ((Matern32(length_scale=[1.0, 0.7]), "unscented"), (None, "analytic")):
        from sklearn_lvgp.expectations import make_rule
        from sklearn_lvgp.kernels import RBF

        kernel = (kernel or RBF(length_scale=[0.9, 1.2])).initialize(2, np.random.RandomState(0))
        rule = make_rule(rule, kernel, 2)[1]
        F0, g0, _ = CollapsedPsiBound(Y).evaluate(kernel, Z, mu, S, 0.3, rule, need_local=False)
        for rows_per_partition in (75, 110):
            state = DaskLocals(DaskRows({"Y": da.from_array(Y, chunks=(rows_per_partition, 5))}))
            state.set_locals(mu, S)
            F1, g1, _ = state.evaluate(kernel, Z, 0.3, rule)
            assert F1 == F0
            for key in ("Z", "theta", "noise"):
                np.testing.assert_array_equal(g1[key], g0[key], err_msg=key)


def _psi_rows(Y, mu, S, rows_per_partition=None, **kw):
    if rows_per_partition is None:
        return InMemoryRows({"Y": Y, "mu": mu, "S": S}, **kw)
    return DaskRows({name: da.from_array(A, chunks=(rows_per_partition, A.shape[1]))
                     for name, A in (("Y", Y), ("mu", mu), ("S", S))}, **kw)


@pytest.mark.parametrize("expectation", ["unscented", "analytic"])
def test_psi_bound_bits_do_not_depend_on_tasks_threads_or_partitions(client, expectation):
    """Blocks of 40 rows: in memory with one or three blocks per task (one and two threads) and
    on Dask with partitions of 100 rows (aligned) and 130 rows (moved to the nearest block
    boundary), the value and every gradient (Z, θ, σ² and the rows' μ, S) are the same bits."""
    from sklearn_lvgp._core.parallel import threads
    from sklearn_lvgp.bounds._collapsed import CollapsedPsi, PsiParams
    from sklearn_lvgp.engine import evaluate_bound
    from sklearn_lvgp.expectations import make_rule
    from sklearn_lvgp.kernels import RBF

    r = np.random.default_rng(5)
    N = 410
    Y, mu = r.standard_normal((N, 4)), r.standard_normal((N, 2))
    S, Z = r.uniform(0.1, 0.5, (N, 2)), r.standard_normal((7, 2))
    kernel = (Matern32(length_scale=[1.0, 0.7]) if expectation == "unscented"
              else RBF(length_scale=[0.9, 1.2])).initialize(2, np.random.RandomState(0))
    params = PsiParams(kernel, Z, 0.3, make_rule(expectation, kernel, 2)[1], N, 4)
    sources = [("in memory, 1 block per task, 1 thread", 1, _psi_rows(Y, mu, S, chunk_rows=40)),
               ("in memory, 3 blocks per task, 2 threads", 2,
                _psi_rows(Y, mu, S, chunk_rows=40, blocks_per_task=3))]
    for rows in (100, 130):
        sources.append((f"dask, partitions of {rows}", 1, _psi_rows(Y, mu, S, rows, chunk_rows=40)))
    out = []
    for what, n_jobs, source in sources:
        with threads(n_jobs):
            out.append((what, evaluate_bound(CollapsedPsi(), params, source)))
    assert sources[3][2].row_chunks == (120, 120, 160, 10)  # moved to block boundaries
    _, ref = out[0]
    assert len(ref.grads["theta"]) and len(sources[0][2].chunks(CollapsedPsi(), params)[0]) == 11
    for what, res in out[1:]:
        assert res.value == ref.value, what
        for key in ("Z", "theta", "noise"):
            np.testing.assert_array_equal(res.grads[key], ref.grads[key], err_msg=what)
        for key in ("mu", "S"):
            np.testing.assert_array_equal(res.local[key], ref.local[key], err_msg=what)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_gplvm_dask_fit_equals_in_memory_alternating_fit(client):
    """Same rounds, any partitions: the same model, bit for bit. The local steps solve each
    row on its own, and the global step's sums are taken on the pairwise tree of the block
    index, so the partitions change no bit."""
    from sklearn_lvgp.kernels import RBF

    Y = _latent_data()
    kw = {"n_inducing": 8, "optimizer": "alternating", "max_iter": 2, "random_state": 0,
          "init": "random", "normalize_X": "none", "kernel": RBF(length_scale=[0.5, 0.5]),
          "noise_variance_init": 0.1}
    mem = UnscentedGPLVM(**kw).fit(Y)
    dsk = UnscentedGPLVM(**kw).fit(da.from_array(Y, chunks=(75, 5)))
    assert dsk.n_iter_ == mem.n_iter_ and dsk.optimizer_ == "alternating"
    assert dsk.elbo_ == pytest.approx(mem.elbo_, rel=1e-12)
    np.testing.assert_array_equal(dsk.elbo_history_, mem.elbo_history_)
    np.testing.assert_array_equal(dsk.latent_mean_, mem.latent_mean_)
    np.testing.assert_array_equal(dsk.kernel_.theta, mem.kernel_.theta)
    T = dsk.transform(da.from_array(Y[:10], chunks=(5, 5)))
    assert isinstance(T, da.Array) and T.compute().shape == (10, 2)


@pytest.mark.parametrize("rows_per_partition", [7, 64, 300])
def test_pairwise_defaults_have_the_in_memory_bits_on_dask(client, rows_per_partition):
    """Column moments, the normalisations and the PCA start (padded beyond the data's rank,
    scaled or not) of a dask array equal the in-memory ones to the last bit, and the in-memory
    ones equal the plain numpy ones up to rounding."""
    from sklearn_lvgp._core.init import pairwise_pca_latents, pca_latents
    from sklearn_lvgp._core.pairwise import PairwiseRows
    from sklearn_lvgp._core.scaling import (
        column_moments,
        pairwise_column_moments,
        pairwise_column_variances,
        pairwise_normalization,
    )
    from sklearn_lvgp.engine._dask import DaskPairwiseRows

    Y = _latent_data() + np.array([1e3, -2.0, 0.0, 5.0, 1e-3])
    mem = PairwiseRows(Y)
    dsk = DaskPairwiseRows(da.from_array(Y, chunks=(rows_per_partition, 5)))
    for a, b in zip(pairwise_column_moments(mem), pairwise_column_moments(dsk), strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(pairwise_column_moments(mem), column_moments(Y), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for rule in ("standardize", "center", "none"):
        for a, b in zip(pairwise_normalization(mem, rule), pairwise_normalization(dsk, rule),
                        strict=True):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(pairwise_column_variances(mem), pairwise_column_variances(dsk), strict=True):
        np.testing.assert_array_equal(a, b)
    for Q, scaled in ((2, True), (2, False), (7, True)):
        X = pairwise_pca_latents(mem, Q, scaled=scaled)
        np.testing.assert_array_equal(pairwise_pca_latents(dsk, Q, scaled=scaled).compute(), X)
        ref = pca_latents(Y, Q)
        if scaled:
            ref = ref / np.std(ref[:, 0])
        np.testing.assert_allclose(X, ref, rtol=1e-9, atol=1e-9 * np.max(np.abs(ref)))


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
