"""BLAS ``dtrsm`` callable from jitted code, for the small dense algebra of the collapsed bounds.

numba's own ``np.dot`` reaches BLAS, but it has no triangular solve, and a Python-level BLAS call
costs 5–7 µs of argument handling against well under a microsecond of arithmetic on the (M, M)
and (M, D) systems (M in the tens) of a collapsed bound. The routine is scipy's
``scipy.linalg.cython_blas.dtrsm``, reached through its exported C address.

The routine is passed to jitted functions as an **argument** (:data:`DTRSM`), not read as a global:
numba cannot cache a function that embeds a ctypes pointer as a constant (the address changes
between processes), while an argument's address is a run-time value and the function caches.

Every matrix handed to :func:`trsm_left` is F-contiguous (BLAS's column-major layout); the helpers
that use it allocate their work arrays that way.
"""

import ctypes

import numba as nb
import numpy as np
from numba.extending import get_cython_function_address

__all__ = ["DTRSM", "trsm_left"]

_VOID = ctypes.c_void_p
#: ``dtrsm(side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb)``; every argument a pointer.
DTRSM = ctypes.CFUNCTYPE(None, *([_VOID] * 11))(
    get_cython_function_address("scipy.linalg.cython_blas", "dtrsm"))

_LEFT, _LOWER, _NO, _TRANS = 76, 76, 78, 84  # 'L', 'L', 'N', 'T'


@nb.njit(cache=True)
def trsm_left(fn, L, B, trans):
    """Overwrite the F-contiguous ``B`` (m, n) with ``L^-1 B`` (or ``L^-T B`` when ``trans``).

    Parameters
    ----------
    fn : ctypes function
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
    flags = np.array([_LEFT, _LOWER, _TRANS if trans else _NO, _NO], dtype=np.uint8)
    dims = np.array([m, n], dtype=np.int32)
    one = np.ones(1)
    fn(flags[0:].ctypes, flags[1:].ctypes, flags[2:].ctypes, flags[3:].ctypes,
       dims[0:].ctypes, dims[1:].ctypes, one.ctypes, L.ctypes, dims[0:].ctypes,
       B.ctypes, dims[0:].ctypes)
