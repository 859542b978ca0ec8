"""The one row-block plan of the prediction paths."""

import numpy as np

import sklearn_lvgp._core.blocks as blocks
from sklearn_lvgp import DeepGP
from sklearn_lvgp._core.blocks import row_blocks


def test_row_blocks_cover_the_rows_in_order_within_the_budget():
    for n, per_row, budget in [(10, 3, 9), (7, 1, 256), (5, 100, 20), (0, 4, 8), (1, 1, 1)]:
        parts = row_blocks(n, per_row, budget)
        rows = np.concatenate([np.arange(n)[s] for s in parts]) if parts else np.zeros(0)
        np.testing.assert_array_equal(rows, np.arange(n))
        assert all(s.stop - s.start <= max(1, budget // per_row) for s in parts)


def test_prediction_does_not_depend_on_the_block_size(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (60, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(60)
    model = DeepGP(n_layers=2, n_inducing=8, max_iter=30, n_predict_samples=20,
                   random_state=0).fit(X, y)
    whole = model.predict_log_density(X, y)
    monkeypatch.setattr(blocks, "PREDICT_POINTS", 20)  # one row per block
    np.testing.assert_allclose(model.predict_log_density(X, y), whole, rtol=1e-12, atol=1e-12)
