"""Kernel rows of a stationary kernel at the unscented points, without the point array.

:func:`._pointset.pointset_psi` evaluates ``k(x_nk, Z)`` for every point of a rule. For the
unscented rule and a stationary kernel (RBF, Matérn, rational quadratic) the points differ from
their centre in one coordinate each, so the ``2Q`` kernel rows of a data point cost ``O(M Q)``
instead of ``O(M Q²)`` (formulas in :mod:`._ut_numba`). The Ψ-statistics are then linear in
``Q`` apart from the ``Ψ2`` product, which is ``O(N Q M²)`` either way.
"""

import numpy as np

from .._core.blas_numba import DSYRK
from ..kernels._stationary import _Stationary
from . import _ut_numba as _nb

__all__ = ["uses_axis_points", "axis_point_rows", "axis_point_rows_vjp", "axis_point_chunk_stats",
           "axis_point_chunk_grads"]


def uses_axis_points(kernel, rule):
    """Whether ``rule`` has the unscented points ``±c e_q`` and ``kernel`` is stationary."""
    nodes = rule.nodes
    if not (rule.name == "unscented" and isinstance(kernel, _Stationary)
            and kernel._kind is not None and nodes.ndim == 2):
        return False
    Q = nodes.shape[1]
    if nodes.shape != (2 * Q, Q):
        return False
    # element by element on a list: called once per chunk, where numpy's temporaries cost more
    # than the 2Q² comparisons (and hold the GIL)
    rows = nodes.tolist()
    c = rows[0][0]
    return all(rows[k][j] == (c if j == k else 0.0) and rows[Q + k][j] == (-c if j == k else 0.0)
               for k in range(Q) for j in range(Q))


def _inverse_sq_lengths(kernel, Q):
    inv = kernel._inv_ls(Q)
    return np.ascontiguousarray(inv * inv)


def axis_point_rows(kernel, mu, delta, Z):
    """``Ks[n, k] = k(x_nk, Z)`` (N, 2Q, M) at the unscented points, and the backward cache.

    Parameters
    ----------
    kernel : Kernel
        A stationary kernel (:func:`uses_axis_points`).
    mu, delta : ndarray of shape (N, Q)
        Centres and half-widths ``sqrt(Q S)`` of the points (C-contiguous float64).
    Z : ndarray of shape (M, Q)
        Inducing inputs.

    Returns
    -------
    Ks : ndarray of shape (N, 2Q, M)
        Kernel rows; point ``k < Q`` is ``mu + delta_k e_k``, point ``Q + k`` is
        ``mu - delta_k e_k``.
    cache : tuple
        Input of :func:`axis_point_rows_vjp`.
    """
    N, Q = mu.shape
    M = Z.shape[0]
    w = _inverse_sq_lengths(kernel, Q)
    ZT = np.ascontiguousarray(Z.T)
    Ks = np.empty((N, 2 * Q, M))
    _nb.ut_stationary_K(mu, delta, ZT, w, float(kernel.variance), kernel._kind,
                        float(kernel._alpha()), Ks)
    return Ks, (w, ZT)


def axis_point_rows_vjp(kernel, dKs, Ks, cache, mu, delta):
    """Backward pass of :func:`axis_point_rows`: ``dmu``, ``ddelta`` (N, Q), ``dZ`` (M, Q) and
    the kernel's ``theta`` adjoint."""
    w, ZT = cache
    dmu, ddelta, dZ, dw, dlogvar, dlogalpha = _nb.ut_stationary_vjp(
        np.ascontiguousarray(dKs), Ks, mu, delta, ZT, w, kernel._kind, float(kernel._alpha()))
    return dmu, ddelta, dZ, _theta_grad(kernel, w, dw, dlogvar, dlogalpha)


def _theta_grad(kernel, w, dw, dlogvar, dlogalpha):
    """The kernel's ``theta`` adjoint from those of ``w = l⁻²``, ``log σ²`` and ``log α``."""
    dlogls = -2.0 * w * dw  # w = l^-2: dw / dlog l = -2 w
    grads = {"variance": dlogvar, "alpha": dlogalpha,
             "length_scale": np.sum(dlogls) if np.ndim(kernel.length_scale) == 0 else dlogls}
    return kernel._pack_theta_grad(grads)



def axis_point_chunk_stats(kernel, Z, rule, mu, S, Y, Ks, scratch):
    """``(ψ0, Ψ1ᵀY, Ψ2)`` of one chunk of rows in one jitted call (the objective engine's).

    The statistics of :func:`._pointset.pointset_psi` for a rule and kernel that pass
    :func:`uses_axis_points`, summed over the chunk's rows, with ``Ψ1ᵀY`` in place of Ψ1.

    Parameters
    ----------
    kernel : Kernel
        A stationary kernel.
    Z : ndarray of shape (M, Q)
        Inducing inputs.
    rule : PointRule
        The unscented rule.
    mu, S, Y : ndarray of shape (n, Q), (n, Q) and (n, D)
        The chunk's input means, variances and targets (C-contiguous).
    Ks : ndarray of shape (n, 2Q, M)
        Receives the kernel rows (the backward pass's input when kept).
    scratch : ndarray of shape (n, 2Q, M)
        Work space.

    Returns
    -------
    psi0 : float
    PY : ndarray of shape (M, D)
    Psi2 : ndarray of shape (M, M)
    """
    Q = mu.shape[1]
    PY, Psi2 = _nb.ut_chunk_stats.serial(
        DSYRK, mu, S, float(rule.nodes[0, 0]), np.ascontiguousarray(Z.T),
        _inverse_sq_lengths(kernel, Q), float(kernel.variance), kernel._kind,
        float(kernel._alpha()), rule.weights, Y, Ks, scratch)
    psi0 = mu.shape[0] * float(np.sum(rule.weights)) * float(kernel.Kdiag(mu[:1])[0])
    return psi0, PY, Psi2


def axis_point_chunk_grads(kernel, Z, rule, mu, S, Y, dpsi0, dPY_T, dPsi2, Ks, have_Ks,
                           scratch):
    """Backward pass of :func:`axis_point_chunk_stats` in one jitted call.

    ``dpsi0``, ``dPY_T`` ((D, M), the transposed adjoint of Ψ1ᵀY) and ``dPsi2`` are the adjoints
    of the reduced statistics; ``Ks`` holds the chunk's kernel rows when ``have_Ks``, else it
    is the buffer they are recomputed into; ``scratch`` is work space of its shape. Returns
    ``dmu``, ``dS`` (n, Q; 0 where ``S`` is 0), ``dZ`` (M, Q) and the kernel's ``theta``
    adjoint, as :func:`._pointset.pointset_psi_vjp` does for the chunk's rows.
    """
    Q = mu.shape[1]
    w = _inverse_sq_lengths(kernel, Q)
    # only dΨ2 + dΨ2ᵀ is used: an F-ordered adjoint is passed as its C-ordered transpose (the
    # same sums), so one compiled layout serves every caller
    dPsi2 = np.ascontiguousarray(dPsi2.T if dPsi2.flags.f_contiguous else dPsi2)
    dmu, dS, dZ, dw, dlogvar, dlogalpha = _nb.ut_chunk_grads.serial(
        Ks, have_Ks, mu, S, float(rule.nodes[0, 0]), np.ascontiguousarray(Z.T), w,
        float(kernel.variance), kernel._kind, float(kernel._alpha()), rule.weights, Y, dPY_T,
        dPsi2, scratch)
    # ψ0 = n Σ_k w_k k(x, x): only the hyperparameters of the constant diagonal get its adjoint
    diag = kernel.vjp_diag(np.array([mu.shape[0] * float(np.sum(rule.weights)) * dpsi0]),
                           mu[:1])
    return dmu, dS, dZ, _theta_grad(kernel, w, dw, dlogvar, dlogalpha) + diag.theta
