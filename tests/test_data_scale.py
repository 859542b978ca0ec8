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
    tight = RBF(length_scale=10.0, length_scale_bounds=(10.0, 1e3))
    with pytest.warns(ConvergenceWarning, match="kernel_ hyperparameter length_scale is at its "
                                                "lower bound. Normalise the data or widen "
                                                "length_scale_bounds"):
        SparseGPRegressor(kernel=tight, n_inducing=10, random_state=0).fit(X, y)
    # an ARD length scale at its upper bound switches an irrelevant input off: no warning
    X2 = np.column_stack([X, rng.standard_normal(60)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = SparseGPRegressor(n_inducing=10, random_state=0).fit(X2, y)
    assert model.kernel_.length_scale[1] > 100 * model.kernel_.length_scale[0]


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


@pytest.mark.parametrize("factor", [1e160, 1e-200])
def test_extreme_magnitudes_fit_or_get_a_clear_error(factor):
    # 1e160 once overflowed the column scaling, and scipy's kmeans2 then crashed the
    # interpreter (DeepGP, GPCDE); 1e-200 underflowed it and fits were garbage, silently
    from sklearn_lvgp import DVMGP, GPCDE, LDGD, DeepGP

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = np.sin(X[:, 0])
    for est in (DeepGP(n_inducing=5, max_iter=20, random_state=0),
                GPCDE(n_inducing=5, max_iter=20, gh_order=5, random_state=0),
                LDGD(n_components=2, n_inducing=5, max_iter=20, transform_max_iter=5,
                     random_state=0),
                DVMGP(n_inducing=5, n_inducing_projection=4, max_iter=20, n_iter_fixed_noise=3,
                      random_state=0)):
        yy = (y > 0).astype(int) if isinstance(est, LDGD) else y
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X * factor, yy)
            ref = type(est)(**est.get_params()).fit(X, yy)
        if isinstance(est, LDGD):  # labels are always finite: check the probabilities
            out, expected = est.predict_proba(X[:5] * factor), ref.predict_proba(X[:5])
            np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-12)
            assert np.all(np.isin(est.predict(X[:5] * factor), est.classes_))
        else:
            out, expected = est.predict(X[:5] * factor), ref.predict(X[:5])
        assert np.all(np.isfinite(out))
        # standardised internally: the same model in any units
        np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-8)
    # these two rescale X by powers of two only when it would overflow (the same model as on
    # X / 2**k, bit for bit: test_quiet_defaults.py), and refuse it when told to use it as it is
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sgpr = SparseGPRegressor(n_inducing=5, max_iter=20, random_state=0).fit(X * factor, y)
        gplvm = UnscentedGPLVM(n_components=2, n_inducing=5, max_iter=20, random_state=0)
        assert np.all(np.isfinite(gplvm.fit_transform(X * factor)))
    assert np.all(np.isfinite(sgpr.predict(X[:5] * factor)))
    for est, data in ((SparseGPRegressor(kernel=RBF(), n_inducing=5), (X * factor, y)),
                      (UnscentedGPLVM(n_components=2, n_inducing=5, normalize_X="none"),
                       (X * factor,))):
        with pytest.raises(ValueError, match="overflow or underflow float64. Rescale"):
            est.fit(*data)
    standardized = UnscentedGPLVM(n_components=2, n_inducing=5, max_iter=20,
                                  normalize_X="standardize", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert np.all(np.isfinite(standardized.fit_transform(X * factor)))
