"""Projection layer of the deep variational Mahalanobis GP (DVMGP; de Souza 2020, §4.3.1, app. A).

The W-layer has Q·D GPs ``w_qd(x) ~ GP(0, k_q)`` with inducing outputs ``v_qd`` at the shared inputs
Ξ and ``q(v_qd) = N(μ_qd, Σ_q)``, ``Σ_q = L_q L_qᵀ`` shared by the D columns of row q. Each input's
latent point ``z_i = W(x_i) x_i`` is then Gaussian, ``N(h_i, diag η_i)`` (app. A.2), so the data
term is the collapsed Bayesian-GPLVM bound with an RBF kernel (variance σ_f², unit length scales) at
those latent Gaussians: the Ψ-statistics of §4.3.1 are the RBF ones of Titsias & Lawrence (2010)
with unit length scales, and the bound of app. A.1.3 (with its log-determinant terms corrected
to ``+½ log|K_u| − ½ log|σ²K_u + Ψ2|``) is the collapsed one. This module holds only the
new pieces, each a forward/backward pair:

* :func:`projection_forward` / :func:`projection_vjp` — the q(W) marginals ``a``, ``b`` (app. A.2,
  with ``K_v − Σ_q`` where the text prints ``K_v + Σ_q``) and KL(q(V) ‖ p(V)) (eq. A.1) from
  (Ξ, μ, L, W-kernels);
* :func:`latent_moments` / :func:`latent_moments_vjp` — the map (a, b) → (h, η);
* :func:`output_psi` / :func:`output_psi_vjp` — the output layer's Ψ-statistics (§4.3.1), a thin
  wrapper over the shared closed-form RBF code that exposes the σ_f adjoint.

The bound itself is :func:`~sklearn_lvgp.bounds._collapsed_global.collapsed_bound`, unchanged.
"""

from typing import NamedTuple

import numpy as np

from .._core.linalg import (
    cho_solve,
    cholesky_jitter,
    solve_lower,
    solve_upper,
    symmetrise,
    tril,
)
from ..expectations import psi_statistics, psi_vjp
from ..kernels import RBF
from ._kl import kl_shared_covariance, kl_shared_covariance_vjp

__all__ = [
    "projection_kernels", "projection_forward", "projection_vjp", "ProjectionVJP",
    "RowFactors", "row_marginals", "row_local_vjp", "row_global_vjp",
    "latent_moments", "latent_moments_vjp", "latent_covariance", "output_kernel", "output_psi",
    "output_psi_vjp", "chol_factors",
]


# ------------------------------------------------------------------- W-kernels, q(V) factors

def projection_kernels(wtheta):
    """The Q ARD-RBF kernels ``k_q`` of the W-layer from their log hyperparameters.

    Parameters
    ----------
    wtheta : ndarray of shape (Q, 1 + D)
        Row q holds ``log κ_q²`` then ``log ℓ_q1 … log ℓ_qD`` (the kernels' ``theta`` order).

    Returns
    -------
    kernels : list of RBF
        One kernel per latent dimension.
    """
    wtheta = np.asarray(wtheta, dtype=np.float64)
    return [RBF(length_scale=np.exp(row[1:]), variance=float(np.exp(row[0])))
            for row in wtheta]


def chol_factors(chol, m_v):
    """Lower-triangular factors ``L_q`` of Σ_q as a (Q, m_v, m_v) array.

    Parameters
    ----------
    chol : ndarray of shape (Q, m_v) or (Q, m_v, m_v)
        Positive Cholesky diagonals (``qv_covariance="diag"``) or full lower factors.
    m_v : int
        Number of inducing inputs of the W-layer.

    Returns
    -------
    L : ndarray of shape (Q, m_v, m_v)
    """
    chol = np.asarray(chol, dtype=np.float64)
    if chol.ndim == 2:
        L = np.zeros((chol.shape[0], m_v, m_v))
        idx = np.arange(m_v)
        L[:, idx, idx] = chol
        return L
    return tril(chol)


# --------------------------------------------------------------------------- one row of W

class _Row(NamedTuple):
    factors: object
    beta: np.ndarray
    alpha: np.ndarray


class RowFactors:
    """chol(K_v) of one row q of the W-layer and its KL term (eq. A.1); :meth:`backward_factors`
    adds ``K_v⁻¹``, ``K_v⁻¹μ`` and ``Σ_q`` for the backward pass.

    ``Kv`` already contains the jitter. The pieces below split a row's forward and backward
    passes into the per-input part (:func:`row_marginals`, :func:`row_local_vjp`; the chunk
    engine runs the same algebra as one jitted call per chunk,
    :mod:`~sklearn_lvgp.variational._projection_numba`) and the global part
    (:func:`row_global_vjp`).
    """

    def __init__(self, Kv, mu_q, Lsig):
        self.mu, self.Lsig = mu_q, Lsig
        self.Lv, _ = cholesky_jitter(Kv, 0.0, max_tries=0, name="K_v (projection GP)",
                                     warn=False)
        self.kl = kl_shared_covariance(mu_q, Lsig, self.Lv)
        self.Kinv = self.Kinv_mu = self.Sig = None

    def backward_factors(self):
        """Compute ``K_v⁻¹``, ``K_v⁻¹μ`` and ``Σ_q`` (once per backward pass); returns self."""
        if self.Kinv is None:
            self.Kinv = cho_solve(self.Lv, np.eye(self.Lv.shape[0]))
            self.Kinv_mu = self.Kinv @ self.mu
            self.Sig = self.Lsig @ self.Lsig.T
        return self


def row_marginals(f, Kvw, kdiag):
    """Marginals ``a`` (n, D), ``b`` (n,) of row q of W at the inputs (app. A.2), ``α``, ``β``."""
    beta = solve_lower(f.Lv, Kvw)
    alpha = solve_upper(f.Lv, beta)
    a = alpha.T @ f.mu
    SLa = f.Lsig.T @ alpha
    b = kdiag - np.sum(beta * beta, axis=0) + np.sum(SLa * SLa, axis=0)
    return a, b, alpha, beta


def row_local_vjp(f, alpha, da, db):
    """Per-input part of a row's backward pass (hand-derived): ``αᵀda`` (the μ adjoint's data
    part), ``Ā = (α ∘ db) αᵀ`` (sums over inputs) and the adjoints of ``K_vw`` and k(x, x)."""
    dmu = alpha @ da
    Abar = (alpha * db) @ alpha.T
    KinvSa = f.Kinv @ (f.Sig @ alpha)
    dKvw = f.Kinv_mu @ da.T - 2.0 * (alpha - KinvSa) * db
    return dmu, Abar, dKvw, np.asarray(db, dtype=np.float64).copy()


def row_global_vjp(f, dmu, Abar, dkl):
    """Global part of a row's backward pass from the summed ``αᵀda`` and ``Ā``, with the KL's
    adjoint ``dkl``: the adjoints of ``K_v`` (symmetric), ``μ_q`` and ``L_q`` (lower)."""
    Kinv, Kinv_mu, Sig, Lsig = f.Kinv, f.Kinv_mu, f.Sig, f.Lsig
    # marginals: a = αᵀμ, b = k − diag(K_wv K_v⁻¹ K_vw) + diag(αᵀ Σ α)
    ASK = Abar @ Sig @ Kinv
    dKv = -Kinv_mu @ dmu.T + Abar - ASK - ASK.T
    dLsig = 2.0 * Abar @ Lsig
    # KL(q(V) ‖ p(V)) (eq. A.1)
    if dkl != 0.0:
        kK, kmu, kL = kl_shared_covariance_vjp(dkl, Kinv, Kinv_mu, Sig, Lsig)
        dKv = dKv + kK
        dmu = dmu + kmu
        dLsig = dLsig + kL
    return symmetrise(dKv), dmu, tril(dLsig)


def _row_forward(Kv, Kvw, kdiag, mu_q, Lsig):
    """Marginals of row q of W at the inputs (app. A.2) and the row's KL term (eq. A.1).

    ``Kv`` already contains the jitter. Returns ``a`` (n, D), ``b`` (n,), ``kl`` and a cache.
    """
    f = RowFactors(Kv, mu_q, Lsig)
    a, b, alpha, beta = row_marginals(f, Kvw, kdiag)
    return a, b, f.kl, _Row(f, beta, alpha)


def _row_vjp(da, db, dkl, row):
    """Backward pass of :func:`_row_forward`.

    Returns the adjoints of ``Kv`` (symmetric), ``Kvw``, ``kdiag``, ``mu_q`` and ``Lsig`` (lower
    triangle).
    """
    f = row.factors.backward_factors()
    dmu, Abar, dKvw, dkdiag = row_local_vjp(f, row.alpha, da, db)
    dKv, dmu, dLsig = row_global_vjp(f, dmu, Abar, dkl)
    return dKv, dKvw, dkdiag, dmu, dLsig


# --------------------------------------------------------------------------- the whole layer

class _Projection(NamedTuple):
    X: np.ndarray
    Xi: np.ndarray
    kernels: list
    rows: list
    jitter: float
    diag: bool


class ProjectionVJP(NamedTuple):
    """Adjoints of the projection layer's inputs.

    Attributes
    ----------
    Xi : ndarray of shape (m_v, D)
        Inducing inputs of the W-layer.
    mu : ndarray of shape (Q, m_v, D)
        Means of q(V).
    chol : ndarray of shape (Q, m_v) or (Q, m_v, m_v)
        Cholesky diagonals or lower factors of Σ_q (natural space).
    theta : ndarray of shape (Q, 1 + D)
        Log hyperparameters of the W-kernels.
    """

    Xi: np.ndarray
    mu: np.ndarray
    chol: np.ndarray
    theta: np.ndarray


def projection_forward(X, Xi, mu, chol, kernels, jitter=1e-6):
    """q(W) marginals at the inputs and KL(q(V) ‖ p(V)) (de Souza 2020, app. A.2 and eq. A.1).

    Parameters
    ----------
    X : ndarray of shape (n, D)
        Inputs (standardised).
    Xi : ndarray of shape (m_v, D)
        Inducing inputs Ξ of the W-layer.
    mu : ndarray of shape (Q, m_v, D)
        Means μ_qd of q(v_qd), column d of ``mu[q]``.
    chol : ndarray of shape (Q, m_v) or (Q, m_v, m_v)
        Positive Cholesky diagonal of Σ_q, or its full lower-triangular factor.
    kernels : list of Kernel
        The Q W-kernels ``k_q`` (see :func:`projection_kernels`).
    jitter : float, default=1e-6
        Added to the diagonal of ``k_q(Ξ, Ξ)`` relative to its mean diagonal (κ_q²).

    Returns
    -------
    a : ndarray of shape (n, Q, D)
        Means of ``w_qd(x_i)``.
    b : ndarray of shape (n, Q)
        Variances of ``w_qd(x_i)`` (equal for all d).
    kl : float
        KL(q(V) ‖ p(V)).
    cache : object
        Input of :func:`projection_vjp`.

    Raises
    ------
    CholeskyError
        If some ``K_v`` is not positive definite with the requested jitter.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    Xi = np.ascontiguousarray(Xi, dtype=np.float64)
    mu = np.asarray(mu, dtype=np.float64)
    Q, m_v, D = mu.shape
    n = X.shape[0]
    Ls = chol_factors(chol, m_v)
    a = np.empty((n, Q, D))
    b = np.empty((n, Q))
    kl = 0.0
    rows = []
    for q, k in enumerate(kernels):
        Kv = k.K(Xi)
        Kv[np.diag_indices(m_v)] += jitter * float(np.mean(np.diag(Kv)))
        a[:, q, :], b[:, q], kl_q, row = _row_forward(Kv, k.K(Xi, X), k.Kdiag(X), mu[q], Ls[q])
        kl += kl_q
        rows.append(row)
    return a, b, kl, _Projection(X, Xi, kernels, rows, float(jitter), np.ndim(chol) == 2)


def projection_vjp(da, db, dkl, cache):
    """Backward pass of :func:`projection_forward`.

    Parameters
    ----------
    da : ndarray of shape (n, Q, D)
        Adjoint of ``a``.
    db : ndarray of shape (n, Q)
        Adjoint of ``b``.
    dkl : float
        Adjoint of ``kl`` (−1 for an ELBO that subtracts it).
    cache : object
        From :func:`projection_forward`.

    Returns
    -------
    ProjectionVJP
    """
    c = cache
    Q = len(c.kernels)
    m_v, D = c.Xi.shape
    dXi = np.zeros_like(c.Xi)
    dmu = np.empty((Q, m_v, D))
    dchol = np.empty((Q, m_v)) if c.diag else np.empty((Q, m_v, m_v))
    dtheta = np.empty((Q, 1 + D))
    for q, (k, row) in enumerate(zip(c.kernels, c.rows, strict=True)):
        dKv, dKvw, dkdiag, dmu[q], dL = _row_vjp(da[:, q, :], db[:, q], float(dkl), row)
        v1 = k.vjp(dKv, c.Xi)
        v2 = k.vjp(dKvw, c.Xi, c.X)
        v3 = k.vjp_diag(dkdiag, c.X)
        dXi += v1.X + v2.X
        th = v1.theta + v2.theta + v3.theta
        # the jitter is relative to κ_q², so it moves with log κ_q²
        th[0] += c.jitter * float(k.variance) * float(np.trace(dKv))
        dtheta[q] = th
        dchol[q] = np.diag(dL) if c.diag else dL
    return ProjectionVJP(dXi, dmu, dchol, dtheta)


# --------------------------------------------------------------------------- (a, b) -> (h, η)

def latent_moments(a, b, X):
    """Moments of the latent points ``z_i = W(x_i) x_i`` (de Souza 2020, app. A.2).

    Parameters
    ----------
    a : ndarray of shape (n, Q, D)
        Means of the W entries at each input.
    b : ndarray of shape (n, Q)
        Their variances.
    X : ndarray of shape (n, D)
        Inputs.

    Returns
    -------
    h : ndarray of shape (n, Q)
        ``h_iq = Σ_d a_iqd x_id``.
    eta : ndarray of shape (n, Q)
        ``η_iq = b_iq ‖x_i‖²`` (negative round-off is clipped to 0).
    """
    h = np.einsum("nqd,nd->nq", a, X)
    r = np.sum(X * X, axis=1)
    return h, np.maximum(b, 0.0) * r[:, None]


def latent_covariance(X, Xi, mu, chol, kernels, jitter=1e-6):
    """Joint covariance of the latent points ``z_i = W(x_i) x_i`` across inputs, per dimension.

    Under q(W) the entries ``w_qd`` are independent GPs across (q, d) whose covariance
    ``c_q(x, x') = k_q(x, x') − k_q(x, Ξ) K_v⁻¹ k_q(Ξ, x') + k_q(x, Ξ) K_v⁻¹ Σ_q K_v⁻¹ k_q(Ξ, x')``
    is shared by the D entries of row q (de Souza 2020, app. A.2, at two inputs), so
    ``Cov(z_iq, z_jq') = δ_qq' (x_i · x_j) c_q(x_i, x_j)``; its diagonal is the ``η`` of
    :func:`latent_moments`.

    Parameters
    ----------
    X : ndarray of shape (n, D)
        Inputs (standardised).
    Xi, mu, chol, kernels, jitter
        As in :func:`projection_forward`.

    Returns
    -------
    C : ndarray of shape (Q, n, n)
        ``C[q, i, j] = Cov(z_iq, z_jq)``.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    Xi = np.ascontiguousarray(Xi, dtype=np.float64)
    mu = np.asarray(mu, dtype=np.float64)
    Q, m_v, _ = mu.shape
    Ls = chol_factors(chol, m_v)
    gram = X @ X.T
    C = np.empty((Q, X.shape[0], X.shape[0]))
    for q, k in enumerate(kernels):
        Kv = k.K(Xi)
        Kv[np.diag_indices(m_v)] += jitter * float(np.mean(np.diag(Kv)))
        f = RowFactors(Kv, mu[q], Ls[q])
        beta = solve_lower(f.Lv, k.K(Xi, X))
        SLa = f.Lsig.T @ solve_upper(f.Lv, beta)
        C[q] = gram * (k.K(X) - beta.T @ beta + SLa.T @ SLa)
    return C


def latent_moments_vjp(dh, deta, b, X):
    """Backward pass of :func:`latent_moments`.

    Parameters
    ----------
    dh, deta : ndarray of shape (n, Q)
        Adjoints of ``h`` and ``eta``.
    b : ndarray of shape (n, Q)
        The forward ``b`` (entries clipped in the forward pass get no gradient).
    X : ndarray of shape (n, D)
        Inputs.

    Returns
    -------
    da : ndarray of shape (n, Q, D)
    db : ndarray of shape (n, Q)
    """
    r = np.sum(X * X, axis=1)
    da = dh[:, :, None] * X[:, None, :]
    db = np.where(b >= 0.0, deta * r[:, None], 0.0)
    return da, db


# --------------------------------------------------------------------------- output layer Ψ

def output_kernel(signal_std, Q):
    """The output layer's kernel σ_f²·SRBF as an RBF with fixed unit length scales.

    Parameters
    ----------
    signal_std : float
        σ_f.
    Q : int
        Latent dimension.

    Returns
    -------
    RBF
    """
    return RBF(length_scale=np.ones(Q), variance=float(signal_std) ** 2,
               length_scale_bounds="fixed")


class _OutputPsi(NamedTuple):
    inner: object
    signal_std: float


def output_psi(zeta, h, eta, signal_std, per_point=False, workspace=None):
    """Ψ-statistics of the output layer under ``N(h_i, diag η_i)`` (de Souza 2020, §4.3.1).

    These are the statistics of the scale-equivalent GPLVM form: the RBF kernel with variance
    σ_f² and unit length scales, paired with ``K_u = σ_f² SRBF(ζ, ζ)`` (:func:`output_kernel`).
    Its Ψ1 and Ψ2 are σ_f and σ_f² times those of de Souza (2020, §4.3.1), whose ``K_u`` is
    ``SRBF(ζ, ζ)``; the collapsed bound and the predictive moments are invariant under that
    rescaling (``K_u → c² K_u``, ``Ψ1 → c Ψ1``, ``Ψ2 → c² Ψ2``).

    Parameters
    ----------
    zeta : ndarray of shape (m_u, Q)
        Inducing inputs ζ of the output GP.
    h, eta : ndarray of shape (n, Q)
        Latent means and variances.
    signal_std : float
        σ_f.
    per_point : bool, default=False
        Per-point ``psi0`` and ``Psi2`` (for prediction).
    workspace : Workspace, default=None
        Buffers for the large intermediate arrays
        (:func:`sklearn_lvgp.expectations.psi_statistics`).

    Returns
    -------
    stats : PsiStats
    cache : object
        Input of :func:`output_psi_vjp`.
    """
    kern = output_kernel(signal_std, np.shape(h)[1])
    stats, inner = psi_statistics(kern, zeta, h, eta, "analytic", per_point=per_point,
                                  workspace=workspace)
    return stats, _OutputPsi(inner, float(signal_std))


def output_psi_vjp(dpsi0, dPsi1, dPsi2, cache):
    """Backward pass of :func:`output_psi`.

    Returns
    -------
    dh, deta : ndarray of shape (n, Q)
    dzeta : ndarray of shape (m_u, Q)
    dsignal_std : float
        ``∂/∂σ_f`` (natural space).
    """
    pv = psi_vjp(dpsi0, dPsi1, dPsi2, cache.inner)
    return pv.mu, pv.S, pv.Z, 2.0 * float(pv.theta[0]) / cache.signal_std
