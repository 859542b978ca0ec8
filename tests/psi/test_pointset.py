"""Point-set Ψ-statistics (UT, Gauss–Hermite, Monte Carlo): accuracy against the closed forms
(de Souza et al. 2021, §2.3 and §3.1), exact limits, VJPs for every kernel, chunking and
thread-count invariance."""

import numba
import numpy as np
import pytest

from sklearn_lvgp._core.parallel import threads
from sklearn_lvgp.expectations import (
    _pointset,
    gauss_hermite_rule,
    make_rule,
    monte_carlo_rule,
    psi_statistics,
    psi_vjp,
    unscented_rule,
)
from sklearn_lvgp.kernels import (
    RBF,
    Linear,
    Matern12,
    Matern32,
    Matern52,
    MLPKernel,
    Periodic,
    RationalQuadratic,
    White,
)
from sklearn_lvgp.utils.gradcheck import check_vjp


def _rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def _gaussians(rng, N, M, Q, level):
    mu = rng.standard_normal((N, Q))
    S = level * rng.uniform(0.5, 1.5, (N, Q))
    Z = rng.standard_normal((M, Q))
    return mu, S, Z


@pytest.mark.parametrize("Q", [2, 5])
@pytest.mark.parametrize(("level", "tol1", "tol2"), [(0.01, 5e-4, 5e-4), (0.1, 1e-2, 2e-2)])
def test_unscented_accuracy_against_closed_form_rbf(rng, Q, level, tol1, tol2):
    mu, S, Z = _gaussians(rng, 40, 20, Q, level)
    k = RBF(np.ones(Q))
    exact, _ = psi_statistics(k, Z, mu, S, "analytic")
    ut, _ = psi_statistics(k, Z, mu, S, unscented_rule(Q))
    assert ut.psi0 == pytest.approx(exact.psi0, rel=1e-12)
    assert _rel(ut.Psi1, exact.Psi1) <= tol1
    assert _rel(ut.Psi2, exact.Psi2) <= tol2


def test_unscented_is_exact_for_linear_kernel(rng):
    mu, S, Z = _gaussians(rng, 12, 5, 3, 0.7)
    k = Linear(np.array([0.5, 1.5, 2.0]))
    exact, _ = psi_statistics(k, Z, mu, S, "analytic")
    ut, _ = psi_statistics(k, Z, mu, S, unscented_rule(3))
    assert ut.psi0 == pytest.approx(exact.psi0, rel=1e-10)
    assert _rel(ut.Psi1, exact.Psi1) <= 1e-10
    assert _rel(ut.Psi2, exact.Psi2) <= 1e-10


def test_unscented_equals_two_point_gauss_hermite_in_one_dimension(rng):
    mu, S, Z = _gaussians(rng, 10, 4, 1, 0.4)
    k = Matern32(0.8)
    ut, _ = psi_statistics(k, Z, mu, S, unscented_rule(1))
    gh, _ = psi_statistics(k, Z, mu, S, gauss_hermite_rule(2, 1))
    np.testing.assert_allclose(ut.Psi1, gh.Psi1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ut.Psi2, gh.Psi2, rtol=0, atol=1e-12)


@pytest.mark.parametrize("Q", [1, 2])
@pytest.mark.parametrize(("level", "order"), [(0.5, 20), (1.0, 40)])
def test_high_order_gauss_hermite_matches_closed_form(rng, Q, level, order):
    """GH(20) reaches 1e-8 for S/l² ≤ 0.75; near S/l² = 1.5 it needs about 40 nodes."""
    mu, S, Z = _gaussians(rng, 8, 5, Q, level)
    k = RBF(np.ones(Q))
    exact, _ = psi_statistics(k, Z, mu, S, "analytic")
    gh, _ = psi_statistics(k, Z, mu, S, gauss_hermite_rule(order, Q))
    assert _rel(gh.Psi1, exact.Psi1) <= 1e-8
    assert _rel(gh.Psi2, exact.Psi2) <= 1e-8


def test_monte_carlo_error_within_standard_errors_and_shrinks(rng):
    Q = 2
    mu, S, Z = _gaussians(rng, 6, 4, Q, 0.5)
    k = RBF(np.ones(Q))
    exact, _ = psi_statistics(k, Z, mu, S, "analytic")
    state = np.random.RandomState(3)
    errors = []
    for K in (100, 10_000):
        rule = monte_carlo_rule(K, Q, state, n_points=mu.shape[0])
        est, _ = psi_statistics(k, Z, mu, S, rule)
        X = (mu[:, None, :] + np.sqrt(S)[:, None, :] * rule.nodes).reshape(-1, Q)
        samples = k.K(X, Z).reshape(mu.shape[0], K, -1)
        se = samples.std(axis=1, ddof=1) / np.sqrt(K)
        assert np.all(np.abs(est.Psi1 - exact.Psi1) <= 4 * se + 1e-15)
        errors.append(_rel(est.Psi1, exact.Psi1))
    assert 3.0 < errors[0] / errors[1] < 40.0  # about sqrt(100) = 10


KERNELS = {
    "rbf": lambda Q: RBF(np.linspace(0.8, 1.3, Q), variance=1.4),
    "matern32": lambda Q: Matern32(np.linspace(0.9, 1.2, Q)),
    "periodic": lambda Q: Periodic(period=2.0, length_scale=0.9),
    "linear": lambda Q: Linear(np.linspace(0.5, 1.5, Q)),
    "mlp": lambda Q: MLPKernel(hidden_units=3, output_units=2).initialize(
        Q, np.random.RandomState(0)),
    "per+rbf+lin": lambda Q: Periodic() + RBF(np.ones(Q)) + Linear(np.ones(Q)),
    "rbf*white": lambda Q: RBF(1.0) + White(0.1),
}

RULES = {
    "unscented": lambda Q, N: unscented_rule(Q),
    "gauss_hermite": lambda Q, N: gauss_hermite_rule(3, Q),
    "monte_carlo": lambda Q, N: monte_carlo_rule(5, Q, np.random.RandomState(1), n_points=N),
}


@pytest.mark.parametrize("rule_name", list(RULES))
@pytest.mark.parametrize("kernel_name", list(KERNELS))
def test_pointset_vjp_matches_finite_differences(rng, kernel_name, rule_name):
    N, M, Q = 5, 3, 2
    mu, S, Z = _gaussians(rng, N, M, Q, 0.3)
    kernel = KERNELS[kernel_name](Q)
    rule = RULES[rule_name](Q, N)

    def forward(mu, S, Z, theta):
        stats, _ = psi_statistics(kernel.clone_with_theta(theta), Z, mu, S, rule)
        return np.asarray(stats.psi0), stats.Psi1, stats.Psi2

    def backward(w, mu, S, Z, theta):
        _, cache = psi_statistics(kernel.clone_with_theta(theta), Z, mu, S, rule)
        v = psi_vjp(float(w[0]), w[1], w[2], cache)
        return {"mu": v.mu, "S": v.S, "Z": v.Z, "theta": v.theta}

    rtol = 1e-4 if kernel_name == "mlp" else 1e-5
    check_vjp(forward, backward, {"mu": mu, "S": S, "Z": Z, "theta": kernel.theta}, rng,
              rtol=rtol)


def test_per_point_statistics_sum_and_vjp(rng):
    N, M, Q = 4, 3, 2
    mu, S, Z = _gaussians(rng, N, M, Q, 0.3)
    kernel = Matern32(np.ones(Q))
    rule = unscented_rule(Q)
    per, _ = psi_statistics(kernel, Z, mu, S, rule, per_point=True)
    tot, _ = psi_statistics(kernel, Z, mu, S, rule)
    assert per.psi0.shape == (N,) and per.Psi2.shape == (N, M, M)
    assert np.sum(per.psi0) == pytest.approx(tot.psi0)
    np.testing.assert_allclose(per.Psi2.sum(0), tot.Psi2, rtol=1e-12)

    def forward(mu, S, Z):
        stats, _ = psi_statistics(kernel, Z, mu, S, rule, per_point=True)
        return stats.psi0, stats.Psi1, stats.Psi2

    def backward(w, mu, S, Z):
        _, cache = psi_statistics(kernel, Z, mu, S, rule, per_point=True)
        v = psi_vjp(w[0], w[1], w[2], cache)
        return {"mu": v.mu, "S": v.S, "Z": v.Z}

    check_vjp(forward, backward, {"mu": mu, "S": S, "Z": Z}, rng)


@pytest.mark.parametrize("rule_name", list(RULES))
def test_zero_variance_limit_is_deterministic_kernel(rng, rule_name):
    N, M, Q = 6, 4, 2
    mu, _, Z = _gaussians(rng, N, M, Q, 0.3)
    kernel = Periodic(period=1.5) + Matern32(np.ones(Q))
    stats, _ = psi_statistics(kernel, Z, mu, np.zeros((N, Q)), RULES[rule_name](Q, N))
    Knm = kernel.K(mu, Z)
    np.testing.assert_allclose(stats.Psi1, Knm, rtol=1e-12)
    np.testing.assert_allclose(stats.Psi2, Knm.T @ Knm, rtol=1e-12)
    assert stats.psi0 == pytest.approx(np.sum(kernel.Kdiag(mu)))


@pytest.mark.parametrize("keep", [True, False])
def test_chunking_does_not_change_results(rng, monkeypatch, keep):
    N, M, Q = 50, 6, 3
    mu, S, Z = _gaussians(rng, N, M, Q, 0.3)
    kernel = Matern32(np.ones(Q))
    rule = unscented_rule(Q)
    whole, cache = psi_statistics(kernel, Z, mu, S, rule)
    assert len(cache.inner.chunks) == 1 and len(cache.inner.Ks) == 1
    g = rng.standard_normal((M, M))
    v_whole = psi_vjp(0.3, np.ones((N, M)), g, cache)
    monkeypatch.setattr(_pointset, "MIN_CHUNK_ROWS", 1)
    monkeypatch.setattr(_pointset, "CHUNK_ELEMENTS", 7 * 2 * Q * M)  # 7 rows per chunk
    monkeypatch.setattr(_pointset, "KEEP_ELEMENTS", N * 2 * Q * M if keep else 0)
    parts, cache = psi_statistics(kernel, Z, mu, S, rule)
    assert len(cache.inner.chunks) == 8
    assert len(cache.inner.Ks) == (8 if keep else 0)
    v_parts = psi_vjp(0.3, np.ones((N, M)), g, cache)
    np.testing.assert_allclose(parts.Psi2, whole.Psi2, rtol=1e-12)
    for a, b in zip(v_parts, v_whole, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_results_identical_for_one_and_two_threads(rng):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has a single thread")
    N, M, Q = 400, 20, 3
    mu, S, Z = _gaussians(rng, N, M, Q, 0.3)
    kernel = Matern32(np.ones(Q))
    rule = unscented_rule(Q)
    g = rng.standard_normal((M, M))
    results = []
    for n_jobs in (1, 2):
        with threads(n_jobs):
            stats, cache = psi_statistics(kernel, Z, mu, S, rule)
            v = psi_vjp(0.3, np.ones((N, M)), g, cache)
        results.append((stats.Psi1, stats.Psi2, *v))
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)


def test_make_rule_resolution_and_errors():
    assert make_rule("auto", RBF(1.0), 2)[0] == "analytic"
    assert make_rule("auto", Matern32(1.0), 2)[0] == "unscented"
    with pytest.raises(ValueError, match="closed-form"):
        make_rule("analytic", Matern32(1.0), 2)
    with pytest.raises(ValueError, match="expectation must be one of"):
        make_rule("quadrature", RBF(1.0), 2)
    with pytest.raises(ValueError, match=r"3\*\*30 = .* evaluation points"):
        make_rule("gauss_hermite", RBF(1.0), 30, gh_order=3)
    with pytest.raises(ValueError, match="random_state"):
        make_rule("monte_carlo", RBF(1.0), 2)
    name, rule = make_rule("monte_carlo", RBF(1.0), 2, n_samples=7,
                           random_state=np.random.RandomState(0))
    assert name == "monte_carlo" and rule.nodes.shape == (7, 2)


STATIONARY = {
    "rbf_ard": lambda Q: RBF(np.linspace(0.7, 1.6, Q), variance=1.3),
    "rbf_iso": lambda Q: RBF(1.2, variance=0.8),
    "matern12": lambda Q: Matern12(np.linspace(0.8, 1.5, Q)),
    "matern32": lambda Q: Matern32(np.linspace(0.8, 1.5, Q), variance=2.0),
    "matern52": lambda Q: Matern52(1.1),
    "rq": lambda Q: RationalQuadratic(np.linspace(0.9, 1.3, Q), alpha=0.7),
}


@pytest.mark.parametrize("per_point", [False, True])
@pytest.mark.parametrize("kernel_name", list(STATIONARY))
def test_unscented_axis_points_equal_the_point_array(rng, monkeypatch, kernel_name, per_point):
    """Stationary kernels under the unscented rule skip the (N, 2Q, Q) point array (distances
    from each centre plus a one-coordinate correction); the result is the generic path's."""
    N, M, Q = 23, 7, 4
    mu, S, Z = _gaussians(rng, N, M, Q, 0.3)
    S[3] = 0.0  # a deterministic row: its points coincide with the centre
    kernel = STATIONARY[kernel_name](Q)
    rule = unscented_rule(Q)
    g0 = rng.standard_normal(N) if per_point else 0.7
    g1 = rng.standard_normal((N, M))
    g2 = rng.standard_normal((N, M, M) if per_point else (M, M))
    fast, cache = psi_statistics(kernel, Z, mu, S, rule, per_point=per_point)
    assert cache.inner.delta is not None
    v_fast = psi_vjp(g0, g1, g2, cache)
    monkeypatch.setattr(_pointset, "uses_axis_points", lambda kernel, rule: False)
    ref, cache = psi_statistics(kernel, Z, mu, S, rule, per_point=per_point)
    assert cache.inner.delta is None
    v_ref = psi_vjp(g0, g1, g2, cache)
    for a, b in zip(fast, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    for name, a, b in zip(v_fast._fields, v_fast, v_ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11, err_msg=name)


@pytest.mark.parametrize("kernel_name", list(STATIONARY))
def test_one_call_chunk_equals_the_pointset_path(rng, kernel_name):
    """The objective engine's one-call chunk statistics and backward pass (the unscented rule,
    a stationary kernel) equal the point-set path's sums and adjoints, from kept kernel rows and
    from recomputed ones, with a deterministic row (S = 0: its S adjoint is 0)."""
    from sklearn_lvgp.expectations._ut_stationary import (
        axis_point_chunk_grads,
        axis_point_chunk_stats,
    )

    N, M, Q, D = 23, 7, 4, 3
    mu, S, Z = _gaussians(rng, N, M, Q, 0.3)
    S[3] = 0.0
    Y = rng.standard_normal((N, D))
    kernel = STATIONARY[kernel_name](Q)
    rule = unscented_rule(Q)
    stats, cache = psi_statistics(kernel, Z, mu, S, rule)
    Ks, scratch = np.empty((N, 2 * Q, M)), np.empty((N, 2 * Q, M))
    psi0, PY, Psi2 = axis_point_chunk_stats(kernel, Z, rule, mu, S, Y, Ks, scratch)
    np.testing.assert_allclose(psi0, stats.psi0, rtol=1e-13)
    np.testing.assert_allclose(PY, stats.Psi1.T @ Y, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(Psi2, stats.Psi2, rtol=1e-12, atol=1e-14)
    dpsi0, dPY_T, dPsi2 = 0.7, rng.standard_normal((D, M)), rng.standard_normal((M, M))
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = psi_vjp(dpsi0, Y @ dPY_T, dPsi2, cache)
    ref_S = np.where(S > 0, ref.S, 0.0)
    for have_Ks in (True, False):
        rows = Ks.copy() if have_Ks else np.full_like(Ks, np.nan)
        dmu, dS, dZ, dtheta = axis_point_chunk_grads(kernel, Z, rule, mu, S, Y, dpsi0, dPY_T,
                                                     dPsi2, rows, have_Ks, scratch)
        for name, a, b in (("mu", dmu, ref.mu), ("S", dS, ref_S), ("Z", dZ, ref.Z),
                           ("theta", dtheta, ref.theta)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=name)
        assert np.all(dS[3] == 0.0)


def test_axis_points_only_for_the_unscented_rule_and_stationary_kernels():
    from sklearn_lvgp.expectations._ut_stationary import uses_axis_points

    assert uses_axis_points(RBF(1.0), unscented_rule(3))
    assert uses_axis_points(RationalQuadratic(1.0), unscented_rule(1))
    assert not uses_axis_points(Periodic(), unscented_rule(3))
    assert not uses_axis_points(RBF(1.0) + White(0.1), unscented_rule(3))
    assert not uses_axis_points(RBF(1.0), gauss_hermite_rule(2, 3))
    moved = unscented_rule(3)._replace(nodes=unscented_rule(3).nodes[::-1].copy())
    assert not uses_axis_points(RBF(1.0), moved)


def test_unscented_stationary_path_builds_no_point_array(rng, monkeypatch):
    """Forward and backward at Q = 12 without the (N, 2Q, Q) point array."""

    def no_points(*args):
        raise AssertionError("the point array was built")

    monkeypatch.setattr(_pointset, "_points", no_points)
    mu, S, Z = _gaussians(rng, 30, 5, 12, 0.2)
    stats, cache = psi_statistics(Matern32(np.ones(12)), Z, mu, S, unscented_rule(12))
    v = psi_vjp(1.0, np.ones((30, 5)), np.ones((5, 5)), cache)
    assert np.all(np.isfinite(v.mu)) and np.all(np.isfinite(stats.Psi2))
    with pytest.raises(AssertionError, match="point array"):
        psi_statistics(Periodic(), Z, mu, S, unscented_rule(12))


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("kernel_name", ["matern32", "rbf_plus_linear"])
def test_workspace_gives_the_same_bits_and_reuses_its_memory(rng, monkeypatch, keep,
                                                             kernel_name):
    """Point matrices written into a workspace (stationary kernels) and the temporaries in
    this thread's workspace: the same statistics and adjoints as fresh arrays, over several
    chunks, kept or recomputed by the backward pass; a second evaluation writes the kept
    point matrices into the first one's memory."""
    from sklearn_lvgp._core.workspace import Workspace

    N, M, Q = 60, 6, 2
    kernel = (Matern32(np.array([0.8, 1.3])) if kernel_name == "matern32"
              else RBF(np.array([0.8, 1.3])) + Linear(variances=0.4))
    rule = gauss_hermite_rule(3, Q)
    K = rule.weights.shape[0]
    monkeypatch.setattr(_pointset, "MIN_CHUNK_ROWS", 1)
    for name in ("CHUNK_ELEMENTS", "LARGE_CHUNK_ELEMENTS"):
        monkeypatch.setattr(_pointset, name, 7 * K * M)  # 7 rows per chunk
    monkeypatch.setattr(_pointset, "KEEP_ELEMENTS", N * K * M if keep else 0)
    Z = rng.standard_normal((M, Q))
    ws = Workspace()
    kept_first = None
    for _ in range(2):
        mu, S, _ = _gaussians(rng, N, M, Q, 0.3)
        G1 = rng.standard_normal((N, M))
        G2 = rng.standard_normal((M, M))
        results = []
        for workspace in (None, ws):
            stats, cache = psi_statistics(kernel, Z, mu, S, rule, workspace=workspace)
            results.append((*stats, *psi_vjp(0.3, G1, G2, cache)))
        for a, b in zip(*results, strict=True):
            np.testing.assert_array_equal(a, b)
        assert len(cache.inner.chunks) == 9 and len(cache.inner.Ks) == (9 if keep else 0)
        if keep and kernel_name == "matern32":
            kept = [Ks for Ks, _ in cache.inner.Ks]
            if kept_first is None:
                kept_first = kept
                assert all(np.shares_memory(Ks, ws.array(f"pointset/Ks/{i}", (1,)))
                           for i, Ks in enumerate(kept))
            else:
                assert all(np.shares_memory(a, b) for a, b in zip(kept_first, kept, strict=True))
