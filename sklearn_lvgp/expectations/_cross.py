"""Closed-form Ψ-statistics of sums of RBF and linear kernels.

The RBF + linear sum is the kernel of the analytic Bayesian GPLVM in de Souza et al. (2021,
Table 3, "GPLVM – Analytic").

For ``k = sum_a k_a``: ``psi0`` and ``Psi1`` add, and

    Psi2 = sum_a Psi2^{aa} + sum_{a<b} (C^{ab} + C^{ab T}),
    C^{ab}_{mm'} = sum_n E[k_a(x_n, z_m) k_b(x_n, z_m')].

Closed-form cross terms:

* RBF × linear: ``E[k_rbf(x, z_m) x] = Psi1_nm * m_nm``, the mean of the Gaussian tilted by the
  RBF factor, ``m_nmq = (lam_q mu_nq + S_nq z_mq) / (lam_q + S_nq)``; hence
  ``C = W (Z B)^T`` with ``W_mq = sum_n Psi1_nm m_nmq`` and ``B = diag(beta)``.
* linear × linear: ``E[x x^T] = mu mu^T + diag(S)``, so ``C = Z A R B Z^T`` (``R`` as in
  :mod:`._linear`).
* RBF × RBF: the product of the two Gaussian factors is one Gaussian factor in ``x`` (see
  :mod:`._psi_numba`), giving the RBF Ψ2 formula of :mod:`._rbf` with
  ``tau = lam rho / (lam + rho)``.
"""

from typing import NamedTuple

import numpy as np

from ..kernels._base import Kernel
from ..kernels._linear import Linear
from ..kernels._stationary import RBF
from . import _psi_numba as _nb
from ._linear import (
    linear_alpha,
    linear_psi,
    linear_psi_vjp,
    linear_theta_grad,
    scaled_inputs_vjp,
    second_moment,
    second_moment_per_point,
)
from ._rbf import (
    rbf_lengthscale_sq,
    rbf_psi,
    rbf_psi1,
    rbf_psi1_backward,
    rbf_psi1_setup,
    rbf_psi_vjp,
    rbf_theta_grad,
    two_rbf_psi2,
    two_rbf_psi2_vjp,
    two_rbf_setup,
)
from ._types import PsiStats, PsiVJP, as_psi2_adjoint, check_psi_adjoints, check_psi_inputs

__all__ = ["cross_psi2", "cross_psi2_vjp", "sum_psi", "sum_psi_vjp", "closed_form_available"]

#: Kernels with closed-form Ψ-statistics: exact type -> (forward, backward).
_SINGLE = {RBF: (rbf_psi, rbf_psi_vjp), Linear: (linear_psi, linear_psi_vjp)}


def closed_form_available(kernel):
    """Whether :func:`sum_psi` can handle ``kernel`` exactly.

    Parameters
    ----------
    kernel : Kernel
        Any kernel.

    Returns
    -------
    bool
        ``True`` for ``RBF``, ``Linear`` and sums whose summands are all ``RBF`` or ``Linear``
        (subclasses excluded: they may change the kernel function).
    """
    return all(type(k) in _SINGLE for k in kernel.summands())


def _summands(kernels):
    if isinstance(kernels, Kernel):
        kernels = [kernels]
    out = []
    for k in kernels:
        out.extend(k.summands())
    for k in out:
        if type(k) not in _SINGLE:
            raise ValueError(
                f"No closed-form Ψ-statistics for {k!r}; closed forms exist for RBF, Linear and "
                "their sums. Use a point-set rule (e.g. the unscented transform) instead.")
    return out


# ------------------------------------------------------------------------------ cross terms

class _CrossCache(NamedTuple):
    backward: object
    ka: object
    kb: object
    transpose: bool
    Z: np.ndarray
    mu: np.ndarray
    S: np.ndarray
    data: tuple


def _tilted_mean(mu, S, Z, lam, B):
    """``m_nmq = (lam_q mu_nq + S_nq z_mq) / (lam_q + S_nq)`` of shape (N, M, Q)."""
    return (lam * mu[:, None, :] + S[:, None, :] * Z[None, :, :]) * B[:, None, :]


def _rbf_linear_forward(kr, kl, Z, mu, S, per_point, workspace=None):
    N, Q = mu.shape
    lam = rbf_lengthscale_sq(kr, Q)
    p1 = rbf_psi1_setup(lam, float(kr.variance), S)
    Psi1 = rbf_psi1(mu, Z, p1)
    W = _nb.rbf_linear_tilted(mu, S, Z, lam, p1.B, Psi1)
    beta = linear_alpha(kl, Q)
    ZB = Z * beta
    if per_point:
        V = Psi1[:, :, None] * _tilted_mean(mu, S, Z, lam, p1.B)
        C = np.einsum("nmq,kq->nmk", V, ZB)
    else:
        C = W @ ZB.T
    return C, (p1, Psi1, W, beta, ZB)


def _rbf_linear_backward(G, c):
    p1, Psi1, W, beta, ZB = c.data
    mu, S, Z = c.mu, c.S, c.Z
    lam = p1.lam
    if G.shape[0] == 1:
        dW = (G[0] @ ZB)[None]
        dZB = G[0].T @ W
    else:
        V = Psi1[:, :, None] * _tilted_mean(mu, S, Z, lam, p1.B)
        dW = np.einsum("nmk,kq->nmq", G, ZB)
        dZB = np.einsum("nmk,nmq->kq", G, V)
    A, dmu, dS, dZ, dlam = _nb.rbf_linear_tilted_backward(
        mu, S, Z, lam, p1.B, Psi1, np.ascontiguousarray(dW))
    m1, s1, z1, l1, tot = rbf_psi1_backward(mu, Z, p1.B, Psi1, A)
    dZl, dbeta = scaled_inputs_vjp(dZB, Z, beta)
    theta_r = rbf_theta_grad(c.ka if not c.transpose else c.kb, tot, dlam + l1 + 0.5 * tot / lam,
                             lam)
    theta_l = linear_theta_grad(c.kb if not c.transpose else c.ka, dbeta, beta)
    return dmu + m1, dS + s1, dZ + z1 + dZl, theta_r, theta_l


def _linear_linear_forward(ka, kb, Z, mu, S, per_point, workspace=None):
    Q = mu.shape[1]
    alpha = linear_alpha(ka, Q)
    beta = linear_alpha(kb, Q)
    ZA = Z * alpha
    ZB = Z * beta
    if per_point:
        C = (np.einsum("nq,mq->nm", mu, ZA)[:, :, None] * np.einsum("nq,kq->nk", mu, ZB)[:, None]
             + np.einsum("mq,nq,kq->nmk", ZA, S, ZB))
    else:
        C = ZA @ second_moment(mu, S) @ ZB.T
    return C, (alpha, beta, ZA, ZB)


def _linear_linear_backward(G, c):
    alpha, beta, ZA, ZB = c.data
    mu, S, Z = c.mu, c.S, c.Z
    if G.shape[0] == 1:
        G0 = G[0]
        R = second_moment(mu, S)
        dR = ZA.T @ G0 @ ZB
        dmu = mu @ (dR + dR.T)
        dS = np.broadcast_to(np.diag(dR), mu.shape).copy()
        dZA = G0 @ ZB @ R
        dZB = G0.T @ ZA @ R
    else:
        R = second_moment_per_point(mu, S)
        dR = np.einsum("mq,nmk,kr->nqr", ZA, G, ZB)
        dmu = np.einsum("nqr,nr->nq", dR + np.swapaxes(dR, 1, 2), mu)
        dS = np.einsum("nqq->nq", dR)
        dZA = np.einsum("nmk,kq,nqr->mr", G, ZB, R)
        dZB = np.einsum("nmk,mq,nqr->kr", G, ZA, R)
    dZa, dalpha = scaled_inputs_vjp(dZA, Z, alpha)
    dZb, dbeta = scaled_inputs_vjp(dZB, Z, beta)
    return (dmu, dS, dZa + dZb, linear_theta_grad(c.ka, dalpha, alpha),
            linear_theta_grad(c.kb, dbeta, beta))


def _rbf_rbf_forward(ka, kb, Z, mu, S, per_point, workspace=None):
    Q = mu.shape[1]
    lam_a = rbf_lengthscale_sq(ka, Q)
    lam_b = rbf_lengthscale_sq(kb, Q)
    log_c = np.log(float(ka.variance)) + np.log(float(kb.variance))
    setup = two_rbf_setup(lam_a, lam_b, log_c, Z, mu, S, sym=False, workspace=workspace)
    return two_rbf_psi2(setup, per_point), (setup, lam_a, lam_b)


def _rbf_rbf_backward(G, c):
    setup, lam_a, lam_b = c.data
    dmu, dS, dZ, dla, dlb, tot = two_rbf_psi2_vjp(G, setup)
    return (dmu, dS, dZ, rbf_theta_grad(c.ka, tot, dla, lam_a),
            rbf_theta_grad(c.kb, tot, dlb, lam_b))


#: Closed-form cross terms: (type_a, type_b) -> (forward, backward); the reversed order is
#: served by transposing.
_CROSS = {
    (RBF, RBF): (_rbf_rbf_forward, _rbf_rbf_backward),
    (RBF, Linear): (_rbf_linear_forward, _rbf_linear_backward),
    (Linear, Linear): (_linear_linear_forward, _linear_linear_backward),
}


def cross_psi2(ka, kb, Z, mu, S, per_point=False, workspace=None):
    """Cross term ``C_{mm'} = sum_n E[k_a(x_n, z_m) k_b(x_n, z_m')]`` of two kernels.

    Parameters
    ----------
    ka, kb : RBF or Linear
        The two summands (any order).
    Z : ndarray of shape (M, Q)
        Inducing inputs.
    mu : ndarray of shape (N, Q)
        Means of ``q(x_n)``.
    S : ndarray of shape (N, Q)
        Variances of ``q(x_n)`` (``S >= 0``).
    per_point : bool, default=False
        Return the per-point summands of shape (N, M, M) instead of their sum.
    workspace : Workspace, default=None
        Buffers reused across evaluations (the RBF×RBF term keeps its entries there).

    Returns
    -------
    C : ndarray of shape (M, M) or (N, M, M)
        The (generally non-symmetric) cross term.
    cache : object
        Opaque state for :func:`cross_psi2_vjp`.
    """
    Z, mu, S = check_psi_inputs(Z, mu, S)
    key = (type(ka), type(kb))
    transpose = False
    if key not in _CROSS and key[::-1] in _CROSS:
        key, transpose = key[::-1], True
    if key not in _CROSS:
        raise ValueError(f"No closed-form cross term for {ka!r} and {kb!r}.")
    forward, backward = _CROSS[key]
    first, second = (kb, ka) if transpose else (ka, kb)
    C, data = forward(first, second, Z, mu, S, per_point, workspace)
    if transpose:
        C = np.ascontiguousarray(np.swapaxes(C, -1, -2))
    return C, _CrossCache(backward, ka, kb, transpose, Z, mu, S, data)


def cross_psi2_vjp(dL_dC, cache):
    """Backward pass of :func:`cross_psi2`.

    Parameters
    ----------
    dL_dC : ndarray of shape (M, M) or (N, M, M)
        Adjoint of the summed or per-point cross term (used as is, not symmetrised).
    cache : object
        Second output of :func:`cross_psi2`.

    Returns
    -------
    PsiVJP
        Adjoints of ``mu``, ``S``, ``Z`` and of ``[ka.theta, kb.theta]`` concatenated.
    """
    c = cache
    N = c.mu.shape[0]
    M = c.Z.shape[0]
    G = as_psi2_adjoint(dL_dC, N, M)
    if c.transpose:
        G = np.ascontiguousarray(np.swapaxes(G, -1, -2))
    dmu, dS, dZ, theta_first, theta_second = c.backward(G, c)
    if c.transpose:
        theta_first, theta_second = theta_second, theta_first
    return PsiVJP(dmu, dS, dZ, np.concatenate([theta_first, theta_second]))


# ------------------------------------------------------------------------------------- sums

class _SumCache(NamedTuple):
    kernels: list
    caches: list
    cross: list
    shape: tuple


def _part(workspace, name):
    """The part ``name`` of a workspace, or ``None`` without one."""
    return None if workspace is None else workspace.child(name)


def sum_psi(kernels, Z, mu, S, per_point=False, workspace=None, *, need_cache=True,
            need_psi2=True):
    """Closed-form Ψ-statistics of a sum of RBF and linear kernels.

    Parameters
    ----------
    kernels : Kernel or sequence of Kernel
        A kernel (``Sum`` kernels are flattened with ``summands()``) or a list of summands.
    Z : ndarray of shape (M, Q)
        Inducing inputs.
    mu : ndarray of shape (N, Q)
        Means of ``q(x_n)``.
    S : ndarray of shape (N, Q)
        Variances of ``q(x_n)`` (``S >= 0``).
    per_point : bool, default=False
        Return the per-point summands ``Psi2[n]`` of shape (N, M, M) instead of their sum.
    workspace : Workspace, default=None
        Buffers reused across evaluations (:class:`sklearn_lvgp._core.workspace.Workspace`); each
        summand and cross term gets its own part of it.
    need_cache, need_psi2 : bool, default=True
        As in :func:`sklearn_lvgp.expectations.psi_statistics`; used by a single RBF summand (a sum
        computes everything).

    Returns
    -------
    stats : PsiStats
        ``psi0``, ``Psi1`` (N, M) and ``Psi2`` (M, M) or (N, M, M) of the summed kernel.
    cache : object
        Opaque state for :func:`sum_psi_vjp`.

    Raises
    ------
    ValueError
        If a summand has no closed form (see :func:`closed_form_available`).
    """
    ks = _summands(kernels)
    if len(ks) == 1:  # a single summand: its own statistics (it checks the inputs)
        if type(ks[0]) is RBF:
            stats, cache = rbf_psi(ks[0], Z, mu, S, per_point, workspace,
                                   need_cache=need_cache, need_psi2=need_psi2)
        else:
            stats, cache = _SINGLE[type(ks[0])][0](ks[0], Z, mu, S, per_point, workspace)
        mu = np.asarray(mu)
        return stats, _SumCache(ks, [cache], [], (mu.shape[0], np.shape(Z)[0], mu.shape[1]))
    Z, mu, S = check_psi_inputs(Z, mu, S)
    caches, cross = [], []
    psi0, Psi1, Psi2 = 0.0, 0.0, 0.0
    for i, k in enumerate(ks):
        stats, cache = _SINGLE[type(k)][0](k, Z, mu, S, per_point,
                                           _part(workspace, f"summand{i}"))
        caches.append(cache)
        psi0 = psi0 + stats.psi0
        Psi1 = Psi1 + stats.Psi1
        Psi2 = Psi2 + stats.Psi2
    for a in range(len(ks)):
        for b in range(a + 1, len(ks)):
            C, cache = cross_psi2(ks[a], ks[b], Z, mu, S, per_point,
                                  _part(workspace, f"cross{a},{b}"))
            cross.append((a, b, cache))
            Psi2 = Psi2 + C + np.swapaxes(C, -1, -2)
    psi0 = psi0 if per_point else float(psi0)
    stats = PsiStats(psi0, Psi1, np.ascontiguousarray(Psi2))
    return stats, _SumCache(ks, caches, cross, (mu.shape[0], Z.shape[0], mu.shape[1]))


def sum_psi_vjp(dL_dpsi0, dL_dPsi1, dL_dPsi2, cache):
    """Backward pass of :func:`sum_psi`.

    Parameters
    ----------
    dL_dpsi0 : float or None
        Adjoint of ``psi0`` (``None`` means zero).
    dL_dPsi1 : ndarray of shape (N, M) or None
        Adjoint of ``Psi1``.
    dL_dPsi2 : ndarray of shape (M, M) or (N, M, M), or None
        Adjoint of ``Psi2`` (summed or per point; its symmetric part is used).
    cache : object
        Second output of :func:`sum_psi`.

    Returns
    -------
    PsiVJP
        Adjoints of ``mu``, ``S``, ``Z`` and of the summands' ``theta`` concatenated in summand
        order (the layout of ``Sum.theta``).
    """
    c = cache
    if len(c.kernels) == 1:
        return _SINGLE[type(c.kernels[0])][1](dL_dpsi0, dL_dPsi1, dL_dPsi2, c.caches[0])
    N, M, Q = c.shape
    g0, G1, G2 = check_psi_adjoints(dL_dpsi0, dL_dPsi1, dL_dPsi2, N, M)
    offsets = np.cumsum([0] + [k.n_theta for k in c.kernels])
    dmu = np.zeros((N, Q))
    dS = np.zeros((N, Q))
    dZ = np.zeros((M, Q))
    theta = np.zeros(offsets[-1])
    for i, (k, sub) in enumerate(zip(c.kernels, c.caches, strict=True)):
        r = _SINGLE[type(k)][1](g0, G1, G2, sub)
        dmu += r.mu
        dS += r.S
        dZ += r.Z
        theta[offsets[i]:offsets[i + 1]] += r.theta
    if G2 is not None and c.cross:
        dC = G2 + np.swapaxes(G2, -1, -2)
        for a, b, sub in c.cross:
            r = cross_psi2_vjp(dC, sub)
            dmu += r.mu
            dS += r.S
            dZ += r.Z
            na = offsets[a + 1] - offsets[a]
            theta[offsets[a]:offsets[a + 1]] += r.theta[:na]
            theta[offsets[b]:offsets[b + 1]] += r.theta[na:]
    return PsiVJP(dmu, dS, dZ, theta)
