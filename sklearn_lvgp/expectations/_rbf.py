"""Closed-form Ψ-statistics of the RBF (ARD or isotropic) kernel and their VJP.

``rbf_psi`` returns the statistics and a cache; ``rbf_psi_vjp`` maps upstream adjoints to
adjoints of ``mu``, ``S``, ``Z`` and the kernel's ``theta`` (``log variance``,
``log length_scale``).
The loops are in :mod:`._psi_numba`; Ψ2 is accumulated over ``n`` inside each entry, so no
``(N, M, M)`` tensor exists unless the per-point summands are requested.

The two-RBF helpers (:func:`two_rbf_setup`, :func:`two_rbf_psi2`, :func:`two_rbf_psi2_vjp`) also
serve the RBF×RBF cross term of sums (:mod:`._cross`).
"""

import functools
from typing import NamedTuple

import numpy as np

from .._core.linalg import symmetrise
from . import _psi_numba as _nb
from ._two_rbf import two_rbf_backward, two_rbf_forward
from ._two_rbf_numba import two_rbf_pair_terms
from ._types import PsiStats, PsiVJP, check_psi_adjoints, check_psi_inputs

__all__ = ["rbf_psi", "rbf_psi_vjp"]


def rbf_lengthscale_sq(kernel, Q):
    """Squared length scales ``lam_q = l_q^2`` broadcast to ``(Q,)`` (validated by the kernel)."""
    kernel._inv_ls(Q)  # raises on a length-scale count that does not match Q
    ls = np.asarray(kernel.length_scale, dtype=np.float64)
    return np.full(Q, float(ls) * float(ls)) if ls.ndim == 0 else ls * ls


def rbf_theta_grad(kernel, dlog_var, dlam, lam):
    """Pack ``d/d log variance`` and natural ``d/d lam`` into the kernel's ``theta`` space.

    ``d/d log l_q = 2 lam_q d/d lam_q``; an isotropic length scale receives the sum.
    """
    dlog_ls = 2.0 * lam * dlam
    if np.ndim(kernel.length_scale) == 0:
        dlog_ls = np.sum(dlog_ls)
    return kernel._pack_theta_grad({"variance": dlog_var, "length_scale": dlog_ls})


# ---------------------------------------------------------------------- Ψ1 building blocks

class Psi1Setup(NamedTuple):
    """Per-row quantities of the RBF Ψ1 (``B = 1 / (lam + S)``, log prefactor ``logk1``)."""

    lam: np.ndarray
    B: np.ndarray
    logk1: np.ndarray


def rbf_psi1_setup(lam, var, S):
    """Quantities shared by the RBF Ψ1 forward and backward passes."""
    B, logk1 = _nb.rbf_psi1_row_terms(lam, float(np.log(var)), S)
    return Psi1Setup(lam, B, logk1)


def rbf_psi1(mu, Z, setup):
    """RBF Ψ1 (N, M) from its :class:`Psi1Setup` (one vectorised jitted loop)."""
    return _nb.rbf_psi1(mu, np.ascontiguousarray(Z.T), setup.B, setup.logk1)


def rbf_psi1_backward(mu, Z, B, Psi1, A):
    """Backward pass of the RBF Ψ1 given ``A = dL/dPsi1`` (N, M).

    Returns ``dmu``, ``dS`` (N, Q), ``dZ`` (M, Q), ``dlam_rest`` (Q,) and ``total``: with
    ``PW = A * Psi1``, ``dL/dlam_q = total / (2 lam_q) + dlam_rest[q]`` and ``dL/dlog var = total``
    (the log-derivatives of the closed form). The sums over ``m`` and ``n`` are two products,
    ``PW [Z, Z²]`` and ``PWᵀ [mu B, B]``; the rest is one jitted pass on each side
    (:func:`._psi_numba.rbf_psi1_factors`, :func:`._psi_numba.rbf_psi1_assemble`).
    """
    PW, r, XB, ZZ, ctr = _nb.rbf_psi1_factors(mu, B, Z, A, Psi1)
    return _nb.rbf_psi1_assemble(mu, B, Z, ctr, r, PW @ ZZ, PW.T @ XB)


# ------------------------------------------------------------------- two-RBF Ψ2 / cross term

class TwoRBFSetup(NamedTuple):
    """Everything the two-RBF computation needs (see :mod:`._two_rbf` for the formula)."""

    mu: np.ndarray
    E: np.ndarray
    logk2: np.ndarray
    I: np.ndarray
    J: np.ndarray
    cmidT: np.ndarray
    pconst: np.ndarray
    DuT: np.ndarray
    mult: np.ndarray
    wa: np.ndarray
    wb: np.ndarray
    tau: np.ndarray
    M: int
    sym: bool
    kept: list
    workspace: object = None


def two_rbf_setup(lam_a, lam_b, log_c, Z, mu, S, sym, workspace=None):
    """Prepare ``C_{mm'} = sum_n E[k_a(x_n, z_m) k_b(x_n, z_m')]`` for two RBF kernels.

    Parameters
    ----------
    lam_a, lam_b : ndarray of shape (Q,)
        Squared length scales of the two kernels.
    log_c : float
        ``log(var_a * var_b)``.
    Z, mu, S : ndarray
        Inducing inputs and variational parameters (already checked).
    sym : bool
        ``True`` when both kernels are the same (Ψ2 of one RBF): only pairs ``m <= m'`` are
        visited and ``lam_a`` is used for both.
    workspace : Workspace, default=None
        Where the forward pass keeps its entries (:class:`sklearn_lvgp._core.workspace.Workspace`,
        reused from one evaluation to the next; see :mod:`._two_rbf`); ``None``: fresh arrays.

    Returns
    -------
    TwoRBFSetup
    """
    M = Z.shape[0]
    sym = bool(sym)
    I, J = _pair_indices(M, sym)
    f64 = functools.partial(np.ascontiguousarray, dtype=np.float64)
    E, logk2, cmidT, DuT, pconst, tau, wa, wb = two_rbf_pair_terms(
        f64(lam_a), f64(lam_a if sym else lam_b), float(log_c), f64(Z), f64(S), I, J, sym)
    mult = _sym_mult(M) if sym else np.ones(I.shape[0])
    return TwoRBFSetup(mu, E, logk2, I, J, cmidT, pconst, DuT, mult, wa, wb, tau, M, sym, [],
                       workspace)


@functools.lru_cache(maxsize=32)
def _pair_indices(M, sym):
    """``(I, J)`` of the visited pairs: ``m <= m'`` when ``sym``, else all ``M^2`` (read-only)."""
    I, J = np.triu_indices(M) if sym else np.divmod(np.arange(M * M), M)
    I = np.ascontiguousarray(I, dtype=np.int64)
    J = np.ascontiguousarray(J, dtype=np.int64)
    I.flags.writeable = False
    J.flags.writeable = False
    return I, J


@functools.lru_cache(maxsize=32)
def _sym_mult(M):
    """Weights of the visited pairs of a symmetric matrix: 1 on the diagonal, 2 off it."""
    I, J = _pair_indices(M, True)
    mult = np.where(I == J, 1.0, 2.0)
    mult.flags.writeable = False
    return mult


def two_rbf_psi2(setup, per_point=False, keep=None):
    """Summed ``(M, M)`` or per-point ``(N, M, M)`` two-RBF matrix from a :class:`TwoRBFSetup`.

    ``keep``: keep the entries for the backward pass (``None``: when they fit the budget).
    """
    return two_rbf_forward(setup, per_point, keep)


def two_rbf_psi2_vjp(G, setup):
    """Backward pass of :func:`two_rbf_psi2`.

    Parameters
    ----------
    G : ndarray of shape (1, M, M) or (N, M, M)
        Upstream adjoint; must be symmetric in its last two axes when ``setup.sym``.
    setup : TwoRBFSetup

    Returns
    -------
    dmu, dS : ndarray of shape (N, Q)
    dZ : ndarray of shape (M, Q)
    dlam_a, dlam_b : ndarray of shape (Q,)
        Natural-space derivatives wrt the squared length scales (with ``sym`` only their sum is
        meaningful: it is the derivative wrt the shared ``lam``).
    dlog_c : float
        Derivative wrt ``log(var_a var_b)``.
    """
    s = setup
    dmu, dS, dZ, dla, dlb, total = two_rbf_backward(np.asarray(G, dtype=np.float64), s)
    half = 0.5 * total / s.tau
    return dmu, dS, dZ, dla + s.wa * s.wa * half, dlb + s.wb * s.wb * half, total


# ------------------------------------------------------------------------------ public API

class _RBFCache(NamedTuple):
    kernel: object
    Z: np.ndarray
    mu: np.ndarray
    S: np.ndarray
    var: float
    psi1: Psi1Setup
    Psi1: np.ndarray
    two: TwoRBFSetup


def rbf_psi(kernel, Z, mu, S, per_point=False, workspace=None, *, need_cache=True,
            need_psi2=True):
    """Closed-form Ψ-statistics of an RBF kernel (Titsias & Lawrence 2010).

    Parameters
    ----------
    kernel : RBF
        Kernel with scalar (isotropic) or per-dimension (ARD) ``length_scale``.
    Z : ndarray of shape (M, Q)
        Inducing inputs.
    mu : ndarray of shape (N, Q)
        Means of ``q(x_n)``.
    S : ndarray of shape (N, Q)
        Variances of ``q(x_n)`` (``S >= 0``; ``S = 0`` gives kernel values at ``mu``).
    per_point : bool, default=False
        Return the per-point summands ``Psi2[n]`` of shape (N, M, M) instead of their sum.
    workspace : Workspace, default=None
        Buffers for the kept Ψ2 entries, reused across evaluations (:func:`two_rbf_setup`).
    need_cache : bool, default=True
        ``False``: keep no Ψ2 entries for a backward pass (none will follow).
    need_psi2 : bool, default=True
        ``False``: skip Ψ2 (returned as ``None``); the backward pass recomputes its entries.

    Returns
    -------
    stats : PsiStats
        ``psi0``, ``Psi1`` (N, M) and ``Psi2`` (M, M) or (N, M, M).
    cache : object
        Opaque state for :func:`rbf_psi_vjp`.
    """
    Z, mu, S = check_psi_inputs(Z, mu, S)
    N, Q = mu.shape
    lam = rbf_lengthscale_sq(kernel, Q)
    var = float(kernel.variance)
    p1 = rbf_psi1_setup(lam, var, S)
    Psi1 = rbf_psi1(mu, Z, p1)
    two = two_rbf_setup(lam, lam, 2.0 * np.log(var), Z, mu, S, sym=True, workspace=workspace)
    Psi2 = two_rbf_psi2(two, per_point, keep=None if need_cache else False) if need_psi2 \
        else None
    psi0 = np.full(N, var) if per_point else float(N * var)
    stats = PsiStats(psi0, Psi1, Psi2)
    return stats, _RBFCache(kernel, Z, mu, S, var, p1, Psi1, two)


def _sum_parts(parts, shapes):
    """Elementwise sums of same-shaped tuples of fresh arrays (zeros of ``shapes`` if none).

    The first tuple's arrays are owned by the caller (fresh outputs of the backward passes), so
    the others are added into them instead of into new zero arrays.
    """
    if not parts:
        return tuple(np.zeros(shape) for shape in shapes)
    total = parts[0]
    for part in parts[1:]:
        for acc, x in zip(total, part, strict=True):
            acc += x
    return total


def rbf_psi_vjp(dL_dpsi0, dL_dPsi1, dL_dPsi2, cache):
    """Backward pass of :func:`rbf_psi`.

    Parameters
    ----------
    dL_dpsi0 : float or None
        Adjoint of ``psi0`` (``None`` means zero).
    dL_dPsi1 : ndarray of shape (N, M) or None
        Adjoint of ``Psi1``.
    dL_dPsi2 : ndarray of shape (M, M) or (N, M, M), or None
        Adjoint of ``Psi2`` (summed or per point; need not be symmetric, its symmetric part is
        used).
    cache : object
        Second output of :func:`rbf_psi`.

    Returns
    -------
    PsiVJP
        Adjoints of ``mu``, ``S``, ``Z`` and ``kernel.theta``.
    """
    c = cache
    N, Q = c.mu.shape
    M = c.Z.shape[0]
    g0, G1, G2 = check_psi_adjoints(dL_dpsi0, dL_dPsi1, dL_dPsi2, N, M)
    lam = c.psi1.lam
    # the adjoint of the summed psi0 is a scalar (broadcast to every row): N times it
    scalar = dL_dpsi0 is not None and np.ndim(dL_dpsi0) == 0
    dlog_var = (N * float(dL_dpsi0) if scalar else float(np.sum(g0))) * c.var
    parts = []  # (dmu, dS, dZ, dlam) of each statistic with an adjoint
    if G1 is not None:
        m1, s1, z1, l1, tot1 = rbf_psi1_backward(c.mu, c.Z, c.psi1.B, c.Psi1, G1)
        parts.append((m1, s1, z1, l1 + 0.5 * tot1 / lam))
        dlog_var += tot1
    if G2 is not None:
        m2, s2, z2, la, lb, tot2 = two_rbf_psi2_vjp(symmetrise(G2), c.two)
        parts.append((m2, s2, z2, la + lb))
        dlog_var += 2.0 * tot2
    dmu, dS, dZ, dlam = _sum_parts(parts, [(N, Q), (N, Q), (M, Q), (Q,)])
    return PsiVJP(dmu, dS, dZ, rbf_theta_grad(c.kernel, dlog_var, dlam, lam))
