"""Column scales: constant columns up to rounding get scale 1."""

import numpy as np
from sklearn.preprocessing import StandardScaler

from sklearn_lvgp._core.scaling import column_moments, column_scales


def test_constant_columns_up_to_rounding():
    r = np.random.default_rng(0)
    n = 10741
    A = np.column_stack([
        np.full(n, 0.998),                   # naval's P1: std 1.1e-16 from the mean's rounding
        np.zeros(n),                          # exactly constant
        1.0 + 1e-10 * r.standard_normal(n),   # tiny but real spread
        r.standard_normal(n),
        np.full(n, -3e8),
    ])
    assert A[:, 0].std() > 0
    scale = column_scales(A)
    np.testing.assert_array_equal(scale[[0, 1, 4]], 1.0)  # the constant columns
    np.testing.assert_allclose(scale[[2, 3]], A[:, [2, 3]].std(axis=0))
    mean, scale2 = column_moments(A)
    np.testing.assert_array_equal(scale2, scale)
    np.testing.assert_allclose(mean, A.mean(axis=0))
    # the same columns scikit-learn's StandardScaler leaves unscaled
    np.testing.assert_allclose(scale, StandardScaler().fit(A).scale_)


def test_single_row_is_constant():
    np.testing.assert_array_equal(column_scales(np.array([[2.0, -1.0]])), [1.0, 1.0])
