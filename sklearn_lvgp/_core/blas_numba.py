"""BLAS ``dtrsm`` and LAPACK ``dpotrf`` callable from jitted code, for the small dense algebra of
the collapsed bounds.

numba's own ``np.dot`` reaches BLAS, but it has no triangular solve, and a Python-level BLAS call
costs several times more in argument handling than the arithmetic of the (M, M) and (M, D)
systems (M in the tens) of a collapsed bound. The routines are scipy's
``scipy.linalg.cython_blas.dtrsm`` and ``scipy.linalg.cython_lapack.dpotrf``, reached through
their exported C addresses.

An address is passed to jitted functions as an **argument** (:data:`DTRSM`, :data:`DPOTRF`, plain
integers), not read as a global: numba cannot cache a function that embeds an address as a
constant (it changes between processes), while an argument is a run-time value and the function
caches. It is an integer rather than a ctypes function object because numba types a ctypes
argument anew on every call, several times the cost of an array argument; :func:`call_address`
turns the integer back into a call.

Every matrix handed to :func:`trsm_left` or :func:`potrf_lower` is F-contiguous (BLAS's
column-major layout); the helpers that use them allocate their work arrays that way.
"""

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import get_cython_function_address, intrinsic

__all__ = ["DPOTRF", "DSYRK", "DTRMM", "DTRSM", "call_address", "gram_inlined", "potrf_lower",
           "triangular_inplace", "triangular_inplace_inlined", "trsm_left"]

#: ``dtrsm(side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb)``; every argument a pointer.
DTRSM = get_cython_function_address("scipy.linalg.cython_blas", "dtrsm")
#: ``dtrmm(side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb)``; every argument a pointer.
DTRMM = get_cython_function_address("scipy.linalg.cython_blas", "dtrmm")
#: ``dsyrk(uplo, trans, n, k, alpha, a, lda, beta, c, ldc)``; every argument a pointer.
DSYRK = get_cython_function_address("scipy.linalg.cython_blas", "dsyrk")
#: ``dpotrf(uplo, n, a, lda, info)``; every argument a pointer.
DPOTRF = get_cython_function_address("scipy.linalg.cython_lapack", "dpotrf")

_LEFT, _LOWER, _NO, _TRANS, _RIGHT = 76, 76, 78, 84, 82  # 'L', 'L', 'N', 'T', 'R'


@intrinsic
def call_address(typingctx, address, arrays):
    """Call the C function ``void f(void *, ...)`` at ``address`` with the data pointers of
    ``arrays`` (a tuple of arrays; a view's pointer is its first element). Jitted code only.

    The Fortran-style BLAS and LAPACK routines of scipy's Cython modules take every argument by
    pointer, so their calls are of this one shape.
    """
    if not isinstance(address, types.Integer) or not isinstance(arrays, types.BaseTuple):
        return None
    if not all(isinstance(a, types.Array) for a in arrays):
        return None
    sig = types.void(address, arrays)

    def codegen(context, builder, signature, args):
        addr, tup = args
        byte_ptr = ir.IntType(8).as_pointer()
        ptrs = []
        for i, aty in enumerate(signature.args[1]):
            arr = context.make_array(aty)(context, builder, builder.extract_value(tup, i))
            ptrs.append(builder.bitcast(arr.data, byte_ptr))
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr] * len(ptrs))
        builder.call(builder.inttoptr(addr, fnty.as_pointer()), ptrs)
        return context.get_dummy_value()

    return sig, codegen


@nb.njit(inline="always")
def _flags(a, b, c, d):
    """The four BLAS character flags as a uint8 array (filled element by element: building it
    from a list compiles numba's list machinery into every caller)."""
    out = np.empty(4, dtype=np.uint8)
    out[0], out[1], out[2], out[3] = a, b, c, d
    return out


@nb.njit(inline="always")
def _ints(m, n, k=0):
    """``[m, n, k]`` as an int32 array, for BLAS/LAPACK dimension arguments passed by pointer."""
    out = np.empty(3, dtype=np.int32)
    out[0], out[1], out[2] = m, n, k
    return out


@nb.njit(cache=True, nogil=True)
def trsm_left(fn, L, B, trans):
    """Overwrite the F-contiguous ``B`` (m, n) with ``L^-1 B`` (or ``L^-T B`` when ``trans``).

    Parameters
    ----------
    fn : int
        :data:`DTRSM`.
    L : ndarray of shape (m, m), F-contiguous
        Lower-triangular factor (its strict upper triangle is not read).
    B : ndarray of shape (m, n), F-contiguous
        Right-hand sides, overwritten by the solution.
    trans : bool
        Solve with ``L^T`` instead of ``L``.
    """
    m, n = B.shape
    if m == 0 or n == 0:
        return
    flags = _flags(_LEFT, _LOWER, _TRANS if trans else _NO, _NO)
    dims = _ints(m, n)
    one = np.empty(1)
    one[0] = 1.0
    call_address(fn, (flags[0:], flags[1:], flags[2:], flags[3:], dims[0:], dims[1:], one, L,
                      dims[0:], B, dims[0:]))


@nb.njit(cache=True, nogil=True)
def potrf_lower(fn, A, rel):
    """Lower Cholesky factor of ``A + rel * mean(diag(A)) * I`` by LAPACK ``dpotrf``.

    Parameters
    ----------
    fn : int
        :data:`DPOTRF`.
    A : ndarray of shape (m, m)
        Symmetric matrix; only its lower triangle is read. Not modified.
    rel : float
        Jitter relative to the mean diagonal (a non-finite or non-positive mean counts as 1).

    Returns
    -------
    L : ndarray of shape (m, m), F-contiguous
        The factor, zero above the diagonal (meaningful only when ``status == 0``).
    status : int
        0: factorised, every entry finite; 1: not numerically positive definite (or a
        non-finite factor); 2: ``A`` has a non-finite entry (nothing was factorised).
    scale : float
        The mean diagonal the jitter was scaled by; the absolute jitter is ``rel * scale``.
    """
    m = A.shape[0]
    L = np.empty((m, m)).T
    trace = 0.0
    for j in range(m):
        for i in range(m):
            v = A[i, j]
            if not np.isfinite(v):
                return L, 2, 1.0
            L[i, j] = v if i >= j else 0.0
        trace += A[j, j]
    scale = trace / m if m else 1.0
    if not np.isfinite(scale) or scale <= 0.0:
        scale = 1.0
    if m == 0:
        return L, 0, scale
    add = rel * scale
    for j in range(m):
        L[j, j] += add
    uplo = _flags(_LOWER, _LOWER, _LOWER, _LOWER)[0:1]
    dims = _ints(m, 0)  # n, then LAPACK's info
    call_address(fn, (uplo, dims[0:], L, dims[0:], dims[1:]))
    if dims[1] != 0:
        return L, 1, scale
    for j in range(m):
        for i in range(j, m):
            if not np.isfinite(L[i, j]):
                return L, 1, scale
    return L, 0, scale


@nb.njit(cache=True, nogil=True)
def triangular_inplace(fn, L, B, right, trans, alpha):
    """Overwrite the F-contiguous ``B`` (m, n) with ``alpha op(L) B`` or ``alpha B op(L)``.

    ``fn`` is :data:`DTRMM` (product) or :data:`DTRSM` (solve); ``L`` is an F-contiguous
    lower-triangular matrix (its strict upper triangle is not read), ``op`` the transpose when
    ``trans``, and ``right`` puts ``L`` on the right. The call releases the GIL.
    """
    m, n = B.shape
    if m == 0 or n == 0:
        return
    flags = _flags(_RIGHT if right else _LEFT, _LOWER, _TRANS if trans else _NO, _NO)
    dims = _ints(m, n, L.shape[0])
    a = np.empty(1)
    a[0] = alpha
    call_address(fn, (flags[0:], flags[1:], flags[2:], flags[3:], dims[0:], dims[1:], a, L,
                      dims[2:], B, dims[0:]))


#: :func:`triangular_inplace` for jitted callers, inlined into them: called from jitted code with
#: constant flags, the dispatcher would compile a variant per literal flag value.
triangular_inplace_inlined = nb.njit(inline="always")(triangular_inplace.py_func)


@nb.njit(inline="always")
def gram_inlined(fn, A, C):
    """``C = AᵀA`` for a C-contiguous ``A`` (n, M) into the C-contiguous ``C`` (M, M).

    ``fn`` is :data:`DSYRK`. In BLAS's column-major layout ``A`` is the (M, n) matrix ``Aᵀ``, so
    one ``dsyrk`` (half the products of a general matrix product, as numpy's ``A.T @ A``
    does) fills one triangle, which is then mirrored. Inlined into its jitted callers.
    """
    n, M = A.shape
    if M == 0:
        return
    if n == 0:
        C[:, :] = 0.0
        return
    flags = _flags(_LOWER, _NO, _NO, _NO)
    dims = _ints(M, n)
    ab = np.empty(2)
    ab[0], ab[1] = 1.0, 0.0
    call_address(fn, (flags[0:], flags[1:], dims[0:], dims[1:], ab[0:], A, dims[0:], ab[1:], C,
                      dims[0:]))
    for i in range(M):  # column-major lower = row-major upper: C[i, j] for j >= i
        for j in range(i + 1, M):
            C[j, i] = C[i, j]
