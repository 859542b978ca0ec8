"""Dense linear algebra shared by every model: the only module that imports ``scipy.linalg``.

Cholesky with jitter escalation, triangular solves, log-determinants and the backward passes of
Cholesky and triangular solves (used by the uncollapsed bounds).
"""

import functools

import numpy as np
from scipy import linalg as sla

from .blas_numba import DPOTRF, DTRMM, DTRSM, potrf_lower, triangular_inplace
from .warn import warn as _warn

__all__ = [
    "settled_jitter",
    "CholeskyError",
    "JitterWarning",
    "cholesky_jitter",
    "cho_solve",
    "solve_lower",
    "solve_upper",
    "logdet_from_chol",
    "symmetrise",
    "tril",
    "tril_indices",
    "cholesky_vjp",
    "solve_lower_vjp",
]


class CholeskyError(np.linalg.LinAlgError):
    """A matrix stayed non positive definite after the allowed jitter escalation."""


class JitterWarning(UserWarning):
    """Jitter larger than the requested one had to be added to make a matrix positive definite."""


def cholesky_jitter(A, jitter=1e-6, max_tries=5, name="K", parameter="jitter", increase=True,
                    warn=True):
    """Lower Cholesky factor of ``A + jitter * mean(diag(A)) * I`` with escalation.

    The requested jitter (relative to the mean diagonal) is always added first. If that fails, the
    jitter is multiplied by 10 up to ``max_tries`` times, warning each time with the amount used.

    Parameters
    ----------
    A : ndarray of shape (M, M)
        Symmetric matrix. Not modified.
    jitter : float, default=1e-6
        Relative jitter added to the diagonal before the first attempt.
    max_tries : int, default=5
        Number of tenfold escalations before giving up.
    name : str, default="K"
        Name of the matrix, used in warnings and errors.
    parameter : str, default="jitter"
        The estimator parameter a user should change, named in the error.
    increase : bool, default=True
        Whether the error advises raising ``parameter`` (jitter) or lowering it (a step size
        such as ``natgrad_gamma``).
    warn : bool, default=True
        Whether to emit :class:`JitterWarning` on escalation.

    Returns
    -------
    L : ndarray of shape (M, M)
        Lower-triangular factor.
    used_jitter : float
        Absolute jitter added to the diagonal.

    Raises
    ------
    CholeskyError
        If ``A`` has non-finite entries or is still not positive definite after escalation.
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {A.shape}.")
    A = np.asfortranarray(A)  # one layout: LAPACK's, and one compilation of potrf_lower
    rel = float(jitter)
    for attempt in range(max_tries + 1):
        # one jitted call: copy, jitter, LAPACK potrf and the finiteness checks (at small M,
        # several times cheaper than scipy's ``lapack.dpotrf`` plus numpy checks from Python)
        L, status, scale = potrf_lower(DPOTRF, A, rel)
        if status == 2:
            raise CholeskyError(
                f"{name} contains NaN or inf entries; the model parameters have diverged "
                "(try a larger noise_variance_init or a smaller learning rate)."
            )
        if status == 0:
            if attempt > 0 and warn:
                _warn(
                    f"{name} was not positive definite with relative jitter {jitter:g}; "
                    f"succeeded with relative jitter {rel:.1e} (absolute {rel * scale:.2e}); "
                    f"if this recurs, change `{parameter}`.",
                    JitterWarning,
                )
            return L, rel * scale
        rel = max(rel, 1e-12) * 10.0
        if attempt < max_tries and warn and attempt > 0:
            _warn(
                f"{name} not positive definite; escalating relative jitter to {rel:.1e}.",
                JitterWarning,
            )
    raise CholeskyError(
        f"{name} is not positive definite even with relative jitter {rel / 10:.1e} "
        f"after {max_tries} escalations. {'Increase' if increase else 'Lower'} `{parameter}`, "
        "use fewer or better-spread inducing points, or a larger noise variance."
    )


def settled_jitter(Kuu, jitter, name="K_uu", scale=None):
    """The relative jitter a fit uses throughout, settled once at its starting point.

    :func:`cholesky_jitter` is tried on the initial ``Kuu`` (escalating with a warning if it
    has to); the fit then keeps the larger of the requested and the needed relative jitter, so
    every later evaluation factorises the same regularised matrix.

    Parameters
    ----------
    Kuu : ndarray of shape (M, M)
        The inducing-point covariance at the starting point.
    jitter : float
        Requested jitter, relative to ``scale``.
    name : str, default="K_uu"
        Matrix name for the warnings and the error.
    scale : float or None, default=None
        What the jitter is relative to; ``None`` is the mean diagonal of ``Kuu``.

    Returns
    -------
    jitter : float
        The relative jitter to use.
    """
    _, absolute = cholesky_jitter(Kuu, jitter, max_tries=6, name=name)
    scale = float(np.mean(np.diag(Kuu))) if scale is None else float(scale)
    return max(float(jitter), absolute / scale if scale > 0 else 0.0)


def solve_lower(L, B):
    """Solve ``L X = B`` for lower-triangular ``L``; ``B`` of shape (M,) or (M, K)."""
    return _solve_triangular(L, B, trans=False)


def solve_upper(L, B):
    """Solve ``L^T X = B`` for lower-triangular ``L``; ``B`` of shape (M,) or (M, K)."""
    return _solve_triangular(L, B, trans=True)


def _solve_triangular(L, B, trans):
    """BLAS ``trsm`` behind :func:`solve_lower`/:func:`solve_upper` (``B`` is not modified).

    The same arithmetic as LAPACK's ``trtrs`` (a zero-pivot check, then ``trsm``) without
    scipy's per-call argument handling, which costs more than the solve itself on the small
    ``(M, M)`` systems of the collapsed bounds.
    """
    if not np.all(np.diagonal(L)):
        raise np.linalg.LinAlgError("singular triangular matrix: zero on the diagonal.")
    B = np.asarray(B, dtype=np.float64)
    if B.ndim == 1:
        return _triangular_blas(DTRSM, 1.0, L, B[:, None], trans, False)[:, 0]
    return _triangular_blas(DTRSM, 1.0, L, B, trans, False)


def _triangular_blas(routine, alpha, L, B, trans, overwrite_b):
    """``routine`` (:data:`DTRMM`/:data:`DTRSM`) with lower ``L`` on the side that keeps ``B``'s
    layout.

    An F-contiguous ``B`` is used from the left; a C-contiguous one from the right on its
    transposed (F-contiguous) view, ``(op(L) B)^T = B^T op(L)^T``, so neither is copied beyond
    the output. The BLAS call is made from jitted code and releases the GIL, so the chunk
    engine's threads run these solves concurrently (scipy's Python-level BLAS wrappers hold it).
    """
    B = np.asarray(B, dtype=np.float64)
    if B.ndim != 2 or not (B.flags.f_contiguous or B.flags.c_contiguous):
        B = np.ascontiguousarray(B)
    Lf = np.asfortranarray(L, dtype=np.float64)
    if B.flags.f_contiguous:
        out = B if overwrite_b and B.flags.writeable else B.copy(order="F")
        triangular_inplace(routine, Lf, out, False, bool(trans), float(alpha))
        return out
    out = B if overwrite_b and B.flags.writeable else B.copy(order="C")
    triangular_inplace(routine, Lf, out.T, True, not trans, float(alpha))
    return out


def lower_matmul(L, B, alpha=1.0, trans=False, overwrite_b=False):
    """``alpha * tril(L) @ B`` (or ``alpha * tril(L)^T @ B`` with ``trans``) by BLAS ``trmm``.

    Half the flops of a general product; the strict upper triangle of ``L`` is ignored, so a
    square root stored with junk above the diagonal needs no ``np.tril`` copy. The result has
    the memory layout of ``B`` (``overwrite_b`` lets BLAS overwrite a contiguous ``B``).
    """
    return _triangular_blas(DTRMM, alpha, L, B, trans, overwrite_b)


def lower_solve(L, B, trans=False, overwrite_b=False):
    """``tril(L)^{-1} B`` (or ``tril(L)^{-T} B`` with ``trans``) by BLAS ``trsm``, layout kept.

    A C-contiguous ``B`` (the layout of kernel matrices here) is solved from the right on its
    transposed view, so no copy is made; on an ``(M, P)`` block with ``P >> M`` that is also the
    faster ``trsm`` variant.
    """
    return _triangular_blas(DTRSM, 1.0, L, B, trans, overwrite_b)


def cho_solve(L, B):
    """Solve ``(L L^T) X = B`` given the lower Cholesky factor ``L``."""
    return sla.cho_solve((L, True), B, check_finite=False)


def logdet_from_chol(L):
    """``log|L L^T|`` from the diagonal of the Cholesky factor."""
    return 2.0 * float(np.sum(np.log(np.diag(L))))


def symmetrise(A):
    """Symmetric part ``(A + A^T) / 2`` over the last two axes, C-contiguous."""
    return np.ascontiguousarray(0.5 * (A + np.swapaxes(A, -1, -2)))


@functools.lru_cache(maxsize=32)
def _lower_mask(n, m):
    mask = np.tri(n, m, dtype=bool)
    mask.flags.writeable = False
    return mask


def tril(A):
    """``np.tril(A)`` over the last two axes, with the triangle's mask built once per shape.

    ``np.tril`` builds its ``(n, m)`` mask on every call, which costs several times the copy on
    the ``(M, M)`` matrices of a training step; the result is the same array.
    """
    A = np.asarray(A)
    return np.where(_lower_mask(*A.shape[-2:]), A, A.dtype.type(0))


@functools.lru_cache(maxsize=32)
def tril_indices(M):
    """``np.tril_indices(M)``, built once per ``M`` (read-only arrays)."""
    r, c = np.tril_indices(M)
    r.flags.writeable = False
    c.flags.writeable = False
    return r, c


def _phi(A):
    """Lower triangle of ``A`` with the diagonal halved (Murray 2016, eq. 10)."""
    out = tril(A)
    out[np.diag_indices_from(out)] *= 0.5
    return out


def cholesky_vjp(L, dL_dL):
    """Backward pass of ``L = chol(A)``: adjoint of the symmetric input ``A``.

    Uses the symbolic form ``dA = Φ*(L^{-T} Φ(L^T dL) L^{-1})`` symmetrised, where only the lower
    triangle of ``dL_dL`` is meaningful (Murray 2016, "Differentiation of the Cholesky
    decomposition", eq. 10).

    Parameters
    ----------
    L : ndarray of shape (M, M)
        Lower Cholesky factor from the forward pass.
    dL_dL : ndarray of shape (M, M)
        Adjoint of ``L``.

    Returns
    -------
    dL_dA : ndarray of shape (M, M)
        Symmetric adjoint of ``A``.
    """
    P = _phi(L.T @ tril(dL_dL))
    S = solve_upper(L, solve_upper(L, P.T).T)
    return symmetrise(S)


def solve_lower_vjp(L, X, dL_dX, overwrite_dX=False):
    """Backward pass of ``X = L^{-1} B`` for lower-triangular ``L``.

    ``overwrite_dX`` lets the solve write ``dL_dB`` over a C-contiguous ``dL_dX``.

    Returns
    -------
    dL_dL : ndarray
        Adjoint of ``L`` (lower triangle).
    dL_dB : ndarray
        Adjoint of ``B``.
    """
    dB = lower_solve(L, dL_dX, trans=True, overwrite_b=overwrite_dX)
    dLmat = -tril(dB @ X.T)
    return dLmat, dB
