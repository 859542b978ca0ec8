"""Parameter packing with transforms, and the optimiser drivers."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp._core.linalg import CholeskyError
from sklearn_lvgp._core.params import ParamPacker
from sklearn_lvgp.optim._lbfgsb import minimize_adam, minimize_lbfgsb
from sklearn_lvgp.utils.gradcheck import check_grad


@pytest.fixture
def packer():
    return ParamPacker([("a", (2, 3)), ("b", (3,), "log"), ("c", (), "log"),
                        ("d", (2,), "softplus")])


def test_pack_unpack_round_trip(packer, rng):
    values = {"a": rng.standard_normal((2, 3)), "b": rng.uniform(0.1, 2, 3), "c": 0.7,
              "d": np.array([1e-8, 50.0])}
    flat = packer.pack(values)
    assert flat.shape == (12,)
    back = packer.unpack(flat)
    for k in values:
        np.testing.assert_allclose(back[k], values[k], rtol=1e-14)


def test_unknown_transform_rejected():
    with pytest.raises(ValueError, match="unknown transform"):
        ParamPacker([("a", (2,), "exp")])


def test_pack_grad_applies_transform_jacobians(packer, rng):
    target = {"a": rng.standard_normal((2, 3)), "b": rng.uniform(0.1, 2, 3), "c": 0.7,
              "d": rng.uniform(0.1, 2, 2)}

    def fun(flat):
        p = packer.unpack(flat)
        value = sum(float(np.sum((p[k] - target[k]) ** 2 * (1 + p[k] ** 2))) for k in p)
        grads = {k: 2 * (p[k] - target[k]) * (1 + p[k] ** 2) + (p[k] - target[k]) ** 2 * 2 * p[k]
                 for k in p}
        return value, packer.pack_grad(grads, p)

    x = packer.pack({"a": np.zeros((2, 3)), "b": np.ones(3), "c": 1.3, "d": [0.3, 4.0]})
    check_grad(fun, x)


def _quadratic(x):
    return float(np.sum((x - 1.0) ** 2)), 2 * (x - 1.0)


def test_lbfgsb_converges_on_quadratic():
    res = minimize_lbfgsb(_quadratic, np.zeros(4), max_iter=100)
    assert res.converged
    np.testing.assert_allclose(res.x, 1.0, atol=1e-6)


def test_lbfgsb_warns_when_max_iter_reached():
    def rosen(x):
        f = 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2
        g = np.array([-400 * x[0] * (x[1] - x[0] ** 2) - 2 * (1 - x[0]), 200 * (x[1] - x[0] ** 2)])
        return f, g

    with pytest.warns(ConvergenceWarning, match="did not converge"):
        res = minimize_lbfgsb(rosen, np.array([-1.2, 1.0]), max_iter=3)
    assert not res.converged


def test_lbfgsb_backs_off_from_failures_and_returns_best_point():
    def fenced(x):
        if x[0] > 0.5:  # a "failed Cholesky" region
            raise CholeskyError("not positive definite")
        return _quadratic(x)

    with pytest.warns(ConvergenceWarning):  # the fence is a wall with no gradient
        res = minimize_lbfgsb(fenced, np.zeros(2), max_iter=200)
    assert res.x[0] <= 0.5
    assert res.fun < 2.0 - 0.5  # moved well away from the start instead of stopping there


@pytest.mark.parametrize("error", [OverflowError, ZeroDivisionError, FloatingPointError])
def test_drivers_handle_python_float_exceptions(error):
    # a Python scalar overflow or a numba float division by zero inside an objective is a
    # non-finite value, not a crash of the estimator: L-BFGS-B backs off, and both drivers
    # raise a clear error when no point is finite
    def fenced(x):
        if x[0] > 0.5:
            raise error("out of range")
        return _quadratic(x)

    with pytest.warns(ConvergenceWarning):
        res = minimize_lbfgsb(fenced, np.zeros(2), max_iter=200)
    assert res.x[0] <= 0.5 and res.fun < 2.0 - 0.5

    def always(x):
        raise error("out of range")

    with pytest.raises(FloatingPointError, match=f"not finite at any evaluated point "
                                                 f"\\({error.__name__}: out of range\\)"):
        minimize_lbfgsb(always, np.zeros(2), max_iter=5)
    with pytest.raises(FloatingPointError, match="10 consecutive failures.* step 11 "):
        minimize_adam(always, np.zeros(2), max_iter=50)


def test_lbfgsb_raises_when_nothing_is_finite():
    def broken(x):
        return np.nan, np.zeros_like(x)

    with pytest.raises(FloatingPointError, match="not finite"):
        minimize_lbfgsb(broken, np.zeros(2), max_iter=5)


def test_adam_reaches_minimum_and_is_reproducible():
    noise = np.random.RandomState(0)

    def noisy(x):
        f, g = _quadratic(x)
        return f, g + 0.01 * noise.standard_normal(x.shape)

    res = minimize_adam(noisy, np.zeros(3), learning_rate=0.05, max_iter=800)
    np.testing.assert_allclose(res.x, 1.0, atol=0.05)
    assert res.history.shape == (800,)


def test_adam_tol_stops_early_and_warns_otherwise():
    res = minimize_adam(_quadratic, np.zeros(2), learning_rate=0.1, max_iter=5000, tol=1e-8)
    assert res.converged and res.n_iter < 5000
    with pytest.warns(ConvergenceWarning, match="Adam did not converge within max_iter=120"):
        minimize_adam(_quadratic, np.zeros(2), learning_rate=1e-4, max_iter=120, tol=1e-12)


def test_adam_raises_on_persistent_divergence():
    def nan_obj(x):
        return np.nan, np.full_like(x, np.nan)

    with pytest.raises(FloatingPointError, match="optimisation step 11"):
        minimize_adam(nan_obj, np.zeros(2), max_iter=50)
