"""Every estimator takes a scikit-learn kernel and fits exactly as with its converted twin
(the twin of an estimator with a Gaussian noise of its own takes the WhiteKernel's noise level
as its starting noise variance instead of a White summand)."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import kernels as skk

from sklearn_lvgp import GPCDE, LDGD, DeepGP, SparseGPRegressor, UnscentedGPLVM
from sklearn_lvgp.kernels import RBF, Matern32, from_sklearn

SK_KERNEL = skk.ConstantKernel(1.5) * skk.Matern(length_scale=[1.0, 2.0], nu=1.5) \
    + skk.WhiteKernel(0.01)

CASES = [
    SparseGPRegressor(n_inducing=6, max_iter=10, random_state=0),
    UnscentedGPLVM(n_components=2, n_inducing=6, max_iter=10, random_state=0),
    DeepGP(n_layers=1, n_inducing=6, max_iter=10, random_state=0),
    GPCDE(latent_dim=0, n_inducing=6, max_iter=10, random_state=0),
    LDGD(n_components=2, n_inducing=6, max_iter=10, transform_max_iter=5,
         expectation="unscented", random_state=0),
]


def _result(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if isinstance(est, UnscentedGPLVM):
            return est.fit(X).transform(X[:5])
        if isinstance(est, LDGD):
            return est.fit(X, (y > 0).astype(int)).predict_proba(X[:5])
        return est.fit(X, y).predict(X[:5])


@pytest.mark.parametrize("est", CASES, ids=lambda e: type(e).__name__)
def test_sklearn_kernel_fits_like_its_conversion(est):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(30)
    kernel = clone(SK_KERNEL)
    before = repr(kernel)
    if isinstance(est, (SparseGPRegressor, UnscentedGPLVM, GPCDE)):  # the WhiteKernel merged
        with pytest.warns(UserWarning, match="WhiteKernel in kernel duplicates"):
            got = _result(clone(est).set_params(kernel=kernel), X, y)
        twin = clone(est).set_params(kernel=from_sklearn(SK_KERNEL.k1))
        if not isinstance(est, GPCDE):  # GPCDE's noise_variance_init (0.01) is always set
            twin.set_params(noise_variance_init=0.01)
    else:
        got = _result(clone(est).set_params(kernel=kernel), X, y)
        twin = clone(est).set_params(kernel=from_sklearn(SK_KERNEL))
    want = _result(twin, X, y)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert repr(kernel) == before  # the user's kernel is untouched


@pytest.mark.parametrize("est", CASES, ids=lambda e: type(e).__name__)
def test_unconvertible_kernel_is_named(est):
    X = np.random.default_rng(0).standard_normal((20, 2))
    y = (X[:, 0] > 0).astype(int) if isinstance(est, LDGD) else X[:, 0]
    bad = skk.Exponentiation(skk.RBF(), 2)
    with pytest.raises(TypeError, match="Exponentiation.*Convertible scikit-learn kernels"):
        clone(est).set_params(kernel=bad).fit(X, y)
    with pytest.raises(TypeError, match="kernel must be a sklearn_lvgp.kernels.Kernel or a "
                                        "scikit-learn kernel, got str"):
        clone(est).set_params(kernel="rbf").fit(X, y)


def test_exp_sine_squared_refused_in_several_dimensions():
    X = np.random.default_rng(0).standard_normal((20, 2))
    with pytest.raises(TypeError, match="ExpSineSquared.*2 input dimensions"):
        SparseGPRegressor(kernel=skk.ExpSineSquared()).fit(X, X[:, 0])
    x1 = X[:, :1]
    SparseGPRegressor(kernel=skk.ExpSineSquared(), n_inducing=5, max_iter=5).fit(x1, X[:, 0])


BAD_KERNELS = [
    (RBF(length_scale=0.0), "length_scale must be positive and finite, got 0.0"),
    (RBF(length_scale=-1.0), "length_scale must be positive and finite, got -1.0"),
    (RBF(length_scale=np.nan), "length_scale must be positive and finite, got nan"),
    (RBF(length_scale_bounds=(10.0, 1.0)), r"length_scale_bounds must satisfy 0 < low < high"),
    (RBF() + Matern32(variance_bounds=(0.0, 1.0)), r"k2__variance_bounds must satisfy"),
    (skk.RBF(length_scale=0.0), "length_scale must be positive and finite"),
]


@pytest.mark.parametrize("est", CASES, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize(("kernel", "match"), BAD_KERNELS, ids=[m[:30] for _, m in BAD_KERNELS])
def test_invalid_kernel_hyperparameters_are_named(est, kernel, match):
    X = np.random.default_rng(0).standard_normal((20, 2))
    y = (X[:, 0] > 0).astype(int) if isinstance(est, LDGD) else X[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no log(0) on the way to the error
        with pytest.raises(ValueError, match=match):
            clone(est).set_params(kernel=kernel).fit(X, y)
