"""The target-outlier generator of the robust-regression experiments."""

import numpy as np
import pytest

from sklearn_lvgp.datasets import add_target_outliers


def test_outliers_shift_the_chosen_rows_by_the_magnitude():
    y = np.random.default_rng(0).standard_normal(200)
    out, mask = add_target_outliers(y, fraction=0.05, magnitude=10.0, random_state=3)
    assert mask.sum() == 10
    np.testing.assert_array_equal(out[~mask], y[~mask])
    np.testing.assert_allclose(np.abs(out[mask] - y[mask]), 10.0 * y.std(), rtol=1e-14)
    assert set(np.sign(out[mask] - y[mask])) <= {-1.0, 1.0}
    again, mask_again = add_target_outliers(y, fraction=0.05, magnitude=10.0, random_state=3)
    np.testing.assert_array_equal(again, out)
    np.testing.assert_array_equal(mask_again, mask)
    assert not np.shares_memory(out, y)


@pytest.mark.parametrize("kwargs, match", [
    ({"fraction": 1.5}, "fraction must be <= 1"),
    ({"fraction": -0.1}, "fraction must be >= 0"),
    ({"magnitude": -1.0}, "magnitude must be >= 0"),
])
def test_outlier_parameters_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        add_target_outliers(np.zeros(10), **kwargs)


def test_outlier_targets_must_be_one_dimensional():
    with pytest.raises(ValueError, match="y must be 1-D"):
        add_target_outliers(np.zeros((10, 2)))
