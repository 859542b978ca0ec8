"""``_compile.vexp_numba.vexp`` and ``vlog1p`` against numpy: accuracy, special values,
determinism."""

import numba
import numpy as np
import pytest

from sklearn_lvgp._compile.vexp_numba import fma, vexp, vlog1p, wide_vectors


@numba.njit(cache=False)
def _vexp_array(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = vexp(x[i])
    return out


@numba.njit(cache=False, parallel=True)
def _vexp_array_parallel(x):
    out = np.empty_like(x)
    for i in numba.prange(x.size):
        out[i] = vexp(x[i])
    return out


@numba.njit(cache=False)
def _fma(a, b, c):
    return fma(a, b, c)


@pytest.mark.parametrize("lo, hi", [(-0.35, 0.35), (-1.0, 1.0), (-40.0, 5.0),
                                    (-708.0, 709.0), (-745.0, -700.0)])
def test_vexp_matches_numpy_to_two_ulp(lo, hi):
    x = np.random.RandomState(0).uniform(lo, hi, 200_000)
    ref = np.exp(x)
    out = _vexp_array(x)
    normal = ref >= np.finfo(float).tiny
    np.testing.assert_allclose(out[normal], ref[normal], rtol=4.5e-16, atol=0)
    # subnormal results: within one unit of the smallest subnormal
    assert np.all(np.abs(out[~normal] - ref[~normal]) <= 5e-324)


def test_vexp_special_values_are_exactly_numpys():
    x = np.array([0.0, -0.0, np.inf, -np.inf, 709.78, 709.79, 800.0, -745.13, -745.14, -1e300,
                  1e300, np.log(2.0), 1.0])
    with np.errstate(over="ignore"):
        ref = np.exp(x)
    out = _vexp_array(x)
    np.testing.assert_array_equal(out[:9], ref[:9])
    assert out[9] == 0.0 and out[10] == np.inf
    np.testing.assert_allclose(out[11:], ref[11:], rtol=4.5e-16)
    assert _vexp_array(np.array([0.0]))[0] == 1.0


def test_vexp_propagates_nan():
    out = _vexp_array(np.array([np.nan, 1.0, -np.nan]))
    assert np.isnan(out[0]) and np.isnan(out[2]) and np.isfinite(out[1])


def test_vexp_is_the_same_in_vector_body_remainder_and_threads():
    # 1003 elements: a vectorised body plus a scalar remainder; the parallel loop splits it again
    x = np.random.RandomState(1).uniform(-30.0, 3.0, 1003)
    serial = _vexp_array(x)
    parallel = _vexp_array_parallel(x)
    np.testing.assert_array_equal(serial, parallel)
    # element by element (always the scalar path) equals the loop
    one_by_one = np.array([_vexp_array(x[i:i + 1])[0] for i in range(x.size)])
    np.testing.assert_array_equal(serial, one_by_one)


def test_fma_rounds_once():
    # (1 + 2^-30)^2 - 1 = 2^-29 + 2^-60: the unfused product loses the 2^-60 term
    a = 1.0 + 2.0 ** -30
    assert _fma(a, a, -1.0) == 2.0 ** -29 + 2.0 ** -60
    assert a * a - 1.0 == 2.0 ** -29


def _host_has_avx512():
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_features().get("avx512f", False)


@numba.njit(cache=False, error_model="numpy")
def _vlog1p_array(x):
    wide_vectors()
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = vlog1p(x[i])
    return out


@pytest.mark.parametrize("lo, hi", [(0.0, 1e-12), (0.0, 1e-3), (0.0, 0.5), (0.0, 10.0),
                                    (0.0, 1e6), (-0.999, 0.0)])
def test_vlog1p_matches_numpy_to_one_ulp(lo, hi):
    x = np.random.RandomState(3).uniform(lo, hi, 200_000)
    ref = np.log1p(x)
    out = _vlog1p_array(x)
    assert np.all(np.abs(out - ref) <= np.spacing(np.abs(ref)))


def test_vlog1p_over_the_whole_positive_range():
    x = np.exp(np.random.RandomState(4).uniform(-740.0, 709.0, 200_000))
    ref = np.log1p(x)
    assert np.all(np.abs(_vlog1p_array(x) - ref) <= np.spacing(np.abs(ref)))


def test_vlog1p_special_values():
    x = np.array([0.0, -0.0, np.inf, np.nan, -1.0, -2.0, 5e-324, 1.7e308])
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.log1p(x)
    out = _vlog1p_array(x)
    np.testing.assert_array_equal(out, ref)
    assert np.signbit(out[1]) == np.signbit(ref[1])


def test_vlog1p_is_the_same_in_vector_body_and_remainder():
    x = np.random.RandomState(5).uniform(0.0, 3.0, 1003)
    whole = _vlog1p_array(x)
    one_by_one = np.array([_vlog1p_array(x[i:i + 1])[0] for i in range(x.size)])
    np.testing.assert_array_equal(whole, one_by_one)


@numba.njit(cache=False, parallel=True, error_model="numpy")
def _vlog1p_array_parallel(x):
    out = np.empty_like(x)
    for i in numba.prange(x.size):
        wide_vectors()
        out[i] = vlog1p(x[i])
    return out


def test_wide_vectors_marks_the_function_and_changes_no_bits():
    x = np.random.RandomState(6).uniform(0.0, 30.0, 4099)
    serial = _vlog1p_array(x)
    assert '"prefer-vector-width"="512"' in "".join(_vlog1p_array.inspect_llvm().values())
    np.testing.assert_array_equal(_vlog1p_array_parallel(x), serial)
    if not _host_has_avx512():
        pytest.skip("no AVX-512 on this CPU: the mark changes nothing here")
    assert "zmm" in "".join(_vlog1p_array.inspect_asm().values())
    # a prange body is compiled as a function of its own; the mark inside it reaches it
    assert "zmm" in "".join(_vlog1p_array_parallel.inspect_asm().values())
