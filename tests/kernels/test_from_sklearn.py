"""Conversion of scikit-learn kernels: equal matrices, carried-over hyperparameters, errors."""

import copy
import pickle

import numpy as np
import pytest
from sklearn.gaussian_process import kernels as skk

from sklearn_lvgp.kernels import (
    RBF,
    Constant,
    Linear,
    Matern12,
    Matern32,
    Matern52,
    Periodic,
    Product,
    RationalQuadratic,
    Sum,
    White,
    as_lvgp_kernel,
    from_sklearn,
)

RTOL, ATOL = 1e-10, 1e-13

# (id, factory, n_features). ExpSineSquared matches only on 1-D inputs (see its own test).
CASES = [
    ("rbf_iso", lambda: skk.RBF(1.3), 3),
    ("rbf_ard", lambda: skk.RBF([0.8, 1.5, 2.0]), 3),
    ("matern05", lambda: skk.Matern([0.8, 1.5, 2.0], nu=0.5), 3),
    ("matern15", lambda: skk.Matern(1.2, nu=1.5), 3),
    ("matern25_ard", lambda: skk.Matern([0.8, 1.5, 2.0], nu=2.5), 3),
    ("matern_inf", lambda: skk.Matern([0.8, 1.5, 2.0], nu=np.inf), 3),
    ("rational_quadratic", lambda: skk.RationalQuadratic(1.3, alpha=0.7), 3),
    ("exp_sine_squared", lambda: skk.ExpSineSquared(1.6, periodicity=1.3), 1),
    ("dot_product", lambda: skk.DotProduct(sigma_0=0.7), 3),
    ("dot_product_zero_fixed", lambda: skk.DotProduct(sigma_0=0.0, sigma_0_bounds="fixed"), 3),
    ("constant", lambda: skk.ConstantKernel(1.7), 3),
    ("white", lambda: skk.WhiteKernel(0.3), 3),
    ("scaled_rbf_ard_plus_white",
     lambda: skk.ConstantKernel(2.0) * skk.RBF([1.0, 2.0, 0.5]) + skk.WhiteKernel(0.1), 3),
    ("rbf_times_constant", lambda: skk.RBF(0.9) * skk.ConstantKernel(0.4), 3),
    ("matern15_times_exp_sine_squared",
     lambda: skk.Matern(1.1, nu=1.5) * skk.ExpSineSquared(0.8, periodicity=2.1), 1),
    ("scaled_matern_times_periodic",
     lambda: skk.Matern(1.1, nu=2.5) * skk.ExpSineSquared(0.8, 2.1) * skk.ConstantKernel(3.0),
     1),
    ("dot_product_plus_rbf", lambda: skk.DotProduct() + skk.RBF(), 3),
    ("scaled_linear", lambda: 2.5 * skk.DotProduct(sigma_0=0.0, sigma_0_bounds="fixed"), 3),
    ("constant_times_sum",
     lambda: skk.ConstantKernel(1.5) * (skk.RBF(0.7) + skk.WhiteKernel(0.2)), 3),
    ("sum_with_float", lambda: skk.RationalQuadratic(0.6, alpha=2.0) + 0.5, 3),
    ("constant_times_constant", lambda: skk.ConstantKernel(2.0) * skk.ConstantKernel(0.5), 3),
]
IDS = [c[0] for c in CASES]
PARAMS = [c[1:] for c in CASES]


@pytest.mark.parametrize("factory, q", PARAMS, ids=IDS)
def test_matrices_equal_sklearn(factory, q, rng):
    X, Z = rng.standard_normal((7, q)), rng.standard_normal((5, q))
    sk = factory()
    k = from_sklearn(sk)
    np.testing.assert_allclose(k.K(X, Z), sk(X, Z), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(k.K(X), sk(X), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(k.Kdiag(X), sk.diag(X), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(k.K(X, X), sk(X, X), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("factory, q", PARAMS, ids=IDS)
def test_same_number_of_free_hyperparameters(factory, q):
    sk = factory()
    k = from_sklearn(sk)
    assert k.n_theta == sk.n_dims
    assert k.bounds.shape == (sk.n_dims, 2)


@pytest.mark.parametrize("factory, q", PARAMS, ids=IDS)
def test_input_not_modified(factory, q):
    sk = factory()
    before = pickle.dumps(sk)
    params = copy.deepcopy(sk.get_params())
    k = from_sklearn(sk)
    assert pickle.dumps(sk) == before
    k.theta = k.theta + 0.3  # the result shares no arrays with the input
    for name, value in sk.get_params().items():
        if not isinstance(value, skk.Kernel):
            np.testing.assert_array_equal(np.asarray(value, dtype=object),
                                          np.asarray(params[name], dtype=object))


def test_stationary_values_and_bounds():
    k = from_sklearn(skk.RBF([1.0, 2.0], length_scale_bounds=(1e-2, 1e3)))
    assert type(k) is RBF
    np.testing.assert_array_equal(k.length_scale, [1.0, 2.0])
    assert k.length_scale_bounds == (1e-2, 1e3)
    assert k.variance == 1.0 and k.variance_bounds == "fixed"
    for nu, cls in ((0.5, Matern12), (1.5, Matern32), (2.5, Matern52), (np.inf, RBF)):
        k = from_sklearn(skk.Matern(0.4, length_scale_bounds="fixed", nu=nu))
        assert type(k) is cls
        assert k.length_scale == 0.4 and k.length_scale_bounds == "fixed" and k.n_theta == 0
    k = from_sklearn(skk.RationalQuadratic(0.5, alpha=3.0, alpha_bounds=(0.1, 10.0)))
    assert type(k) is RationalQuadratic
    assert (k.length_scale, k.alpha, k.alpha_bounds) == (0.5, 3.0, (0.1, 10.0))


def test_per_dimension_bounds_carried_over():
    b = np.array([[1e-3, 1e3], [1e-2, 1e2]])
    k = from_sklearn(skk.RBF([1.0, 2.0], length_scale_bounds=b))
    np.testing.assert_array_equal(k.length_scale_bounds, b)
    np.testing.assert_allclose(k.bounds, np.log(b))


def test_constant_folds_into_variance():
    sk = skk.ConstantKernel(2.0, constant_value_bounds=(0.1, 50.0)) * skk.RBF([1.0, 2.0])
    k = from_sklearn(sk)
    assert type(k) is RBF
    assert k.variance == 2.0 and k.variance_bounds == (0.1, 50.0)
    np.testing.assert_allclose(k.theta, sk.theta)
    np.testing.assert_allclose(k.bounds, sk.bounds)
    k = from_sklearn(skk.Matern(nu=1.5) * skk.ConstantKernel(0.3, "fixed"))
    assert type(k) is Matern32 and k.variance == 0.3 and k.variance_bounds == "fixed"
    # a product of constants stays a product: only a lone ConstantKernel factor is folded
    k = from_sklearn(skk.ConstantKernel(3.0) * skk.ConstantKernel(2.0) * skk.RBF())
    assert type(k) is Product and type(k.k1) is Product and type(k.k2) is RBF
    assert k.k2.variance_bounds == "fixed"
    # the constant finds the free unit amplitude inside a product
    k = from_sklearn(skk.RBF(0.5) * skk.ExpSineSquared() * skk.ConstantKernel(4.0))
    assert type(k) is Product and k.k1.variance == 4.0 and k.k2.variance_bounds == "fixed"


def test_exp_sine_squared_parametrisation():
    sk = skk.ExpSineSquared(1.6, periodicity=1.3, length_scale_bounds=(0.2, 8.0),
                            periodicity_bounds="fixed")
    k = from_sklearn(sk)
    assert type(k) is Periodic
    assert (k.period, k.length_scale, k.variance) == (1.3, 0.8, 1.0)
    assert k.length_scale_bounds == (0.1, 4.0)
    assert k.period_bounds == "fixed" and k.variance_bounds == "fixed"


def test_exp_sine_squared_differs_in_several_dimensions(rng):
    # scikit-learn: sin of the Euclidean distance; Periodic: sum of per-dimension sin^2
    X = rng.standard_normal((7, 3))
    sk = skk.ExpSineSquared(1.6, periodicity=1.3)
    assert not np.allclose(from_sklearn(sk).K(X), sk(X))


def test_dot_product_mapping():
    k = from_sklearn(skk.DotProduct(sigma_0=0.7, sigma_0_bounds=(0.1, 10.0)))
    assert type(k) is Sum and type(k.k1) is Linear and type(k.k2) is Constant
    assert k.k1.variances == 1.0 and k.k1.variances_bounds == "fixed"
    assert k.k2.variance == pytest.approx(0.49)
    assert k.k2.variance_bounds == pytest.approx((0.01, 100.0))
    k = from_sklearn(skk.DotProduct(sigma_0=0.0, sigma_0_bounds="fixed"))
    assert type(k) is Linear and k.n_theta == 0
    k = from_sklearn(skk.ConstantKernel(2.5) * skk.DotProduct(0.0, "fixed"))
    assert type(k) is Linear and k.variances == 2.5 and k.variances_bounds == (1e-5, 1e5)


def test_white_and_constant_values_and_bounds():
    k = from_sklearn(skk.WhiteKernel(0.3, noise_level_bounds=(1e-4, 1.0)))
    assert type(k) is White and k.noise_level == 0.3 and k.noise_level_bounds == (1e-4, 1.0)
    k = from_sklearn(skk.ConstantKernel(1.7, constant_value_bounds="fixed"))
    assert type(k) is Constant and k.variance == 1.7 and k.variance_bounds == "fixed"


class _MyRBF(skk.RBF):
    pass


@pytest.mark.parametrize("sk, fragment", [
    (skk.Matern(nu=2.0), "Matern(length_scale=1, nu=2)"),
    (skk.PairwiseKernel(), "PairwiseKernel"),
    (skk.RBF() ** 2, "RBF(length_scale=1) ** 2"),
    (skk.CompoundKernel([skk.RBF(), skk.WhiteKernel()]), "CompoundKernel"),
    (_MyRBF(), "_MyRBF"),
    (skk.RBF() + skk.Matern(nu=0.7), "nu=0.7"),
], ids=["matern_nu2", "pairwise", "exponentiation", "compound", "subclass", "nested"])
def test_unsupported_raise(sk, fragment):
    with pytest.raises(TypeError, match="Cannot convert") as info:
        from_sklearn(sk)
    msg = str(info.value)
    assert fragment in msg
    assert "RBF, Matern" in msg and "ExpSineSquared" in msg and "DotProduct" in msg


def test_as_lvgp_kernel():
    assert as_lvgp_kernel(None) is None
    k = RBF(length_scale=np.array([1.0, 2.0]))
    assert as_lvgp_kernel(k) is k
    np.testing.assert_array_equal(k.length_scale, [1.0, 2.0])
    sk = skk.ConstantKernel(2.0) * skk.RBF(1.5)
    out = as_lvgp_kernel(sk)
    assert out == RBF(length_scale=1.5, variance=2.0, variance_bounds=(1e-5, 1e5))
    with pytest.raises(TypeError, match=r"^prior_kernel must be a sklearn_lvgp\.kernels\.Kernel "
                                        r"or a scikit-learn kernel, got str\.$"):
        as_lvgp_kernel("rbf", name="prior_kernel")
    with pytest.raises(TypeError, match="got float"):
        as_lvgp_kernel(1.0)
    with pytest.raises(TypeError, match="Cannot convert"):
        as_lvgp_kernel(skk.PairwiseKernel())


FREE_CASES = [
    # (sklearn kernel, free amplitudes after free_amplitude=True, how many of them are new)
    (skk.RBF(1.3), ["variance"], 1),
    (skk.Matern(1.2, nu=1.5) + skk.WhiteKernel(0.1), ["k1__variance"], 1),
    (skk.RBF(0.9) * skk.ExpSineSquared(0.8, 2.1), ["k1__variance"], 1),  # one per product
    (skk.DotProduct(sigma_0=0.0, sigma_0_bounds="fixed"), ["variances"], 1),
    (skk.RBF() + skk.RationalQuadratic(), ["k1__variance", "k2__variance"], 2),
    (skk.ConstantKernel(2.0) * skk.RBF(), ["variance"], 0),  # the constant's own, free
    (skk.ConstantKernel(1.0, "fixed") * skk.RBF(), [], 0),  # the user's fixed amplitude
    (skk.ConstantKernel(1.0, "fixed") * skk.RBF() + skk.Matern(nu=2.5), ["k2__variance"], 1),
]


@pytest.mark.parametrize("sk, free, n_new", FREE_CASES, ids=[repr(c[0]) for c in FREE_CASES])
def test_free_amplitude_rule(sk, free, n_new, rng):
    X = rng.standard_normal((6, 1))
    k = from_sklearn(sk, free_amplitude=True)
    names = [h.name for h in k.hyperparameters if not h.fixed]
    assert [n for n in names if n.rsplit("__", 1)[-1] in ("variance", "variances")] == free
    assert k.n_theta == sk.n_dims + n_new
    np.testing.assert_allclose(k.K(X), sk(X), rtol=RTOL, atol=ATOL)  # same start
    # the exact conversion keeps the original count; the estimators take the free one
    assert from_sklearn(sk).n_theta == sk.n_dims
    assert repr(as_lvgp_kernel(sk).get_params()) == repr(k.get_params())


def test_free_amplitude_bounds_are_the_class_defaults():
    k = from_sklearn(skk.RBF(), free_amplitude=True)
    assert k.variance == 1.0 and k.variance_bounds == RBF().variance_bounds
    k = from_sklearn(skk.DotProduct(sigma_0=0.0, sigma_0_bounds="fixed"), free_amplitude=True)
    assert k.variances_bounds == Linear().variances_bounds
