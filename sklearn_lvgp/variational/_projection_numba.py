"""DVMGP's per-input projection passes for a chunk of rows, each one jitted call.

For every row q of the W-layer and every input x_i of the chunk (de Souza 2020, app. A.2):
``K_vw = k_q(Ξ, X)``, ``β = L_v⁻¹ K_vw``, ``α = L_v⁻ᵀ β``, the marginals ``a = αᵀ μ_q`` and
``b = k_q(x, x) − ‖β‖² + ‖L_qᵀ α‖²``, and the latent moments ``h_iq = a_iq · x_i``,
``η_iq = b_iq ‖x_i‖²``. The backward pass turns ``∂L/∂h`` and ``∂L/∂η`` into the chunk's share
of ``αᵀda`` (the μ adjoint), ``Ā = (α ∘ db) αᵀ`` and the W-kernels' adjoints (through the
adjoint of ``K_vw``, ``K_v⁻¹μ da − 2 (α − K_v⁻¹Σ_q α) ∘ db``). The algebra is that of
:func:`~sklearn_lvgp.variational._projection.row_marginals`,
:func:`~sklearn_lvgp.variational._projection.latent_moments` and their backward passes
(those stay: for prediction, for problems below the engine's ``JITTED_MIN_WORK`` and as the
tests' reference); here a chunk's whole pass runs in one call that releases the GIL, so the
chunk engine's threads share no Python glue.

The per-input matrices of row q (``K_vw``, ``β``, ``α``, …) are (m_v, n) C-contiguous, so the
kernel loop and the per-input sums run along the n inputs. The products over the inducing
inputs are numba's ``np.dot`` (BLAS); ``L_v⁻¹`` is applied as a matrix formed once per
evaluation, which avoids compiling triangular-solve variants into these functions (a
triangular inverse is as accurate as the solve here: the results agree with the reference
passes to 1e-10, tested).
"""

import numba as nb
import numpy as np

from ..kernels._kernels_numba import (
    RBF_KIND,
    _profile_row,
    _scaled_sq_dist_row,
    stationary_vjp_products,
)

__all__ = ["chunk_latent_forward", "chunk_latent_backward"]


@nb.njit(inline="always")
def _squared_norms(X):
    r = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        acc = 0.0
        for d in range(X.shape[1]):
            acc += X[i, d] * X[i, d]
        r[i] = acc
    return r


@nb.njit(inline="always")
def _transposed(X):
    XT = np.empty((X.shape[1], X.shape[0]))
    for i in range(X.shape[0]):
        for d in range(X.shape[1]):
            XT[d, i] = X[i, d]
    return XT


@nb.njit(cache=True, nogil=True)
def chunk_latent_forward(X, Xi, inv_ls, variance, Lv_inv, Ls, mu):
    """Latent moments of a chunk's inputs under q(W), and what the backward pass needs.

    Parameters
    ----------
    X : ndarray of shape (n, D)
        The chunk's inputs.
    Xi : ndarray of shape (m_v, D)
        Inducing inputs Ξ of the W-layer.
    inv_ls : ndarray of shape (Q, D)
        Inverse length scales of the W-kernels.
    variance : ndarray of shape (Q,)
        Their variances κ_q².
    Lv_inv : ndarray of shape (Q, m_v, m_v)
        ``chol(K_v,q)⁻¹`` (jitter included).
    Ls : ndarray of shape (Q, m_v, m_v)
        Lower factors ``L_q`` of Σ_q = L_q L_qᵀ.
    mu : ndarray of shape (Q, m_v, D)
        Means μ_q of q(V).

    Returns
    -------
    h, eta : ndarray of shape (n, Q)
        Latent means and variances (``η`` with negative round-off clipped to 0).
    b : ndarray of shape (n, Q)
        The unclipped marginal variances of the W entries.
    Kvw, alpha : ndarray of shape (Q, m_v, n)
        ``k_q(Ξ, X)`` and ``α = K_v,q⁻¹ k_q(Ξ, X)`` per row.
    """
    n, D = X.shape
    Q, m_v = Lv_inv.shape[0], Lv_inv.shape[1]
    h = np.empty((n, Q))
    eta = np.empty((n, Q))
    b = np.empty((n, Q))
    Kvw = np.empty((Q, m_v, n))
    alpha = np.empty((Q, m_v, n))
    r = _squared_norms(X)
    XT = _transposed(X)
    for q in range(Q):
        K = Kvw[q]
        A = alpha[q]
        for j in range(m_v):
            _scaled_sq_dist_row(Xi, j, XT, inv_ls[q], K[j])
            _profile_row(RBF_KIND, K[j], variance[q], 1.0)
        beta = np.dot(Lv_inv[q], K)  # β = L_v⁻¹ K_vw
        alpha_q = np.dot(Lv_inv[q].T, beta)  # α = L_v⁻ᵀ β
        for j in range(m_v):
            for i in range(n):
                A[j, i] = alpha_q[j, i]
        SLa = np.dot(Ls[q].T, A)  # L_qᵀ α
        MX = np.dot(mu[q], XT)  # column i: μ_q x_i
        for i in range(n):
            h[i, q] = 0.0
            b[i, q] = variance[q]
        # h_iq = Σ_d (αᵀ μ_q)_id x_id = Σ_j α_ji (μ_q x_i)_j; b = k(x, x) − ‖β‖² + ‖L_qᵀ α‖²
        for j in range(m_v):
            for i in range(n):
                h[i, q] += A[j, i] * MX[j, i]
                b[i, q] += SLa[j, i] * SLa[j, i] - beta[j, i] * beta[j, i]
        for i in range(n):
            eta[i, q] = max(b[i, q], 0.0) * r[i]
    return h, eta, b, Kvw, alpha


@nb.njit(cache=True, nogil=True)
def chunk_latent_backward(dh, deta, X, Xi, inv_ls, variance, b, Kvw, alpha, Kinv_mu, SigKinv):
    """The chunk's share of the W-layer adjoints from ``∂L/∂h`` and ``∂L/∂η``.

    Parameters
    ----------
    dh, deta : ndarray of shape (n, Q)
        Adjoints of the latent moments.
    X : ndarray of shape (n, D)
        The chunk's inputs.
    Xi : ndarray of shape (m_v, D)
        Inducing inputs Ξ.
    inv_ls, variance
        As in :func:`chunk_latent_forward`.
    b, Kvw, alpha
        Its outputs.
    Kinv_mu : ndarray of shape (Q, m_v, D)
        ``K_v,q⁻¹ μ_q``.
    SigKinv : ndarray of shape (Q, m_v, m_v)
        ``Σ_q K_v,q⁻¹``.

    Returns
    -------
    dmu : ndarray of shape (Q, m_v, D)
        ``α da_q`` per row (the data part of the μ adjoint).
    Abar : ndarray of shape (Q, m_v, m_v)
        ``(α ∘ db_q) αᵀ`` per row.
    dXi : ndarray of shape (m_v, D)
        Adjoint of Ξ through ``K_vw`` (all rows).
    dtheta : ndarray of shape (Q, 1 + D)
        Adjoints of ``log κ_q²`` and ``log ℓ_qd`` through ``K_vw`` and ``k_q(x, x)``.
    """
    n, D = X.shape
    Q, m_v = Kvw.shape[0], Kvw.shape[1]
    r = _squared_norms(X)
    XT = _transposed(X)
    dmu = np.empty((Q, m_v, D))
    Abar = np.empty((Q, m_v, m_v))
    dXi = np.zeros((m_v, D))
    dtheta = np.empty((Q, 1 + D))
    db = np.empty(n)
    G = np.empty((m_v, n))
    H = np.empty((m_v, n))
    C = np.empty((m_v, n))
    for q in range(Q):
        A = alpha[q]
        K = Kvw[q]
        P = np.dot(Kinv_mu[q], XT)  # column i: K_v⁻¹ μ_q x_i
        SA = np.dot(SigKinv[q].T, A)  # K_v⁻¹ Σ_q α
        dkdiag = 0.0
        for i in range(n):
            db[i] = deta[i, q] * r[i] if b[i, q] >= 0.0 else 0.0
            dkdiag += db[i]
        for j in range(m_v):
            for i in range(n):
                a = A[j, i]
                g = dh[i, q]
                G[j, i] = a * g
                H[j, i] = a * db[i]
                # C = −dK ∘ K, the RBF's weights for ``stationary_vjp_products``
                C[j, i] = -(g * P[j, i] - 2.0 * (a - SA[j, i]) * db[i]) * K[j, i]
        dmu_q = np.dot(G, X)  # (α ∘ dh) X = α da_q
        Abar_q = np.dot(H, A.T)  # (α ∘ db) αᵀ
        dXi_q, _, dlogls, total = stationary_vjp_products(C, Xi, X, inv_ls[q])
        for j in range(m_v):
            for d in range(D):
                dmu[q, j, d] = dmu_q[j, d]
                dXi[j, d] += dXi_q[j, d]
            for k in range(m_v):
                Abar[q, j, k] = Abar_q[j, k]
        dtheta[q, 0] = -total + variance[q] * dkdiag
        for d in range(D):
            dtheta[q, 1 + d] = dlogls[d]
    return dmu, Abar, dXi, dtheta
