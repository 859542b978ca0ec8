"""Joint predictive covariance of GP-CDE targets at several inputs.

With ``h = x`` (no input projection) and independent latent covariates ``w_i ~ p(w)`` per row,
two targets share only the GP ``f``; for rows ``i != j`` the covariance of output ``d`` is

    Cov(y_id, y_jd) = E_{w_i, w_j}[ k_d((x_i, w_i), (x_j, w_j)) ]

with ``k_d`` the posterior covariance of the latent GP under ``q(u_d)``: the covariance of the
means vanishes because ``w_i`` and ``w_j`` are independent. Whitened,
``k_d(p, q) = k(p, q) - a_p^T a_q + c_p^T c_q`` with ``a = L^{-1} k(Z, .)`` and
``c = R_d^T a`` (``q(v_d) = N(m_d, R_d R_d^T)``); unwhitened, ``c = R_d^T L^{-T} a``. The two
inner-product terms factorise over the quadrature nodes, so only ``k`` needs the double sum.
The diagonal is the mixture variance of each row (law of total variance, noise included).
"""

import numpy as np

from .._core.blocks import row_blocks
from .._core.linalg import solve_lower, solve_upper
from . import prior_factor

__all__ = ["latent_cross_covariance"]

#: Kernel entries per block of the double node sum (bounds the temporaries to ~128 MB).
_BLOCK_ENTRIES = 2 ** 24


def latent_cross_covariance(kernel, Z, q_sqrt, jitter, whiten, Xs, nodes, log_weights):
    """Off-diagonal covariances ``E_{w_i, w_j}[k_d((x_i, w_i), (x_j, w_j))]`` of every output.

    Parameters
    ----------
    kernel : Kernel
        Fitted kernel on ``[x, w]``.
    Z : ndarray of shape (M, D_x + D_w)
        Inducing inputs.
    q_sqrt : ndarray of shape (L, M, M)
        Lower-triangular square roots of ``q(u)`` (or of the whitened ``q(v)``).
    jitter : float
        Relative jitter of ``K_uu``.
    whiten : bool
        Whitened parameterisation.
    Xs : ndarray of shape (n, D_x)
        Standardised inputs.
    nodes : ndarray of shape (J, D_w)
        Latent covariate nodes (quadrature or prior draws).
    log_weights : ndarray of shape (J,)
        Their log weights.

    Returns
    -------
    cov : ndarray of shape (n, n, L)
        Covariances in standardised units; the diagonal is left to the caller.
    """
    n, J = Xs.shape[0], nodes.shape[0]
    w = np.exp(log_weights)
    points = np.hstack([np.repeat(Xs, J, axis=0), np.tile(nodes, (n, 1))])  # row i*J + a
    Lu = prior_factor(kernel, Z, jitter).Lu
    A = solve_lower(Lu, kernel.K(Z, points))  # (M, nJ)
    B = A if whiten else solve_upper(Lu, A)

    def node_mean(V):  # sum_a w_a V[:, i*J + a] -> (., n)
        return np.einsum("mia,a->mi", V.reshape(V.shape[0], n, J), w)

    a_bar = node_mean(A)
    L = q_sqrt.shape[0]
    cov = np.empty((n, n, L))
    k_bar = np.empty((n, n))
    for block in row_blocks(n, J * J * n, _BLOCK_ENTRIES):
        start, stop = block.start, block.stop
        K = kernel.K(points[start * J:stop * J], points)  # (bJ, nJ)
        K = K.reshape(stop - start, J, n, J)
        k_bar[start:stop] = np.einsum("iajb,a,b->ij", K, w, w)
    shared = k_bar - a_bar.T @ a_bar
    for d in range(L):
        c_bar = node_mean(q_sqrt[d].T @ B)
        cov[:, :, d] = shared + c_bar.T @ c_bar
    return cov
