"""GPCDE's bound over row chunks on the engine's threads: chunking and threads change nothing."""

import numpy as np
import pytest

from sklearn_lvgp import GPCDE
from sklearn_lvgp._core.parallel import threads
from sklearn_lvgp.engine import _executor as engine_executor


def _fitted(q_w):
    r = np.random.default_rng(0)
    X = r.uniform(-2, 2, (40, 2))
    y = np.sin(X[:, 0]) + 0.3 * r.standard_normal(40)
    m = GPCDE(n_inducing=6, max_iter=2, q_w=q_w, gh_order=3, expectation="unscented",
              random_state=0).fit(X, y)
    Xs = (X - m.X_mean_) / m.X_scale_
    Ys = (y[:, None] - m.y_mean_) / m.y_scale_
    return m._model, m._x, Xs, Ys


def _elbo(model, x, Xs, Ys):
    rows = np.arange(Xs.shape[0])
    return model.elbo(x, Xs, Ys, rows, 1.5, np.random.RandomState(3))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("q_w", ["quadrature", "gaussian", "amortized"])
def test_chunked_bound_equals_one_chunk_and_ignores_threads(q_w, monkeypatch):
    model, x, Xs, Ys = _fitted(q_w)
    f_ref, g_ref = _elbo(model, x, Xs, Ys)
    monkeypatch.setattr(engine_executor, "MIN_CHUNK_WORK", 1)
    monkeypatch.setattr(engine_executor, "TARGET_CHUNKS", 6)
    assert len(model._chunk_ranges(Xs.shape[0], 3)) == 4  # 6, balanced to a power of two
    results = []
    for n_jobs in (1, 2, 3):
        with threads(n_jobs):
            results.append(_elbo(model, x, Xs, Ys))
    f, g = results[0]
    assert f == pytest.approx(f_ref, rel=1e-10)
    np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-10 * np.max(np.abs(g_ref)))
    for f_n, g_n in results[1:]:
        assert f_n == f
        np.testing.assert_array_equal(g_n, g)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_chunked_bound_gradient_matches_finite_differences(monkeypatch):
    from sklearn_lvgp.utils.gradcheck import check_grad

    model, x, Xs, Ys = _fitted("quadrature")
    monkeypatch.setattr(engine_executor, "MIN_CHUNK_WORK", 1)
    monkeypatch.setattr(engine_executor, "TARGET_CHUNKS", 5)
    rows = np.arange(Xs.shape[0])
    x = x + 0.01 * np.random.default_rng(4).standard_normal(x.size)
    with threads(2):
        check_grad(lambda z: model.elbo(z, Xs, Ys, rows, 1.5, np.random.RandomState(3)), x,
                   rtol=1e-5, blocks=model.packer)
