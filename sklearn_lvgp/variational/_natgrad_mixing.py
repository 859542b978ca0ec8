"""Explicit natural-gradient step for ``q(u)`` of the GPCDE output layer.

Natural gradients for ``q(u)`` as in Salimbeni (2020, §4.2, "Natural Gradient"): the natural
gradient in the natural parameters is the ordinary gradient in the expectation parameters (§3.2.2),
which for this Gaussian likelihood gives the explicit step below.

Sufficient statistics are accumulated over the weighted evaluation points ``t_nj`` (weights
``beta_nj``: ``1/S`` for Monte Carlo, sigma-point weights, quadrature responsibilities), then

``theta1_hat_e = (pi_e / s2) sum beta a ytilde_e``,
``Theta2_hat_e = -(Lambda_p + (pi_e / s2) sum beta a a^T) / 2``,
``theta <- (1 - gamma) theta + gamma theta_hat``,

with the parameter conversions of :mod:`sklearn_lvgp.variational._natgrad`.
"""

import numpy as np

from .._core.linalg import cho_solve
from ..likelihoods._mixed_gaussian import latent_pi
from . import from_natural_params, natural_params

__all__ = ["natgrad_statistics", "mixing_natgrad_update"]


def natgrad_statistics(A, Y, mu, point_weights, P):
    """``(sum beta a ytilde^T, sum beta a a^T)`` over one chunk of evaluation points.

    Parameters
    ----------
    A : ndarray of shape (M, n)
        Projected features at the points (``MarginalsCache.A``).
    Y : ndarray of shape (n, D_y)
        Targets at the points.
    mu : ndarray of shape (n, L)
        Current marginal means (for the partial residual targets with mixing).
    point_weights : ndarray of shape (n,)
        ``beta`` times ``N / |B|``.
    P : ndarray of shape (L, D_y) or None
        Output mixing.

    Returns
    -------
    T1 : ndarray of shape (M, L)
    G : ndarray of shape (M, M)
    """
    if P is None:
        ytil = Y
    else:
        r = Y - mu @ P
        ytil = (r @ P.T) / latent_pi(P, mu.shape[1]) + mu
    Aw = A * point_weights
    return Aw @ ytil, Aw @ A.T


def mixing_natgrad_update(q_mu, q_sqrt, T1, G, pi, noise_variance, gamma, Lu=None, whiten=True,
                          jitter=0.0):
    """Natural-gradient update of every latent's ``q(u_e)`` from the statistics.

    Parameters
    ----------
    q_mu : ndarray of shape (M, L)
    q_sqrt : ndarray of shape (L, M, M)
    T1, G : ndarray
        From :func:`natgrad_statistics` (summed over chunks).
    pi : ndarray of shape (L,)
        ``sum_d P_ed^2``.
    noise_variance : float
    gamma : float
        Step size in (0, 1].
    Lu : ndarray of shape (M, M) or None
        Cholesky factor of ``K_uu`` (unwhitened prior precision ``K_uu^{-1}``).
    whiten : bool, default=True
    jitter : float, default=0.0
        Relative jitter for the back-conversion.

    Returns
    -------
    q_mu, q_sqrt : ndarray
    """
    M, L = q_mu.shape
    s2 = float(noise_variance)
    prior_prec = np.eye(M) if whiten else cho_solve(Lu, np.eye(M))
    hat1 = T1 * (pi / s2)[None, :]
    hat2 = -0.5 * (prior_prec[None] + (pi / s2)[:, None, None] * G[None])
    theta1, Theta2 = natural_params(q_mu, q_sqrt)
    return from_natural_params((1.0 - gamma) * theta1 + gamma * hat1,
                               (1.0 - gamma) * Theta2 + gamma * hat2, jitter)
