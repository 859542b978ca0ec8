"""``exp`` and ``log1p`` for jitted loops that LLVM can vectorise, and the fused multiply-add and
vector-width mark they are used with.

numba lowers ``np.exp`` in a jitted loop to a scalar call into the C library, which LLVM cannot
vectorise without Intel's SVML (not a dependency). On this project's hot loops (kernel matrices,
Ψ-statistics) that call costs several times the rest of the arithmetic. :func:`vexp` is plain
arithmetic instead, so a loop over a contiguous axis that calls it is vectorised. It is an
ordinary jitted function, compiled and cached once: LLVM inlines it into each calling loop
when it optimises the caller, so the loop still vectorises, while numba types and lowers it
only once (``doc/developers.rst``, "Compile cost").

Method: Cody–Waite reduction ``x = k ln 2 + r`` with ``|r| <= ln(2)/2`` (``k`` rounded by the
``1.5 * 2**52`` shift), the degree-12 Taylor polynomial of ``exp(r)`` in Horner form (truncation
below ``2e-16`` relative), and ``2**k`` built from exponent bits in two halves so that
subnormal results and overflow come out right. Every multiply-add is an explicit fused one
(:func:`fma`, LLVM's ``llvm.fma``), so the result is the same in the vectorised body and the scalar
remainder of a loop, and for any thread count. Accuracy against numpy's ``exp``: at most
``3.2e-16`` relative over ``[-745, 710]``, bit-equal on ``0``, ``±inf``, overflow and underflow
to zero; NaN propagates.

``vlog1p`` is ``log1p`` in the same style (bits of ``1 + x``, an ``atanh`` series and a
correction for the rounding of ``1 + x``; within one unit in the last place of numpy's).

Vector width: :func:`wide_vectors` marks the jitted function that calls it to prefer 512-bit
vectors. LLVM's tuning for recent Intel server cores (Skylake-SP onwards) keeps loops at 256 bits
although AVX-512 is there; for the exp-bound loops over long rows twice the width is worth it
(``doc/developers.rst``, "512-bit vectors"). A loop over rows of about 20 (Ψ1, kernel matrices at
M = 20) gets slower instead, because LLVM then runs all of it in the scalar
remainder: mark only functions whose vectorised loops are long (or make them long, as
``rbf_psi1`` does with one ``exp`` pass over whole rows). Each element's arithmetic is the same
at any width (explicit fused multiply-adds, no fast-math), so results are bit-identical. On a
CPU without AVX-512 the mark changes nothing.
"""

import math

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

__all__ = ["fma", "vexp", "vlog1p", "wide_vectors"]


@intrinsic
def fma(typingctx, a, b, c):
    """``a * b + c`` with one rounding (LLVM ``llvm.fma.f64``); jitted code only."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [d], ir.FunctionType(d, [d, d, d]))
        return builder.call(fn, args)

    return sig, codegen


#: LLVM function attribute (clang's ``-mprefer-vector-width=512``), as emitted in the IR.
_WIDE_VECTORS = '"prefer-vector-width"="512"'


@intrinsic
def wide_vectors(typingctx):
    """Mark the jitted function that calls this to prefer 512-bit vectors; emits no code.

    The mark is an LLVM function attribute on the function being compiled. A ``prange`` body
    is compiled as a function of its own, so call this inside the loop. llvmlite only lists
    attributes without a value, so the attribute string is added to the function's attribute
    set directly; should that ever fail, the function compiles without the mark.
    """
    sig = types.none()

    def codegen(context, builder, signature, args):
        try:
            set.add(builder.function.attributes, _WIDE_VECTORS)
        except (AttributeError, TypeError):  # pragma: no cover - a different llvmlite
            pass
        return context.get_dummy_value()

    return sig, codegen


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 split so that k * _LN2_HI is exact for |k| < 2**11
_LN2_LO = 1.90821492927058770002e-10
_SHIFT = 6755399441055744.0  # 1.5 * 2**52: adding it rounds to an integer kept in the low bits
_SHIFT_BITS = int(np.float64(_SHIFT).view(np.int64))
_C = tuple(1.0 / math.factorial(i) for i in range(13))
_C0, _C1, _C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9, _C10, _C11, _C12 = _C


@nb.njit(cache=True, nogil=True)
def vexp(x):
    """``exp(x)`` for float64 ``x`` in branch-free arithmetic (see the module docstring)."""
    y = min(max(x, -746.0), 710.0)  # outside: exact 0 / inf after the scaling below
    t = fma(y, _LOG2E, _SHIFT)
    k = t - _SHIFT
    ki = np.float64(t).view(np.int64) - _SHIFT_BITS
    r = fma(k, -_LN2_LO, fma(k, -_LN2_HI, y))
    p = fma(r, _C12, _C11)
    p = fma(r, p, _C10)
    p = fma(r, p, _C9)
    p = fma(r, p, _C8)
    p = fma(r, p, _C7)
    p = fma(r, p, _C6)
    p = fma(r, p, _C5)
    p = fma(r, p, _C4)
    p = fma(r, p, _C3)
    p = fma(r, p, _C2)
    p = fma(r, p, _C1)
    p = fma(r, p, _C0)
    k1 = ki >> 1
    s1 = np.int64((k1 + 1023) << 52).view(np.float64)
    s2 = np.int64((ki - k1 + 1023) << 52).view(np.float64)
    res = p * s1 * s2
    return res if x == x else x


_SQRT2 = 1.4142135623730951
_MANTISSA = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000
#: ``1 / (2k + 1)``, k = 1..10: the series ``2 atanh(s) = 2s (1 + s²/3 + s⁴/5 + ...)`` cut where
#: ``s^20 / 21 < 2**-53`` for ``|s| <= 3 - 2 sqrt(2)``.
_A = tuple(1.0 / (2 * k + 1) for k in range(1, 11))
_A1, _A2, _A3, _A4, _A5, _A6, _A7, _A8, _A9, _A10 = _A


@nb.njit(inline="always")
def vlog1p(x):
    """``log1p(x)`` for float64 ``x >= -1`` in branch-free arithmetic that LLVM can vectorise.

    ``u = 1 + x`` (rounded) is split as ``2**e m`` with ``m`` in ``[sqrt(1/2), sqrt(2))`` from
    its bits; ``log(m) = 2 atanh(s)`` with ``s = f / (2 + f)``, ``f = m - 1`` (exact), written
    as ``f - s (f - 2 s² P(s²))`` so that its leading term is exact; ``(x - (u - 1)) / u``
    restores what the rounding of ``1 + x`` lost. Within one unit in the last place of numpy's
    ``log1p`` (tests); ``-1`` gives ``-inf``, below ``-1`` NaN; ``±0``, ``inf`` and NaN pass
    through. A caller compiled with numba's default ``error_model="python"`` checks the
    divisions for zero, which keeps its loop from vectorising: use ``error_model="numpy"``.
    """
    u = 1.0 + x
    if not u > 0.0:  # -1, below, NaN: answered at the end; no division by zero on the way
        u = 1.0
    corr = (x - (u - 1.0)) / u
    bits = np.float64(u).view(np.int64)
    e = (bits >> 52) - 1023
    m = np.int64((bits & _MANTISSA) | _ONE_BITS).view(np.float64)
    big = m > _SQRT2
    m = 0.5 * m if big else m
    e = e + 1 if big else e
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    q = fma(z, _A10, _A9)
    q = fma(z, q, _A8)
    q = fma(z, q, _A7)
    q = fma(z, q, _A6)
    q = fma(z, q, _A5)
    q = fma(z, q, _A4)
    q = fma(z, q, _A3)
    q = fma(z, q, _A2)
    q = fma(z, q, _A1)
    log_m = fma(-s, fma(-2.0 * z, q, f), f)
    k = np.float64(e)
    res = fma(k, _LN2_HI, fma(k, _LN2_LO, log_m) + corr)
    if x == 0.0 or not x < np.inf:  # ±0 (sign kept), inf, NaN
        res = x
    if x <= -1.0:
        res = -np.inf if x == -1.0 else np.nan
    return res
