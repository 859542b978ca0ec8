"""Jittered Cholesky (warns, then raises clearly) and the Cholesky / triangular-solve backward."""

import warnings

import numpy as np
import pytest

from sklearn_lvgp._core.linalg import (
    CholeskyError,
    JitterWarning,
    cho_solve,
    cholesky_jitter,
    cholesky_vjp,
    logdet_from_chol,
    lower_matmul,
    lower_solve,
    solve_lower,
    solve_lower_vjp,
    solve_upper,
    tril,
    tril_indices,
)
from sklearn_lvgp.utils.gradcheck import check_vjp


def _spd(rng, n):
    A = rng.standard_normal((n, n))
    return A @ A.T + n * np.eye(n)


def test_cholesky_plain_matrix_needs_no_warning(rng):
    A = _spd(rng, 5)
    A_copy = A.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitterWarning)
        L, used = cholesky_jitter(A, jitter=1e-6)
    np.testing.assert_allclose(L @ L.T, A + used * np.eye(5), rtol=1e-12)
    np.testing.assert_array_equal(A, A_copy)


def test_cholesky_escalates_with_warning_on_singular_matrix():
    v = np.array([[1.0, 2.0, 3.0]])
    A = v.T @ v - 1e-9 * np.eye(3)  # slightly indefinite
    with pytest.warns(JitterWarning, match="relative jitter"):
        L, used = cholesky_jitter(A, jitter=1e-14, max_tries=12, name="K_uu")
    assert used > 1e-14
    assert np.all(np.isfinite(L))


def test_cholesky_raises_naming_matrix_and_parameter():
    A = -np.eye(3)
    with pytest.raises(CholeskyError, match=r"K_uu.*Increase `jitter`"):
        with pytest.warns(JitterWarning):
            cholesky_jitter(A, jitter=1e-6, max_tries=2, name="K_uu")


def test_cholesky_error_advises_lowering_a_step_size():
    with pytest.raises(CholeskyError, match=r"q\(u\) precision.*Lower `natgrad_gamma`"):
        with pytest.warns(JitterWarning):
            cholesky_jitter(-np.eye(3), max_tries=2, name="q(u) precision",
                            parameter="natgrad_gamma", increase=False)


def test_cholesky_rejects_nan():
    with pytest.raises(CholeskyError, match="NaN"):
        cholesky_jitter(np.array([[1.0, np.nan], [np.nan, 1.0]]))


def test_cholesky_rejects_non_square():
    with pytest.raises(ValueError, match="square"):
        cholesky_jitter(np.ones((2, 3)), name="K_uu")


@pytest.mark.parametrize("order", ["C", "F"])
def test_cholesky_factor_is_lower_with_zero_upper_triangle(rng, order):
    A = np.asarray(_spd(rng, 6), order=order)
    L, used = cholesky_jitter(A, jitter=1e-8)
    assert np.all(np.triu(L, 1) == 0.0)
    np.testing.assert_allclose(L, np.linalg.cholesky(A + used * np.eye(6)), rtol=1e-12)
    assert used == pytest.approx(1e-8 * np.trace(A) / 6)


@pytest.mark.parametrize("order", ["C", "F"])
def test_potrf_lower_from_jitted_code_matches_lapack(rng, order):
    from scipy.linalg import lapack

    from sklearn_lvgp._core.blas_numba import DPOTRF, potrf_lower

    A = np.asarray(_spd(rng, 7), order=order)
    A_copy = A.copy()
    L, status, scale = potrf_lower(DPOTRF, A, 0.0)
    expected, info = lapack.dpotrf(A, lower=1, clean=1)
    assert status == 0 and info == 0
    np.testing.assert_array_equal(L, expected)  # the same LAPACK routine, bit for bit
    assert L.flags.f_contiguous
    assert scale == pytest.approx(np.trace(A) / 7, rel=1e-15)
    np.testing.assert_array_equal(A, A_copy)
    L, status, _ = potrf_lower(DPOTRF, A, 1e-3)
    np.testing.assert_allclose(L @ L.T, A + 1e-3 * scale * np.eye(7), rtol=1e-12)


def test_potrf_lower_status_codes():
    from sklearn_lvgp._core.blas_numba import DPOTRF, potrf_lower

    assert potrf_lower(DPOTRF, -np.eye(3), 1e-6)[1] == 1  # not positive definite
    upper_nan = np.eye(3)
    upper_nan[0, 2] = np.nan  # never read by the factorisation, still rejected
    assert potrf_lower(DPOTRF, upper_nan, 0.0)[1] == 2
    assert potrf_lower(DPOTRF, np.diag([1.0, np.inf, 1.0]), 0.0)[1] == 2
    L, status, scale = potrf_lower(DPOTRF, np.zeros((0, 0)), 1e-6)
    assert L.shape == (0, 0) and status == 0 and scale == 1.0
    # a non-positive mean diagonal scales the jitter by 1, as documented
    L, status, scale = potrf_lower(DPOTRF, np.diag([-1.0, 0.5]), 2.0)
    assert scale == 1.0 and status == 0
    np.testing.assert_allclose(np.diag(L) ** 2, [1.0, 2.5])


def test_solves_and_logdet(rng):
    A = _spd(rng, 4)
    L, used = cholesky_jitter(A, jitter=0.0)
    B = rng.standard_normal((4, 2))
    np.testing.assert_allclose(A @ cho_solve(L, B), B, atol=1e-10)
    assert logdet_from_chol(L) == pytest.approx(np.linalg.slogdet(A)[1], rel=1e-12)


def test_cholesky_vjp_matches_finite_differences(rng):
    A = _spd(rng, 4)

    def forward(A):
        return np.linalg.cholesky(0.5 * (A + A.T))

    # the adjoint of a symmetric input is checked along symmetric perturbations
    W = np.tril(rng.standard_normal((4, 4)))
    L = forward(A)
    dA = cholesky_vjp(L, W)
    V = rng.standard_normal((4, 4))
    V = V + V.T
    h = 1e-6
    num = (np.sum(W * forward(A + h * V)) - np.sum(W * forward(A - h * V))) / (2 * h)
    assert np.sum(dA * V) == pytest.approx(num, rel=1e-6)


def test_solve_lower_vjp_matches_finite_differences(rng):
    L0 = np.linalg.cholesky(_spd(rng, 4))

    def forward(L, B):
        return solve_lower(np.tril(L), B)

    def backward(W, L, B):
        dL, dB = solve_lower_vjp(np.tril(L), forward(L, B), W)
        return {"L": np.tril(dL), "B": dB}

    check_vjp(forward, backward, {"L": L0, "B": rng.standard_normal((4, 3))}, rng)


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("trans", [False, True])
def test_lower_matmul_ignores_upper_triangle_and_keeps_inputs(rng, layout, trans):
    L = rng.standard_normal((7, 7))  # junk above the diagonal must be ignored
    B = rng.standard_normal((7, 23))
    B = {"C": B, "F": np.asfortranarray(B), "strided": B[:, ::2]}[layout]
    L0, B0 = L.copy(), B.copy()
    expected = 1.5 * ((np.tril(L).T if trans else np.tril(L)) @ B)
    np.testing.assert_allclose(lower_matmul(L, B, alpha=1.5, trans=trans), expected,
                               rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(L, L0)
    np.testing.assert_array_equal(B, B0)


def test_lower_matmul_overwrite_reuses_buffer(rng):
    L = np.tril(rng.standard_normal((5, 5)))
    B = np.asfortranarray(rng.standard_normal((5, 9)))
    expected = L @ B
    out = lower_matmul(L, B, overwrite_b=True)
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13)
    assert np.shares_memory(out, B)


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("trans", [False, True])
def test_lower_solve_matches_scipy_and_keeps_layout(rng, layout, trans):
    L = rng.standard_normal((6, 6)) + 6.0 * np.eye(6)  # junk above the diagonal is ignored
    B = rng.standard_normal((6, 17))
    B = {"C": B, "F": np.asfortranarray(B), "strided": B[:, ::2]}[layout]
    B0 = B.copy()
    X = lower_solve(L, B, trans=trans)
    T = np.tril(L).T if trans else np.tril(L)
    np.testing.assert_allclose(T @ X, B, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(B, B0)
    if layout == "C":
        assert X.flags.c_contiguous


@pytest.mark.parametrize("solve, trans", [(solve_lower, False), (solve_upper, True)])
@pytest.mark.parametrize("shape", [(5,), (5, 1), (5, 3), "strided"])
def test_solve_lower_upper_match_scipy_without_touching_inputs(rng, solve, trans, shape):
    import scipy.linalg as sla

    L = rng.standard_normal((5, 5)) + 5.0 * np.eye(5)
    B = rng.standard_normal((5, 6))[:, ::2] if shape == "strided" else rng.standard_normal(shape)
    L0, B0 = L.copy(), B.copy()
    X = solve(L, B)
    ref = sla.solve_triangular(L, B, lower=True, trans="T" if trans else "N")
    assert X.shape == B.shape
    np.testing.assert_allclose(X, ref, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(L, L0)
    np.testing.assert_array_equal(B, B0)


@pytest.mark.parametrize("solve", [solve_lower, solve_upper])
def test_solve_with_zero_pivot_raises(solve):
    L = np.tril(np.ones((3, 3)))
    L[1, 1] = 0.0
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        solve(L, np.ones(3))


@pytest.mark.parametrize("shape", [(5, 5), (4, 6), (6, 4), (3, 5, 5), (2, 3, 4, 4)])
def test_tril_matches_numpy(shape):
    A = np.random.RandomState(0).standard_normal(shape)
    A[..., 0, -1] = -0.0
    got = tril(A)
    assert np.array_equal(got, np.tril(A)) and got.dtype == A.dtype
    assert not np.shares_memory(got, A)
    assert np.array_equal(tril(np.arange(12).reshape(3, 4)), np.tril(np.arange(12).reshape(3, 4)))


def test_tril_indices_cached_and_read_only():
    r, c = tril_indices(7)
    R, C = np.tril_indices(7)
    assert np.array_equal(r, R) and np.array_equal(c, C)
    assert tril_indices(7)[0] is r
    with pytest.raises(ValueError):
        r[0] = 1


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("shape", [(5, 3), (5, 0), (1, 4)])
def test_trsm_left_from_jitted_code_matches_scipy(rng, trans, shape):
    from scipy.linalg import solve_triangular

    from sklearn_lvgp._core.blas_numba import DTRSM, trsm_left

    m, n = shape
    L = np.asfortranarray(np.linalg.cholesky(_spd(rng, m)))
    B = np.asfortranarray(rng.standard_normal((m, n)))
    expected = solve_triangular(L, B, lower=True, trans=1 if trans else 0)
    trsm_left(DTRSM, L, B, trans)
    np.testing.assert_allclose(B, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(40, 6), (7, 1), (1, 5), (0, 3)])
def test_gram_from_jitted_code_equals_numpy(rng, shape):
    """``dsyrk`` from jitted code gives ``A.T @ A``, both triangles, also for an empty ``A``."""
    import numba

    from sklearn_lvgp._core.blas_numba import DSYRK, gram_inlined

    @numba.njit
    def gram(fn, A):
        C = np.full((A.shape[1], A.shape[1]), np.nan)
        gram_inlined(fn, A, C)
        return C

    A = rng.standard_normal(shape)
    np.testing.assert_allclose(gram(DSYRK, A), A.T @ A, rtol=1e-13, atol=1e-13)
