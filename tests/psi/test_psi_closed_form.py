"""Closed-form Ψ-statistics (RBF, linear, cross terms, sums): values and VJPs.

Values are checked against the brute-force references of ``tests/reference.py`` (tensor
Gauss–Hermite grids, Monte Carlo, double-loop kernel matrices); VJPs against central finite
differences with random output weights.
"""

import numba
import numpy as np
import pytest
import reference as ref  # tests/ is on sys.path via tests/conftest.py (prepend import mode)

from sklearn_lvgp.expectations._cross import (
    closed_form_available,
    cross_psi2,
    cross_psi2_vjp,
    sum_psi,
    sum_psi_vjp,
)
from sklearn_lvgp.expectations._linear import linear_psi, linear_psi_vjp
from sklearn_lvgp.expectations._rbf import rbf_psi, rbf_psi_vjp
from sklearn_lvgp.kernels import RBF, Linear, Matern32
from sklearn_lvgp.utils.gradcheck import check_vjp

N, M = 5, 4

KERNELS = {
    "rbf_ard": lambda Q: RBF(length_scale=np.linspace(0.9, 1.6, Q), variance=1.3),
    "rbf_iso": lambda Q: RBF(length_scale=1.2, variance=0.7),
    "rbf_fixed_var": lambda Q: RBF(length_scale=np.linspace(1.0, 1.5, Q), variance=1.7,
                                   variance_bounds="fixed"),
    "lin_ard": lambda Q: Linear(variances=np.linspace(0.5, 1.5, Q)),
    "lin_iso": lambda Q: Linear(variances=0.8),
    "lin_fixed": lambda Q: Linear(variances=0.6, variances_bounds="fixed"),
}
RBFS = ["rbf_ard", "rbf_iso", "rbf_fixed_var"]
LINS = ["lin_ard", "lin_iso", "lin_fixed"]
CROSS_PAIRS = [("rbf_ard", "lin_ard"), ("lin_iso", "rbf_iso"), ("rbf_iso", "lin_fixed"),
               ("lin_ard", "lin_iso"), ("rbf_ard", "rbf_iso"), ("rbf_fixed_var", "rbf_ard")]
SUMS = {
    "rbf+lin": ["rbf_ard", "lin_ard"],
    "rbf+lin+rbf": ["rbf_ard", "lin_iso", "rbf_iso"],
    "lin+rbf_fixed+lin": ["lin_iso", "rbf_fixed_var", "lin_ard"],
}


def _sum_kernel(names, Q):
    k = KERNELS[names[0]](Q)
    for name in names[1:]:
        k = k + KERNELS[name](Q)
    return k


def _problem(seed, Q, n=N, m=M, s_low=0.05, s_high=0.5):
    rng = np.random.default_rng(seed)
    mu = rng.standard_normal((n, Q))
    S = rng.uniform(s_low, s_high, (n, Q))
    Z = rng.standard_normal((m, Q))
    return Z, mu, S


def _rel(a, b):
    return np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(b)


def _single_psi(kernel, Z, mu, S, per_point=False):
    fn = rbf_psi if isinstance(kernel, RBF) else linear_psi
    return fn(kernel, Z, mu, S, per_point)


def _single_vjp(kernel):
    return rbf_psi_vjp if isinstance(kernel, RBF) else linear_psi_vjp


# ---------------------------------------------------------------------------------- values

@pytest.mark.parametrize("Q", [2, 3])
@pytest.mark.parametrize("name", RBFS + LINS)
def test_single_matches_gauss_hermite(name, Q):
    kernel = KERNELS[name](Q)
    Z, mu, S = _problem(0, Q)
    stats, _ = _single_psi(kernel, Z, mu, S)
    psi0, Psi1, Psi2 = ref.psi_gauss_hermite(ref.pointwise_kernel(kernel), Z, mu, S, H=20)
    assert stats.psi0 == pytest.approx(psi0, rel=1e-10)
    assert _rel(stats.Psi1, Psi1) < 1e-8
    assert _rel(stats.Psi2, Psi2) < 1e-8
    np.testing.assert_allclose(stats.Psi2, stats.Psi2.T, rtol=0, atol=0)


def test_rbf_large_variance_matches_gauss_hermite():
    """S / l^2 up to 1 in Q = 2.

    The Ψ2 integrand varies on the scale ``l / sqrt(2)``, so at ``S / l^2 = 1`` GH(20) is only
    good to about 6e-8 for Ψ2; GH(40) pins the closed form down to round-off.
    """
    kernel = RBF(length_scale=np.array([1.0, 1.3]), variance=1.1)
    Z, mu, S = _problem(1, 2, s_low=0.5, s_high=1.0)
    stats, _ = rbf_psi(kernel, Z, mu, S)
    k = ref.pointwise_kernel(kernel)
    _, Psi1, _ = ref.psi_gauss_hermite(k, Z, mu, S, H=20)
    assert _rel(stats.Psi1, Psi1) < 1e-8
    _, Psi1, Psi2 = ref.psi_gauss_hermite(k, Z, mu, S, H=40)
    assert _rel(stats.Psi1, Psi1) < 1e-12
    assert _rel(stats.Psi2, Psi2) < 1e-12


@pytest.mark.parametrize("names", list(SUMS.values()), ids=list(SUMS))
def test_sum_matches_gauss_hermite(names):
    kernel = _sum_kernel(names, 2)
    Z, mu, S = _problem(2, 2)
    stats, _ = sum_psi(kernel, Z, mu, S)
    psi0, Psi1, Psi2 = ref.psi_gauss_hermite(ref.pointwise_kernel(kernel), Z, mu, S, H=20)
    assert stats.psi0 == pytest.approx(psi0, rel=1e-10)
    assert _rel(stats.Psi1, Psi1) < 1e-8
    assert _rel(stats.Psi2, Psi2) < 1e-8


@pytest.mark.parametrize("pair", CROSS_PAIRS, ids=["-".join(p) for p in CROSS_PAIRS])
def test_cross_matches_gauss_hermite(pair):
    ka, kb = KERNELS[pair[0]](2), KERNELS[pair[1]](2)
    Z, mu, S = _problem(3, 2, s_low=0.01, s_high=0.1)
    C, _ = cross_psi2(ka, kb, Z, mu, S)
    C_ref = ref.cross_psi2_gauss_hermite(ref.pointwise_kernel(ka), ref.pointwise_kernel(kb),
                                         Z, mu, S, H=10)
    assert _rel(C, C_ref) < 1e-10
    Cp, _ = cross_psi2(ka, kb, Z, mu, S, per_point=True)
    Cp_ref = ref.cross_psi2_gauss_hermite(ref.pointwise_kernel(ka), ref.pointwise_kernel(kb),
                                          Z, mu, S, H=10, per_point=True)
    assert _rel(Cp, Cp_ref) < 1e-10
    C_swapped, _ = cross_psi2(kb, ka, Z, mu, S)
    np.testing.assert_allclose(C_swapped, C.T, rtol=1e-13, atol=0)


@pytest.mark.parametrize("name", ["rbf_ard", "lin_ard"])
def test_cross_of_kernel_with_itself_is_psi2(name):
    """The generic cross-term code reproduces Ψ2 when both kernels are equal."""
    kernel = KERNELS[name](3)
    Z, mu, S = _problem(8, 3)
    stats, _ = _single_psi(kernel, Z, mu, S)
    C, _ = cross_psi2(kernel, kernel.clone(), Z, mu, S)
    np.testing.assert_allclose(C, stats.Psi2, rtol=1e-13, atol=1e-15)


def test_linear_matches_closed_form_reference():
    """The linear-ARD closed form written out: ``Psi2 = Z A (mu^T mu + diag(sum_n S_n)) A Z^T``."""
    Q = 3
    alpha = np.array([0.3, 1.0, 2.0])
    Z, mu, S = _problem(4, Q)
    stats, _ = linear_psi(Linear(variances=alpha), Z, mu, S)
    A = np.diag(alpha)
    R = mu.T @ mu + np.diag(S.sum(axis=0))
    assert stats.psi0 == pytest.approx(np.sum(alpha * np.sum(mu ** 2 + S, axis=0)), rel=1e-14)
    np.testing.assert_allclose(stats.Psi1, mu @ A @ Z.T, rtol=1e-13)
    np.testing.assert_allclose(stats.Psi2, Z @ A @ R @ A @ Z.T, rtol=1e-13)


@pytest.mark.parametrize("names", [["rbf_ard"], ["lin_ard"]] + list(SUMS.values()),
                         ids=["rbf", "lin"] + list(SUMS))
def test_per_point_sums_to_psi2(names):
    kernel = _sum_kernel(names, 3)
    Z, mu, S = _problem(5, 3)
    summed, _ = sum_psi(kernel, Z, mu, S)
    per_point, _ = sum_psi(kernel, Z, mu, S, per_point=True)
    assert per_point.Psi2.shape == (N, M, M)
    np.testing.assert_allclose(per_point.Psi2.sum(axis=0), summed.Psi2, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(per_point.Psi1, summed.Psi1)


@pytest.mark.parametrize("names", [["rbf_ard"], ["rbf_iso"], ["lin_ard"]] + list(SUMS.values()),
                         ids=["rbf_ard", "rbf_iso", "lin"] + list(SUMS))
def test_zero_variance_limit(names):
    """With ``S = 0`` the statistics are kernel evaluations at ``mu``."""
    kernel = _sum_kernel(names, 3)
    Z, mu, _ = _problem(6, 3)
    k = ref.pointwise_kernel(kernel)
    K = ref.kernel_matrix_loop(k, mu, Z)
    stats, _ = sum_psi(kernel, Z, mu, np.zeros_like(mu))
    diag = np.diag(ref.kernel_matrix_loop(k, mu))
    assert stats.psi0 == pytest.approx(diag.sum(), rel=1e-13)
    np.testing.assert_allclose(stats.Psi1, K, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(stats.Psi2, K.T @ K, rtol=1e-12, atol=1e-15)


def test_monte_carlo_within_four_standard_errors():
    kernel = _sum_kernel(SUMS["rbf+lin"], 2)
    Z, mu, S = _problem(7, 2)
    stats, _ = sum_psi(kernel, Z, mu, S)
    (psi0, Psi1, Psi2), (se0, se1, se2) = ref.psi_monte_carlo(
        ref.pointwise_kernel(kernel), Z, mu, S, 20000, np.random.default_rng(0))
    assert abs(stats.psi0 - psi0) <= 4 * se0
    assert np.all(np.abs(stats.Psi1 - Psi1) <= 4 * se1)
    assert np.all(np.abs(stats.Psi2 - Psi2) <= 4 * se2)


# ------------------------------------------------------------------------------------ VJPs

def _check_stats_vjp(psi, psi_vjp, kernel, Z, mu, S, seed, per_point=False):
    """FD check of ``(psi0, Psi1, Psi2)`` jointly wrt mu, S, Z and theta."""

    def forward(mu, S, Z, theta):
        stats, _ = psi(kernel.clone_with_theta(theta), Z, mu, S, per_point)
        assert np.shape(stats.psi0) == ((mu.shape[0],) if per_point else ())
        return np.asarray(stats.psi0), stats.Psi1, stats.Psi2

    def backward(weights, mu, S, Z, theta):
        _, cache = psi(kernel.clone_with_theta(theta), Z, mu, S, per_point)
        r = psi_vjp(weights[0], weights[1], weights[2], cache)  # psi0 per point if per_point
        assert r.theta.shape == (kernel.n_theta,)
        return {"mu": r.mu, "S": r.S, "Z": r.Z, "theta": r.theta}

    inputs = {"mu": mu, "S": S, "Z": Z, "theta": kernel.theta}
    return check_vjp(forward, backward, inputs, np.random.default_rng(seed), rtol=1e-5)


@pytest.mark.parametrize("per_point", [False, True], ids=["summed", "per_point"])
@pytest.mark.parametrize("name", RBFS + LINS)
def test_single_vjp(name, per_point):
    kernel = KERNELS[name](3)
    Z, mu, S = _problem(10, 3)
    _check_stats_vjp(_single_psi, _single_vjp(kernel), kernel, Z, mu, S, seed=11,
                     per_point=per_point)


@pytest.mark.parametrize("per_point", [False, True], ids=["summed", "per_point"])
@pytest.mark.parametrize("pair", CROSS_PAIRS, ids=["-".join(p) for p in CROSS_PAIRS])
def test_cross_vjp(pair, per_point):
    ka, kb = KERNELS[pair[0]](3), KERNELS[pair[1]](3)
    Z, mu, S = _problem(12, 3)
    na = ka.n_theta

    def forward(mu, S, Z, theta):
        C, _ = cross_psi2(ka.clone_with_theta(theta[:na]), kb.clone_with_theta(theta[na:]),
                          Z, mu, S, per_point)
        return C

    def backward(weights, mu, S, Z, theta):
        _, cache = cross_psi2(ka.clone_with_theta(theta[:na]), kb.clone_with_theta(theta[na:]),
                              Z, mu, S, per_point)
        r = cross_psi2_vjp(weights, cache)
        return {"mu": r.mu, "S": r.S, "Z": r.Z, "theta": r.theta}

    inputs = {"mu": mu, "S": S, "Z": Z, "theta": np.concatenate([ka.theta, kb.theta])}
    check_vjp(forward, backward, inputs, np.random.default_rng(13), rtol=1e-5)


@pytest.mark.parametrize("per_point", [False, True], ids=["summed", "per_point"])
@pytest.mark.parametrize("names", list(SUMS.values()), ids=list(SUMS))
def test_sum_vjp(names, per_point):
    kernel = _sum_kernel(names, 3)
    Z, mu, S = _problem(14, 3)
    _check_stats_vjp(sum_psi, sum_psi_vjp, kernel, Z, mu, S, seed=15, per_point=per_point)


def test_vjp_accepts_summed_adjoint_after_per_point_forward():
    kernel = KERNELS["rbf_ard"](2)
    Z, mu, S = _problem(16, 2)
    G2 = np.random.default_rng(0).standard_normal((M, M))
    _, cache_pp = rbf_psi(kernel, Z, mu, S, per_point=True)
    _, cache = rbf_psi(kernel, Z, mu, S)
    a = rbf_psi_vjp(None, None, G2, cache_pp)
    b = rbf_psi_vjp(None, None, np.broadcast_to(G2, (N, M, M)), cache)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


def test_vjp_uses_symmetric_part_of_psi2_adjoint():
    kernel = _sum_kernel(SUMS["rbf+lin+rbf"], 2)
    Z, mu, S = _problem(17, 2)
    G2 = np.random.default_rng(1).standard_normal((M, M))
    _, cache = sum_psi(kernel, Z, mu, S)
    a = sum_psi_vjp(0.0, None, G2, cache)
    b = sum_psi_vjp(0.0, None, 0.5 * (G2 + G2.T), cache)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- misc contract

def test_closed_form_available():
    assert closed_form_available(RBF())
    assert closed_form_available(Linear())
    assert closed_form_available(RBF() + Linear() + RBF())
    assert not closed_form_available(Matern32())
    assert not closed_form_available(RBF() + Matern32())
    assert not closed_form_available(RBF() * Linear())


def test_errors():
    Z, mu, S = _problem(18, 2)
    with pytest.raises(ValueError, match="closed-form"):
        sum_psi(RBF() + Matern32(), Z, mu, S)
    with pytest.raises(ValueError, match="non-negative"):
        rbf_psi(RBF(), Z, mu, -S)
    with pytest.raises(ValueError, match="length scales"):
        rbf_psi(RBF(length_scale=np.ones(3)), Z, mu, S)
    _, cache = rbf_psi(RBF(), Z, mu, S)
    with pytest.raises(ValueError, match="dL_dPsi2"):
        rbf_psi_vjp(0.0, None, np.zeros((M + 1, M + 1)), cache)


# ---------------------------------------------------------------------------- determinism

@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs at least 2 numba threads")
@pytest.mark.parametrize("per_point", [False, True], ids=["summed", "per_point"])
def test_thread_count_determinism(per_point):
    """Results and gradients are bit-identical for 1 and 2 threads (several row blocks)."""
    Q = 3
    n = 300 if not per_point else 130
    kernel = RBF(length_scale=np.array([0.9, 1.2, 1.5]), variance=1.3) + \
        Linear(variances=np.array([0.5, 1.0, 1.5])) + RBF(length_scale=1.1, variance=0.6)
    Z, mu, S = _problem(19, Q, n=n, m=10)
    rng = np.random.default_rng(20)
    G1 = rng.standard_normal((n, 10))
    G2 = rng.standard_normal((n, 10, 10) if per_point else (10, 10))

    def run():
        stats, cache = sum_psi(kernel, Z, mu, S, per_point)
        return list(stats) + list(sum_psi_vjp(0.3, G1, G2, cache))

    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = run()
        numba.set_num_threads(2)
        two = run()
    finally:
        numba.set_num_threads(previous)
    for a, b in zip(one, two, strict=True):
        assert np.array_equal(a, b)


def test_per_point_psi0_of_closed_forms():
    """Per-point psi0 sums to the summed one and equals the (exact) unscented value."""
    from sklearn_lvgp.expectations import psi_statistics, unscented_rule
    from sklearn_lvgp.kernels import RBF, Linear

    Z, mu, S = _problem(9, 3, n=7)
    kernel = RBF(np.ones(3), variance=1.7) + Linear(np.array([0.5, 1.0, 2.0]))
    per, _ = psi_statistics(kernel, Z, mu, S, "analytic", per_point=True)
    tot, _ = psi_statistics(kernel, Z, mu, S, "analytic")
    ut, _ = psi_statistics(kernel, Z, mu, S, unscented_rule(3), per_point=True)
    assert per.psi0.shape == (7,)
    assert np.sum(per.psi0) == pytest.approx(tot.psi0, rel=1e-12)
    np.testing.assert_allclose(per.psi0, ut.psi0, rtol=1e-12)


@pytest.mark.parametrize("per_point", [False, True])
@pytest.mark.parametrize("keep", [True, False])
def test_two_rbf_chunks_kept_or_recomputed_give_the_same_results(rng, monkeypatch, keep,
                                                                  per_point):
    """Ψ2 of an RBF in one chunk or in several, entries kept for the backward pass or not."""
    from sklearn_lvgp.expectations import _two_rbf

    N, M, Q = 50, 6, 3
    mu, S = rng.standard_normal((N, Q)), rng.uniform(0.1, 0.5, (N, Q))
    Z = rng.standard_normal((M, Q))
    kernel = RBF(np.array([0.8, 1.2, 1.5]), variance=1.3)
    g = rng.standard_normal((N, M, M) if per_point else (M, M))
    whole, cache = rbf_psi(kernel, Z, mu, S, per_point=per_point)
    assert len(cache.two.kept) == 1
    v_whole = rbf_psi_vjp(0.3, np.ones((N, M)), g, cache)
    P = M * (M + 1) // 2
    monkeypatch.setattr(_two_rbf, "CHUNK_ENTRIES", 7 * P)  # 7 rows per chunk
    monkeypatch.setattr(_two_rbf, "KEEP_ENTRIES", N * P if keep else 0)
    parts, cache = rbf_psi(kernel, Z, mu, S, per_point=per_point)
    assert len(cache.two.kept) == (8 if keep else 0)
    v_parts = rbf_psi_vjp(0.3, np.ones((N, M)), g, cache)
    v_again = rbf_psi_vjp(0.3, np.ones((N, M)), g, cache)  # the kept entries are not modified
    np.testing.assert_allclose(parts.Psi2, whole.Psi2, rtol=1e-13)
    for a, b, c in zip(v_parts, v_whole, v_again, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(a, c)


def test_two_rbf_blocks_in_one_call_equal_the_block_by_block_path(rng, monkeypatch):
    """Serially, all blocks of the recomputed entries go through one jitted call (forward and
    backward); it gives the bits of the block-by-block path, whose blocks it replaces."""
    from sklearn_lvgp.expectations import _two_rbf

    N, M, Q = 50, 6, 3
    mu, S = rng.standard_normal((N, Q)), rng.uniform(0.1, 0.5, (N, Q))
    Z = rng.standard_normal((M, Q))
    kernel = RBF(np.array([0.8, 1.2, 1.5]), variance=1.3)
    g = rng.standard_normal((M, M))
    P = M * (M + 1) // 2
    monkeypatch.setattr(_two_rbf, "CHUNK_ENTRIES", 7 * P)  # 7 rows per block, the last has 1
    monkeypatch.setattr(_two_rbf, "KEEP_ENTRIES", 0)
    calls = []
    entries = _two_rbf._entries
    monkeypatch.setattr(_two_rbf, "_entries", lambda *a: calls.append(1) or entries(*a))

    def run():
        stats, cache = rbf_psi(kernel, Z, mu, S)
        return [stats.Psi2, *rbf_psi_vjp(0.3, np.ones((N, M)), g, cache)]

    fused = run()
    assert not calls
    monkeypatch.setattr(_two_rbf, "_serial_blocks", lambda *a: False)
    by_block = run()
    assert len(calls) == 2 * 8
    for a, b in zip(fused, by_block, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shift", [0.0, 1e2, 1e4])
def test_rbf_psi_is_translation_invariant_far_from_the_origin(rng, shift):
    """Values and adjoints do not move when the latents and inducing inputs are shifted together
    far from the origin."""
    Q, n, m = 3, 40, 7
    kernel = RBF(length_scale=np.array([0.7, 1.0, 1.8]), variance=1.3)
    mu, Z = rng.standard_normal((n, Q)), rng.standard_normal((m, Q))
    S = rng.uniform(0.05, 0.5, (n, Q))
    base, _ = rbf_psi(kernel, Z, mu, S)
    moved, _ = rbf_psi(kernel, Z + shift, mu + shift, S)
    np.testing.assert_allclose(moved.Psi1, base.Psi1, rtol=1e-9)
    np.testing.assert_allclose(moved.Psi2, base.Psi2, rtol=1e-9)
    pp_base, _ = rbf_psi(kernel, Z, mu, S, per_point=True)
    np.testing.assert_allclose(pp_base.Psi2.sum(axis=0), base.Psi2, rtol=1e-12)
    # the backward passes expand squares of mu - z: they centre, so far from the origin the
    # adjoints keep their accuracy (uncentred: 1.6e-7 relative error in dS at a shift of 1e4)
    G1 = rng.standard_normal((n, m))
    G2 = rng.standard_normal((m, m))
    G2 = G2 + G2.T
    ref = rbf_psi_vjp(1.0, G1, G2, rbf_psi(kernel, Z, mu, S)[1])
    got = rbf_psi_vjp(1.0, G1, G2, rbf_psi(kernel, Z + shift, mu + shift, S)[1])
    for a, b in zip(ref, got, strict=True):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-10 * np.max(np.abs(a)))


# ------------------------------------------------------------------------- workspace buffers
def _psi_and_vjp(kernel, Z, mu, S, rng_state, workspace):
    from sklearn_lvgp.expectations import psi_statistics, psi_vjp

    stats, cache = psi_statistics(kernel, Z, mu, S, "analytic", workspace=workspace)
    rs = np.random.RandomState(rng_state)
    G1 = rs.standard_normal(stats.Psi1.shape)
    G2 = rs.standard_normal(stats.Psi2.shape)
    return stats, psi_vjp(-0.7, G1, G2 + G2.T, cache), cache


@pytest.mark.parametrize("kernel", [
    RBF(length_scale=np.array([0.8, 1.1, 1.4]), variance=1.2),
    RBF(length_scale=np.array([0.8, 1.1, 1.4]), variance=1.2)
    + RBF(length_scale=0.6, variance=0.5) + Linear(variances=0.3),
])
def test_workspace_gives_the_same_bits_and_reuses_its_memory(rng, kernel):
    """The two-RBF entries kept in a workspace: same values and adjoints as fresh arrays, and
    the second evaluation's chunks are the first's memory (several chunks: N = 700, M = 20)."""
    from sklearn_lvgp._core.workspace import Workspace

    Nw, Mw, Q = 700, 20, 3
    Z = rng.standard_normal((Mw, Q))
    ws = Workspace()
    kept_first = None
    for step in range(2):
        mu = rng.standard_normal((Nw, Q))
        S = rng.uniform(0.05, 0.5, (Nw, Q))
        ref_stats, ref_vjp, _ = _psi_and_vjp(kernel, Z, mu, S, step, None)
        stats, vjp, cache = _psi_and_vjp(kernel, Z, mu, S, step, ws)
        for a, b in zip((*ref_stats, *ref_vjp), (*stats, *vjp), strict=True):
            np.testing.assert_array_equal(a, b)
        setups = [c.two for c in cache.inner.caches if hasattr(c, "two")]
        setups += [c.data[0] for _, _, c in cache.inner.cross if hasattr(c.data[0], "kept")]
        chunks = [T for s in setups for T in s.kept]
        assert len(chunks) >= 2 * len(setups) and len(setups) >= 1
        if kept_first is None:
            kept_first = chunks
            # every term keeps its own buffers
            for i, a in enumerate(chunks):
                assert not any(np.shares_memory(a, b) for b in chunks[i + 1:])
        else:
            assert all(np.shares_memory(a, b) for a, b in zip(kept_first, chunks, strict=True))


def test_workspace_children_are_separate():
    from sklearn_lvgp._core.workspace import Workspace

    ws = Workspace()
    a = ws.child("a").array("x", (3,))
    b = ws.child("b").array("x", (3,))
    c = ws.child("a").child("b").array("x", (3,))
    assert not np.shares_memory(a, b) and not np.shares_memory(a, c)
    assert np.shares_memory(a, ws.child("a").array("x", (2,)))
    assert np.shares_memory(c, ws.array("a/b/x", (3,)))


# ------------------------------------------------------------------------------ input checks
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("which", ["Z", "mu", "S"])
def test_psi_inputs_non_finite_named_wherever_it_sits(rng, bad, which):
    """The vectorised finiteness check (a sum of ``x * 0``) finds a non-finite value in the
    vector body and in the scalar remainder of its loop alike."""
    from sklearn_lvgp.expectations._types import check_psi_inputs

    arrays = {"Z": rng.standard_normal((7, 3)), "mu": rng.standard_normal((37, 3)),
              "S": rng.uniform(0.1, 1.0, (37, 3))}
    for pos in (0, 5, -1):
        bad_arrays = {k: v.copy() for k, v in arrays.items()}
        bad_arrays[which].flat[pos] = bad
        with pytest.raises(ValueError, match=f"{which} contains NaN or infinite"):
            check_psi_inputs(bad_arrays["Z"], bad_arrays["mu"], bad_arrays["S"])


def test_psi_inputs_accept_extremes_and_reject_negative_variances(rng):
    from sklearn_lvgp.expectations._types import check_psi_inputs

    Z = np.full((4, 2), 1e308)  # finite; their sum would overflow, their products with 0 do not
    mu = np.full((9, 2), -1e308)
    S = np.zeros((9, 2))
    S[3, 1] = -0.0
    check_psi_inputs(Z, mu, S)
    S[8, 1] = -1e-300
    with pytest.raises(ValueError, match="non-negative"):
        check_psi_inputs(Z, mu, S)


def test_psi_inputs_checked_when_only_some_are_read_only(rng):
    """A read-only array (a memory-mapped fit, scikit-learn's pickle check) next to writable
    ones: the jitted check takes arrays of different types."""
    from sklearn_lvgp.expectations._types import check_psi_inputs

    Z, mu, S = rng.standard_normal((4, 2)), rng.standard_normal((9, 2)), np.ones((9, 2))
    Z.setflags(write=False)
    check_psi_inputs(Z, mu, S)
    S[2, 0] = np.nan
    with pytest.raises(ValueError, match="S contains NaN or infinite"):
        check_psi_inputs(Z, mu, S)
