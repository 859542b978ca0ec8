"""Fits do not depend on the units of the data; a hyperparameter stopped by its bound warns."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import SparseGPRegressor, UnscentedGPLVM
from sklearn_lvgp.kernels import RBF


def _rmse(scale):
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (200, 1))
    y = np.sin(X[:, 0]) + 0.05 * rng.standard_normal(200)
    Xt = rng.uniform(-3, 3, (200, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # no bound reached in any units
        m = SparseGPRegressor(n_inducing=20, random_state=0).fit(X * scale, y)
    return float(np.sqrt(np.mean((m.predict(Xt * scale) - np.sin(Xt[:, 0])) ** 2)))


def test_sparse_gp_default_kernel_fits_inputs_in_any_units():
    unit = _rmse(1.0)
    assert unit < 0.02
    assert _rmse(1e6) < 2 * unit  # was 0.45 with absolute length-scale bounds


def test_gplvm_default_kernel_scales_with_the_data():
    X = load_iris().data
    unit = UnscentedGPLVM(n_components=2, random_state=0).fit(X)
    big = UnscentedGPLVM(n_components=2, random_state=0).fit(X * 1e4)
    # signal and noise both scale by 1e8: the same model in other units
    assert big.kernel_.variance / big.noise_variance_ == pytest.approx(
        unit.kernel_.variance / unit.noise_variance_, rel=0.05)


def test_hyperparameter_at_its_bound_warns():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (60, 1))
    y = np.sin(X[:, 0])
    tight = RBF(length_scale=1e-3, length_scale_bounds=(1e-5, 1e-3))
    with pytest.warns(ConvergenceWarning, match="kernel_ hyperparameter length_scale is at its "
                                                "upper bound"):
        SparseGPRegressor(kernel=tight, n_inducing=10, random_state=0).fit(X, y)


def test_gplvm_warns_that_a_non_ard_kernel_cannot_rank_dimensions():
    from sklearn_lvgp.kernels import Matern32

    X = load_iris().data
    with pytest.warns(UserWarning, match="relevance_ is the same for each"):
        UnscentedGPLVM(n_components=2, kernel=Matern32(), expectation="unscented",
                       max_iter=20, random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        UnscentedGPLVM(n_components=2, kernel=Matern32(length_scale=np.ones(2)),
                       expectation="unscented", max_iter=20, random_state=0).fit(X)
