"""Joint predictive moments of a collapsed sparse GP at jointly Gaussian test inputs.

For the RBF kernel with unit length scales and variance ``s`` (the output layer of
:class:`~sklearn_lvgp.DVMGP`, :func:`~sklearn_lvgp.variational._projection.output_kernel`) and
test inputs ``h_1, ..., h_n`` that are jointly Gaussian with independent dimensions, the
predictive ``f(h_i)`` has mean ``ψ1_iᵀ G`` and, for every pair,

    Cov(f_i, f_j) = E[k(h_i, h_j)] − ⟨K_u⁻¹ − σ² A⁻¹, Ψ_ij⟩ + Gᵀ Ψ_ij G − E[f_i] E[f_j],

with ``Ψ_ij[m, l] = E[k(z_m, h_i) k(z_l, h_j)]`` under the joint law of ``(h_i, h_j)``: the
uncertain-input moments of Girard et al. (2003) extended from one test point to pairs. For
``i = j`` these are the per-point moments of
:func:`~sklearn_lvgp.bounds._collapsed_global.predictive_moments`. Per dimension, with
``(h_i, h_j) ~ N((m_i, m_j), [[s_i, c], [c, s_j]])``,

    E[exp(−½(h_i − a)² − ½(h_j − b)²)] = det^(−½) exp(−½ ((1 + s_j) δ_a² − 2 c δ_a δ_b
                                          + (1 + s_i) δ_b²) / det),

``det = (1 + s_i)(1 + s_j) − c²``, ``δ_a = m_i − a``, ``δ_b = m_j − b``; and
``E[exp(−½(h_i − h_j)²)] = (1 + v)^(−½) exp(−½ (m_i − m_j)² / (1 + v))``,
``v = s_i + s_j − 2c``.
"""

import numpy as np

from ._collapsed_global import _weight_matrices

__all__ = ["rbf_joint_moments"]


def rbf_joint_moments(post, Z, variance, h, C):
    """Mean and joint covariance of f at jointly Gaussian inputs (unit-length-scale RBF).

    Parameters
    ----------
    post : CollapsedPosterior
        The fitted collapsed posterior (``K_u`` of the same kernel at ``Z``).
    Z : ndarray of shape (M, Q)
        Inducing inputs.
    variance : float
        Kernel variance ``s``.
    h : ndarray of shape (n, Q)
        Means of the test inputs.
    C : ndarray of shape (Q, n, n)
        Their covariance per dimension (dimensions independent).

    Returns
    -------
    mean : ndarray of shape (n, D)
        E[f].
    cov : ndarray of shape (n, n, D)
        Cov(f_i, f_j) per output (noise not included), symmetric.
    """
    h = np.asarray(h, dtype=np.float64)
    n, Q = h.shape
    G = post.G
    Kinv, Cs = _weight_matrices(post)
    W = Kinv - Cs
    S = np.stack([np.diag(C[q]) for q in range(Q)], axis=1)  # (n, Q) variances
    d = h[:, None, :] - Z[None, :, :]  # (n, M, Q)
    psi1 = variance * np.exp(np.sum(-0.5 * np.log1p(S)[:, None, :]
                                    - 0.5 * d * d / (1.0 + S)[:, None, :], axis=2))
    mean = psi1 @ G
    cov = np.empty((n, n, G.shape[1]))
    for i in range(n):
        c = C[:, i, :].T  # (n, Q): Cov(h_iq, h_jq)
        det = (1.0 + S[i])[None, :] * (1.0 + S) - c * c  # (n, Q)
        log_psi = -0.5 * np.sum(np.log(det), axis=1)[:, None, None]  # (n, 1, 1)
        for q in range(Q):
            da = d[i, :, q]  # (M,)
            db = d[:, :, q]  # (n, M)
            log_psi = log_psi - 0.5 * (
                (1.0 + S[:, q])[:, None, None] * (da * da)[None, :, None]
                - 2.0 * c[:, q][:, None, None] * da[None, :, None] * db[:, None, :]
                + (1.0 + S[i, q]) * (db * db)[:, None, :]) / det[:, q][:, None, None]
        Psi = variance ** 2 * np.exp(log_psi)  # (n, M, M): E[k(z_m, h_i) k(z_l, h_j)]
        v = S[i][None, :] + S - 2.0 * c
        diff = h[i][None, :] - h
        ekk = variance * np.exp(np.sum(-0.5 * np.log1p(v) - 0.5 * diff * diff / (1.0 + v),
                                       axis=1))
        shared = ekk - np.einsum("jml,ml->j", Psi, W)
        cov[i] = (shared[:, None] + np.einsum("md,jml,ld->jd", G, Psi, G)
                  - mean[i][None, :] * mean)
    return mean, 0.5 * (cov + cov.transpose(1, 0, 2))
