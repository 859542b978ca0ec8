"""The kernel contract, run on every kernel (GPyTorch-style), plus equality with sklearn kernels.

Contract: symmetry, PSD, ``Kdiag == diag(K)``, auto == cross, theta round trip, fixed bounds,
bounds shape, clone, nested parameters, and every VJP against finite differences.
"""

import numba
import numpy as np
import pytest
from sklearn.gaussian_process import kernels as skk

from sklearn_lvgp.kernels import (
    RBF,
    Constant,
    Kernel,
    Linear,
    Matern12,
    Matern32,
    Matern52,
    MLPKernel,
    Periodic,
    Product,
    RationalQuadratic,
    Sum,
    White,
)
from sklearn_lvgp.kernels import _kernels_numba as _nb
from sklearn_lvgp.utils.gradcheck import check_vjp

ARD = np.array([0.8, 1.5])


def _mlp(**kw):
    return MLPKernel(hidden_units=4, output_units=3, **kw).initialize(2, np.random.RandomState(0))


# (id, factory, VJP rtol). Factories build a fresh kernel for every test; all act on 2-D inputs.
KERNELS = [
    ("rbf_iso", lambda: RBF(length_scale=1.3, variance=0.7), 1e-5),
    ("rbf_ard", lambda: RBF(length_scale=ARD.copy(), variance=1.2), 1e-5),
    ("matern12_ard", lambda: Matern12(length_scale=ARD.copy(), variance=0.9), 1e-4),
    ("matern32_ard", lambda: Matern32(length_scale=ARD.copy(), variance=1.1), 1e-5),
    ("matern52_ard", lambda: Matern52(length_scale=ARD.copy(), variance=1.3), 1e-5),
    ("rational_quadratic", lambda: RationalQuadratic(length_scale=ARD.copy(), alpha=0.7,
                                                     variance=1.1), 1e-5),
    ("periodic", lambda: Periodic(period=1.3, length_scale=0.8, variance=1.4), 1e-5),
    ("linear_ard", lambda: Linear(variances=np.array([0.5, 2.0])), 1e-5),
    ("constant", lambda: Constant(variance=1.7), 1e-5),
    ("white", lambda: White(noise_level=0.3), 1e-5),
    ("sum_rbf_linear", lambda: RBF(length_scale=ARD.copy()) + Linear(variances=0.6), 1e-5),
    ("sum_periodic_rbf_linear",
     lambda: Periodic(period=2.1) + RBF(length_scale=ARD.copy()) + Linear(np.array([0.3, 0.9])),
     1e-5),
    ("product_scaled_rbf", lambda: 2.0 * RBF(length_scale=ARD.copy()), 1e-5),
    ("product_rbf_periodic", lambda: RBF(length_scale=1.7) * Periodic(period=1.1), 1e-5),
    ("mlp_rbf", _mlp, 1e-4),
    ("mlp_matern32_unit_bias",
     lambda: _mlp(base_kernel=Matern32(length_scale=np.ones(3)), per_unit_bias=True), 1e-4),
]
IDS = [k[0] for k in KERNELS]


@pytest.fixture(params=KERNELS, ids=IDS)
def case(request):
    name, factory, rtol = request.param
    return name, factory, rtol


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def X(rng):
    return rng.standard_normal((5, 2))


@pytest.fixture
def Z(rng):
    return rng.standard_normal((4, 2))


# ------------------------------------------------------------------------------ the contract
def test_symmetric(case, X):
    K = case[1]().K(X)
    assert K.shape == (5, 5)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-14)


def test_psd(case, X):
    K = case[1]().K(X)
    scale = max(1.0, np.max(np.abs(K)))
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * scale


def test_kdiag_equals_diag(case, X):
    k = case[1]()
    np.testing.assert_allclose(k.Kdiag(X), np.diag(k.K(X)), rtol=1e-13, atol=1e-14)


def test_auto_equals_cross(case, X, Z):
    k = case[1]()
    assert k.K(X, Z).shape == (5, 4)
    if isinstance(k, White):
        # sklearn semantics (documented on White): the noise belongs to K(X) only.
        np.testing.assert_array_equal(k.K(X, X), np.zeros((5, 5)))
    else:
        np.testing.assert_allclose(k.K(X, X), k.K(X), rtol=1e-13, atol=1e-14)


def test_theta_round_trip(case, rng, X):
    k = case[1]()
    shapes = {h.name: np.shape(k.get_params()[h.name]) for h in k.hyperparameters}
    new = k.theta + 0.1 * rng.standard_normal(k.n_theta)
    k.theta = new
    np.testing.assert_allclose(k.theta, new, rtol=1e-14, atol=1e-15)  # log(exp(t)) rounding
    assert {h.name: np.shape(k.get_params()[h.name]) for h in k.hyperparameters} == shapes
    np.testing.assert_allclose(case[1]().clone_with_theta(new).K(X), k.K(X), rtol=1e-13)


def test_theta_wrong_length_raises(case):
    k = case[1]()
    with pytest.raises(ValueError, match="theta has"):
        k.theta = np.zeros(k.n_theta + 1)


def test_bounds_shape(case):
    k = case[1]()
    assert k.bounds.shape == (k.n_theta, 2)
    assert k.n_theta == sum(h.n_elements for h in k.hyperparameters if not h.fixed)
    lo, hi = k.bounds.T
    assert np.all(lo <= k.theta) and np.all(k.theta <= hi)


def test_fixed_bounds_drop_hyperparameter(case, rng, X, Z):
    k = case[1]()
    first = k.hyperparameters[0]
    keep = np.ones(k.n_theta, dtype=bool)
    keep[:first.n_elements] = False
    full_theta = k.theta
    dL_dK = rng.standard_normal((5, 4))
    full_grad = k.vjp(dL_dK, X, Z).theta

    k.set_params(**{f"{first.name}_bounds": "fixed"})
    assert k.hyperparameters[0].fixed
    assert k.n_theta == keep.sum()
    assert k.bounds.shape == (k.n_theta, 2)
    np.testing.assert_array_equal(k.theta, full_theta[keep])
    np.testing.assert_allclose(k.vjp(dL_dK, X, Z).theta, full_grad[keep], rtol=1e-13)
    assert k.vjp_diag(rng.standard_normal(5), X).theta.shape == (k.n_theta,)


def test_clone_equal_and_independent(case, X):
    k = case[1]()
    c = k.clone()
    assert c == k and c is not k
    np.testing.assert_array_equal(c.K(X), k.K(X))
    for name, value in k.get_params(deep=True).items():
        if isinstance(value, np.ndarray):
            assert not np.shares_memory(value, c.get_params(deep=True)[name]), name
        if isinstance(value, Kernel):
            assert c.get_params(deep=True)[name] is not value, name
    theta = k.theta
    c.theta = theta + 0.5
    np.testing.assert_array_equal(k.theta, theta)
    assert c != k


def test_get_set_params_nesting(case):
    k = case[1]()
    name = k.hyperparameters[-1].name  # e.g. "k2__variances", "base_kernel__length_scale"
    params = k.get_params(deep=True)
    assert name in params
    new = 2.0 * np.asarray(params[name]) if np.ndim(params[name]) else 2.0 * params[name]
    assert k.set_params(**{name: new}) is k
    np.testing.assert_array_equal(k.get_params(deep=True)[name], new)
    with pytest.raises(ValueError, match="Invalid parameter"):
        k.set_params(not_a_parameter=1.0)


# ------------------------------------------------------------------------------------- VJPs
def test_vjp_cross(case, rng, X, Z):
    k, rtol = case[1](), case[2]

    def forward(X, Z, theta):
        return k.clone_with_theta(theta).K(X, Z)

    def backward(w, X, Z, theta):
        v = k.clone_with_theta(theta).vjp(w, X, Z)
        assert v.X.shape == X.shape and v.Z.shape == Z.shape and v.theta.shape == theta.shape
        return {"X": v.X, "Z": v.Z, "theta": v.theta}

    check_vjp(forward, backward, {"X": X, "Z": Z, "theta": k.theta}, rng, rtol=rtol)


def test_vjp_symmetric(case, rng, X):
    k, rtol = case[1](), case[2]

    def forward(X, theta):
        return k.clone_with_theta(theta).K(X)

    def backward(w, X, theta):
        v = k.clone_with_theta(theta).vjp(w, X)
        assert v.Z is None and v.X.shape == X.shape
        return {"X": v.X, "theta": v.theta}

    check_vjp(forward, backward, {"X": X, "theta": k.theta}, rng, rtol=rtol)


def test_vjp_diag(case, rng, X):
    k, rtol = case[1](), case[2]

    def forward(X, theta):
        return k.clone_with_theta(theta).Kdiag(X)

    def backward(w, X, theta):
        v = k.clone_with_theta(theta).vjp_diag(w, X)
        assert v.Z is None and v.X.shape == X.shape
        return {"X": v.X, "theta": v.theta}

    check_vjp(forward, backward, {"X": X, "theta": k.theta}, rng, rtol=rtol)


def test_cached_forward_backward_equals_plain(case, rng, X, Z):
    k = case[1]()
    W = rng.standard_normal((X.shape[0], Z.shape[0]))
    K, cache = k.K_cached(X, Z)
    np.testing.assert_array_equal(K, k.K(X, Z))
    a, b = k.vjp_cached(W, cache), k.vjp(W, X, Z)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-13, atol=1e-14)


def test_diag_is_constant_is_truthful(case, rng, X):
    k = case[1]()
    d = k.Kdiag(np.vstack([X, 10 * rng.standard_normal(X.shape)]))
    if k.diag_is_constant:
        np.testing.assert_allclose(d, d[0], rtol=1e-14)
        assert np.all(k.vjp_diag(np.ones(X.shape[0]), X).X == 0.0)
    else:
        assert np.ptp(d) > 0


# ------------------------------------------------------------------- equality with sklearn
def _c(value):
    return skk.ConstantKernel(constant_value=value)


SKLEARN_PAIRS = [
    ("rbf_ard", lambda: RBF(length_scale=ARD.copy(), variance=1.2),
     lambda: _c(1.2) * skk.RBF(length_scale=ARD.copy()), 2),
    ("matern12", lambda: Matern12(length_scale=ARD.copy(), variance=0.9),
     lambda: _c(0.9) * skk.Matern(length_scale=ARD.copy(), nu=0.5), 2),
    ("matern32", lambda: Matern32(length_scale=ARD.copy(), variance=1.1),
     lambda: _c(1.1) * skk.Matern(length_scale=ARD.copy(), nu=1.5), 2),
    ("matern52", lambda: Matern52(length_scale=ARD.copy(), variance=1.3),
     lambda: _c(1.3) * skk.Matern(length_scale=ARD.copy(), nu=2.5), 2),
    ("rational_quadratic_iso", lambda: RationalQuadratic(length_scale=1.3, alpha=0.7, variance=1.1),
     lambda: _c(1.1) * skk.RationalQuadratic(length_scale=1.3, alpha=0.7), 2),
    ("periodic_1d", lambda: Periodic(period=1.3, length_scale=0.8, variance=1.4),
     lambda: _c(1.4) * skk.ExpSineSquared(length_scale=1.6, periodicity=1.3), 1),
    ("linear", lambda: Linear(variances=1.0),
     lambda: skk.DotProduct(sigma_0=0.0, sigma_0_bounds="fixed"), 2),
    ("constant", lambda: Constant(variance=1.7), lambda: _c(1.7), 2),
    ("white", lambda: White(noise_level=0.3), lambda: skk.WhiteKernel(noise_level=0.3), 2),
    ("sum_rbf_linear", lambda: RBF(length_scale=ARD.copy()) + Linear(),
     lambda: skk.RBF(length_scale=ARD.copy()) + skk.DotProduct(sigma_0=0.0), 2),
    ("product_rbf_periodic_1d", lambda: RBF(length_scale=1.7) * Periodic(period=1.1),
     lambda: skk.RBF(length_scale=1.7) * skk.ExpSineSquared(length_scale=2.0, periodicity=1.1), 1),
    ("product_scaled_matern32", lambda: 2.0 * Matern32(length_scale=ARD.copy()),
     lambda: _c(2.0) * skk.Matern(length_scale=ARD.copy(), nu=1.5), 2),
]


@pytest.mark.parametrize("ours, theirs, n_features", [p[1:] for p in SKLEARN_PAIRS],
                         ids=[p[0] for p in SKLEARN_PAIRS])
def test_equals_sklearn(ours, theirs, n_features, rng):
    X = rng.standard_normal((6, n_features))
    Z = rng.standard_normal((3, n_features))
    k, ref = ours(), theirs()
    np.testing.assert_allclose(k.K(X), ref(X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k.K(X, Z), ref(X, Z), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k.Kdiag(X), ref.diag(X), rtol=1e-12, atol=1e-14)


def test_scalar_times_kernel_builds_constant_product():
    k = 2.0 * RBF()
    assert isinstance(k, Product) and isinstance(k.k1, Constant) and k.k1.variance == 2.0
    s = RBF() + 0.5
    assert isinstance(s, Sum) and isinstance(s.k2, Constant)


# ------------------------------------------------------------------- kernel-specific checks
def test_linear_input_dim_and_relevance():
    k = Linear(variances=np.array([0.5, 2.0, 1.0]))
    with pytest.raises(ValueError, match="3 variances but the inputs have 2"):
        k.check_input_dim(2)
    with pytest.raises(ValueError, match="3 variances"):
        k.K(np.ones((2, 2)))
    np.testing.assert_array_equal(k.relevance(3), [0.5, 2.0, 1.0])
    np.testing.assert_array_equal(Linear(variances=0.7).relevance(4), np.full(4, 0.7))


def test_periodic_multidim_formula(rng):
    X, Z = rng.standard_normal((3, 3)), rng.standard_normal((2, 3))
    p, ls, var = 1.7, 0.6, 0.9
    ref = var * np.exp(-0.5 * np.sum(np.sin(np.pi * (X[:, None] - Z[None]) / p) ** 2, -1) / ls**2)
    np.testing.assert_allclose(Periodic(p, ls, var).K(X, Z), ref, rtol=1e-13)


def test_mlp_default_parameter_count():
    k = MLPKernel().initialize(2, np.random.RandomState(0))
    assert k.n_theta == 60 + 1800 + 2 + 1 + 60 == 1923
    assert k.W1.shape == (2, 30) and k.W2.shape == (30, 60)
    assert k.b1 == 0.01 and k.b2 == 0.01
    np.testing.assert_array_equal(k.base_kernel.length_scale, np.ones(60))
    assert isinstance(k.base_kernel, RBF) and k.base_kernel.variance == 1.0


def test_mlp_initialize_is_reproducible_and_pure():
    k = MLPKernel(hidden_units=4, output_units=3)
    a = k.initialize(2, np.random.RandomState(3))
    b = k.initialize(2, np.random.RandomState(3))
    assert a == b
    assert k.W1 is None and k.base_kernel is None
    np.testing.assert_array_equal(a.theta, b.theta)
    assert a.initialize(2, np.random.RandomState(5)) == a  # set values are kept
    with pytest.raises(ValueError, match="not initialised"):
        k.K(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="not initialised"):
        _ = k.theta


def test_mlp_input_dim_and_relevance():
    k = _mlp()
    with pytest.raises(ValueError, match="W1 has shape"):
        k.check_input_dim(3)
    with pytest.raises(ValueError, match="columns"):
        k.K(np.zeros((2, 3)))
    np.testing.assert_allclose(k.relevance(2), np.sqrt(np.sum(k.W1**2, axis=1)))
    assert k.relevance(2).shape == (2,)


def test_mlp_nested_params_and_clone():
    k = _mlp()
    params = k.get_params(deep=True)
    assert "base_kernel__length_scale" in params and "base_kernel__variance" in params
    k.set_params(base_kernel__variance=3.0)
    assert k.base_kernel.variance == 3.0
    np.testing.assert_allclose(k.Kdiag(np.zeros((2, 2))), 3.0)
    c = k.clone()
    c.W1[0, 0] += 1.0
    c.base_kernel.length_scale[0] = 5.0
    assert k.W1[0, 0] != c.W1[0, 0] and k.base_kernel.length_scale[0] == 1.0


# ---------------------------------------------------------------------- numba determinism
def _backward_stationary(rng):
    X, Z = rng.standard_normal((700, 3)), rng.standard_normal((40, 3))
    G = rng.standard_normal((700, 40))
    inv_ls = np.array([0.7, 1.2, 2.0])
    K = _nb.stationary_K(X, np.ascontiguousarray(Z.T), inv_ls, 1.3, _nb.MATERN32_KIND, 1.0,
                         np.empty((700, 40)))
    return _nb.stationary_K_vjp, (G, K, X, Z, inv_ls, 1.3, _nb.MATERN32_KIND, 1.0, True)


def _backward_periodic(rng):
    X, Z = rng.standard_normal((700, 3)), rng.standard_normal((40, 3))
    G = rng.standard_normal((700, 40))
    return _nb.periodic_backward, (G, X, Z, 1.3, 0.8)


def _stationary_K(kind):
    def make(rng):
        X, Z = rng.standard_normal((700, 3)), rng.standard_normal((40, 3))
        return _nb.stationary_K, (X, np.ascontiguousarray(Z.T), np.array([0.7, 1.2, 2.0]), 1.3,
                                  kind, 1.5, np.empty((700, 40)))
    return make


def _rbf_psi1(rng):
    from sklearn_lvgp.expectations import _psi_numba

    mu, ZT = rng.standard_normal((700, 3)), rng.standard_normal((3, 40))
    return _psi_numba.rbf_psi1, (mu, ZT, rng.uniform(0.2, 1.0, (700, 3)), rng.standard_normal(700))


def _two_rbf_block(rng):
    from sklearn_lvgp.expectations import _two_rbf_numba

    N, P, Q = 700, 40, 3
    mu, E = rng.standard_normal((N, Q)), rng.uniform(0.2, 1.0, (N, Q))
    return _two_rbf_numba.two_rbf_block, (mu, E, rng.standard_normal(N), rng.standard_normal(P),
                                          rng.standard_normal((Q, P)), 0, np.empty((N, P)),
                                          np.zeros(P))


_KINDS = {"rbf": _nb.RBF_KIND, "matern12": _nb.MATERN12_KIND, "matern32": _nb.MATERN32_KIND,
          "matern52": _nb.MATERN52_KIND, "rq": _nb.RQ_KIND}
def _slope_weights(kind):
    def make(rng):
        X, Z = rng.standard_normal((700, 3)), rng.standard_normal((40, 3))
        inv_ls = np.array([0.7, 1.2, 2.0])
        ZT = np.ascontiguousarray(Z.T)
        K = _nb.stationary_K(X, ZT, inv_ls, 1.3, kind, 1.5, np.empty((700, 40)))
        return _nb.stationary_slope_weights, (rng.standard_normal(K.shape), K, X, ZT, inv_ls,
                                              kind, 1.5, np.empty(K.shape))
    return make


_JITTED = ([_backward_stationary, _backward_periodic, _rbf_psi1, _two_rbf_block]
           + [_stationary_K(k) for k in _KINDS.values()]
           + [_slope_weights(k) for k in _KINDS.values() if k != _nb.MATERN12_KIND])
_JITTED_IDS = (["stationary_K_vjp", "periodic_backward", "rbf_psi1", "two_rbf_block"]
               + [f"stationary_K_{name}" for name in _KINDS]
               + [f"slope_weights_{name}" for name in _KINDS if name != "matern12"])


def _outputs(result, args):
    """Tuple of copies of the outputs (``two_rbf_block`` writes into its last two arguments;
    it adds to the last one, which is reset here for the next call; ``stationary_K`` returns
    its ``out`` argument, which the next call overwrites)."""
    if result is None:
        out = (args[-2].copy(), args[-1].copy())
        args[-1][:] = 0.0
        return out
    return tuple(np.copy(r) for r in (result if isinstance(result, tuple) else (result,)))


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
@pytest.mark.parametrize("make", _JITTED, ids=_JITTED_IDS)
def test_numba_backward_identical_for_1_and_2_threads(make, rng):
    fn, args = make(rng)
    assert args[0].shape[0] > _nb.ROW_BLOCK * 4  # several row blocks
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _outputs(fn.parallel(*args), args)
        numba.set_num_threads(2)
        two = _outputs(fn.parallel(*args), args)
    finally:
        numba.set_num_threads(previous)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
@pytest.mark.parametrize("make", _JITTED, ids=_JITTED_IDS)
def test_serial_and_parallel_twins_agree_bitwise(make, rng):
    fn, args = make(rng)
    serial = _outputs(fn.serial(*args), args)
    for a, b in zip(serial, _outputs(fn.parallel(*args), args), strict=True):
        np.testing.assert_array_equal(a, b)


def test_twin_dispatch_follows_the_threads_context(monkeypatch):
    """Large work runs the parallel twin only when the enclosing ``threads`` context has more
    than one thread; outside any context numba's own thread count decides."""
    from sklearn_lvgp._compile.jit import twin_jit
    from sklearn_lvgp._core.parallel import current_threads, threads

    calls = []

    @twin_jit(work=lambda x: 10 ** 9)
    def double(x):
        return 2.0 * x

    monkeypatch.setattr(double, "serial", lambda x: calls.append("serial") or 2.0 * x)
    monkeypatch.setattr(double, "parallel", lambda x: calls.append("parallel") or 2.0 * x)
    @twin_jit(work=lambda x: 10)
    def small(x):
        return 2.0 * x

    assert current_threads() is None
    with threads(1):
        assert current_threads() == 1
        assert double.runs_serial(1.0) and small.runs_serial(1.0)
        double(1.0)
        if numba.config.NUMBA_NUM_THREADS >= 2:
            with threads(2):
                assert current_threads() == 2
                assert not double.runs_serial(1.0) and small.runs_serial(1.0)
                double(1.0)
            assert current_threads() == 1  # the inner context restores the outer count
    assert current_threads() is None
    expected = ["serial"] + (["parallel"] if numba.config.NUMBA_NUM_THREADS >= 2 else [])
    assert calls == expected


@pytest.mark.parametrize("offset", [0.0, 1e3])
@pytest.mark.parametrize("same", [False, True])
@pytest.mark.parametrize("name", ["RBF", "Matern32", "Matern52", "RationalQuadratic"])
def test_backward_by_products_matches_the_fused_loop(rng, offset, same, name):
    """The stationary backward as slope weights and matrix products equals the jitted
    (n, m, q) loop, also far from the origin (inputs are centred first) and for ``K(X, X)``."""
    from sklearn_lvgp import kernels
    from sklearn_lvgp.kernels import _kernels_numba as nbk

    ls = np.array([0.5, 1.0, 2.0])
    X = rng.standard_normal((40, 3)) + offset
    Z = None if same else rng.standard_normal((7, 3)) + offset
    k = getattr(kernels, name)(ls, variance=1.3)
    K = k.K(X, Z)
    dK = rng.standard_normal(K.shape)
    got = k.vjp_cached(dK, (X, Z, K))
    Zr = X if same else Z
    dX, dZ, dl, dv, da = nbk.stationary_K_vjp(dK, K, X, Zr, 1.0 / ls, 1.3, k._kind, k._alpha(),
                                              True)
    np.testing.assert_allclose(got.X, dX + dZ if same else dX, rtol=1e-9, atol=1e-12)
    if not same:
        np.testing.assert_allclose(got.Z, dZ, rtol=1e-9, atol=1e-12)
    expected = k._pack_theta_grad({"variance": dv, "length_scale": dl, "alpha": da})
    np.testing.assert_allclose(got.theta, expected, rtol=1e-9, atol=1e-10)


def test_slope_weights_refuse_matern12(rng):
    """Matérn 1/2 has no product backward (its slope is unbounded at r = 0)."""
    X, ZT = rng.standard_normal((5, 2)), rng.standard_normal((2, 3))
    K = _nb.stationary_K(X, ZT, np.ones(2), 1.0, _nb.MATERN12_KIND, 1.0, np.empty((5, 3)))
    with pytest.raises(ValueError, match="Matérn 1/2"):
        _nb.stationary_slope_weights(np.ones_like(K), K, X, ZT, np.ones(2), _nb.MATERN12_KIND,
                                     1.0, np.empty_like(K))


@pytest.mark.parametrize("name", [k for k in _KINDS if k != "matern12"])
def test_slope_weights_may_overwrite_their_adjoint(name, rng):
    """Writing the weights over ``dK`` gives the bits of a separate output buffer."""
    fn, args = _slope_weights(_KINDS[name])(rng)
    separate, da = fn.serial(*args)
    dK = args[0].copy()
    same, da_same = fn.serial(dK, *args[1:-1], dK)
    assert same is dK
    np.testing.assert_array_equal(same, separate)
    assert da_same == da


@pytest.mark.parametrize("kernel", [RBF(length_scale=[0.7, 1.3]), Matern32(length_scale=0.8),
                                    Matern52(length_scale=[1.1, 0.6]),
                                    RationalQuadratic(length_scale=0.9, alpha=1.7)],
                         ids=["rbf", "matern32", "matern52", "rq"])
def test_vjp_cached_overwrite_flag(kernel, rng):
    """``overwrite_dK=True`` gives the same adjoints; without it ``dL_dK`` is left alone."""
    X, Z = rng.standard_normal((30, 2)), rng.standard_normal((7, 2))
    dK = rng.standard_normal((30, 7))
    kept = dK.copy()
    K, cache = kernel.K_cached(X, Z)
    plain = kernel.vjp_cached(dK, cache)
    np.testing.assert_array_equal(dK, kept)
    # views of the caller's array are not scratch either (``np.ascontiguousarray`` may return
    # a new view object of the same memory, e.g. for a non-canonical float64 descriptor)
    owner = kept.reshape(5, 6, 7).copy()
    views = (lambda: owner.reshape(30, 7),
             lambda: owner.reshape(30, 7).view(owner.dtype.newbyteorder("=")))
    for view in views:
        for call in (lambda v: kernel.vjp_cached(v, cache), lambda v: kernel.vjp(v, X, Z)):
            got = call(view())
            np.testing.assert_array_equal(owner.reshape(30, 7), kept)
            for a, b in zip(plain, got, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    scratch = dK.copy()
    over = kernel.vjp_cached(scratch, cache, overwrite_dK=True)
    for a, b in zip(plain, over, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kernel", [RBF(np.array([0.7, 1.4])), Matern32(0.9, variance=1.3)])
def test_stationary_K_cached_writes_into_a_given_buffer(kernel, rng):
    """``K_cached(out=)`` fills a C-contiguous float64 buffer of the right shape with the bits
    of ``K``; any other buffer is left alone and a new array returned."""
    X, Z = rng.standard_normal((9, 2)), rng.standard_normal((4, 2))
    expected = kernel.K(X, Z)
    buf = np.full((9, 4), np.nan)
    K, cache = kernel.K_cached(X, Z, out=buf)
    assert K is buf and cache[2] is buf
    np.testing.assert_array_equal(K, expected)
    for bad in (np.full((4, 9), np.nan), np.full((9, 4), np.nan, order="F"),
                np.full((9, 4), np.nan, dtype=np.float32)):
        K, _ = kernel.K_cached(X, Z, out=bad)
        assert K is not bad and np.all(np.isnan(bad))
        np.testing.assert_array_equal(K, expected)


def test_K_cached_into_calls_an_overriding_subclass_without_a_buffer(rng):
    """A subclass whose ``K_cached`` keeps the two-argument signature still works where the
    library hands the stationary kernels a buffer, and no buffer is requested for it."""
    from sklearn_lvgp._core.workspace import Workspace
    from sklearn_lvgp.kernels._stationary import K_cached_into

    class Logged(RBF):
        def K_cached(self, X, Z=None):
            return super().K_cached(X, Z)

    X, Z = rng.standard_normal((6, 2)), rng.standard_normal((3, 2))
    ws = Workspace()
    K, _ = K_cached_into(Logged(1.2), X, Z, ws, "K")
    np.testing.assert_array_equal(K, RBF(1.2).K(X, Z))
    assert ws._flat == {}
    K, _ = K_cached_into(RBF(1.2), X, Z, ws, "K")
    assert np.shares_memory(K, ws.array("K", (6, 3)))
    np.testing.assert_array_equal(K, RBF(1.2).K(X, Z))
    K, _ = K_cached_into(RBF(1.2), X, None, ws, "KX")  # Z=None: the (N, N) matrix
    np.testing.assert_array_equal(K, RBF(1.2).K(X))
