"""The per-output loops of an SVGP layer's marginals and their backward pass, one jitted call each.

For the ``D`` outputs of a layer sharing ``A = L_u⁻¹ K_uf`` (whitened; ``L_u⁻ᵀ`` of it otherwise)
the marginal variances are ``var_d = base + colsum(B_d ∘ B_d)`` with ``B_d = L_dᵀ A``
(Salimbeni 2020, eq. 1.29), and their backward pass gives, per output, ``∂L/∂L_d =
2 tril(A (B_d ∘ dv_d)ᵀ)`` and adds ``2 L_d (B_d ∘ dv_d)`` to ``∂L/∂A``. Written in Python these
loops are a handful of numpy and BLAS calls per output, each holding the GIL for its argument
handling; here each loop is one call that releases it, so the chunk engine's threads share no
Python glue there. The triangular products are the same BLAS ``trmm`` calls, with the same
arguments, as :func:`~sklearn_lvgp._core.linalg.lower_matmul` makes.

Arrays: ``A``, ``B_d`` and the scratch are (M, P) C-contiguous; ``Lf[d]`` is the C-contiguous
transpose of ``L_d`` (so ``Lf[d].T`` is ``L_d`` in BLAS's column-major layout).
"""

import numba as nb
import numpy as np

from .._core.blas_numba import triangular_inplace_inlined

__all__ = ["output_variances", "output_variances_vjp"]


@nb.njit(inline="always")
def _lower_t_times(trmm, Lf_d, A, B):
    """``B = L_dᵀ A`` (B and A are (M, P) C-contiguous; ``trmm`` on the transposed views)."""
    M, P = A.shape
    for m in range(M):
        for p in range(P):
            B[m, p] = A[m, p]
    triangular_inplace_inlined(trmm, Lf_d.T, B.T, True, False, 1.0)


@nb.njit(cache=True, nogil=True)
def output_variances(trmm, Lf, A, base, Bs, var):
    """Write ``var[:, d] = base + colsum(B_d ∘ B_d)`` for every output ``d``.

    Parameters
    ----------
    trmm : int
        Address of BLAS ``dtrmm`` (:data:`~sklearn_lvgp._core.blas_numba.DTRMM`).
    Lf : ndarray of shape (D, M, M)
        ``Lf[d] = L_dᵀ`` (C-contiguous).
    A : ndarray of shape (M, P)
    base : ndarray of shape (P,)
        ``k(h, h) − colsum(A₁ ∘ A₁)``.
    Bs : ndarray of shape (D, M, P) or (1, M, P)
        Receives every ``B_d`` (kept for the backward pass), or is one scratch buffer.
    var : ndarray of shape (P, D)
        Output.
    """
    D = Lf.shape[0]
    M, P = A.shape
    acc = np.empty(P)
    for d in range(D):
        B = Bs[d] if Bs.shape[0] == D else Bs[0]
        _lower_t_times(trmm, Lf[d], A, B)
        acc[:] = 0.0
        for m in range(M):
            for p in range(P):
                acc[p] += B[m, p] * B[m, p]
        for p in range(P):
            var[p, d] = base[p] + acc[p]


@nb.njit(cache=True, nogil=True)
def output_variances_vjp(trmm, Lf, A, Bs, dv, dA, dq_sqrt, scratch):
    """Add every output's share of ``∂L/∂A`` to ``dA`` and write ``∂L/∂L_d`` into ``dq_sqrt``.

    Parameters
    ----------
    trmm : int
        Address of BLAS ``dtrmm``.
    Lf : ndarray of shape (D, M, M)
        ``Lf[d] = L_dᵀ`` (C-contiguous).
    A : ndarray of shape (M, P)
    Bs : ndarray of shape (D, M, P) or (1, M, P)
        The forward pass's ``B_d``, or a scratch buffer in which they are formed again.
    dv : ndarray of shape (P, D)
        Adjoint of the variances.
    dA : ndarray of shape (M, P)
        Accumulates ``2 L_d (B_d ∘ dv_d)``.
    dq_sqrt : ndarray of shape (D, M, M)
        Receives ``2 tril(A (B_d ∘ dv_d)ᵀ)``.
    scratch : ndarray of shape (M, P)
    """
    D = Lf.shape[0]
    M, P = A.shape
    for d in range(D):
        if Bs.shape[0] == D:
            B = Bs[d]
        else:
            B = Bs[0]
            _lower_t_times(trmm, Lf[d], A, B)
        for m in range(M):
            for p in range(P):
                scratch[m, p] = B[m, p] * dv[p, d]
        G = np.dot(A, scratch.T)
        for i in range(M):
            for j in range(M):
                dq_sqrt[d, i, j] = 2.0 * G[i, j] if j <= i else 0.0
        triangular_inplace_inlined(trmm, Lf[d].T, scratch.T, True, True, 2.0)
        for m in range(M):
            for p in range(P):
                dA[m, p] += scratch[m, p]
