"""Natural-gradient steps for ``q(u)`` of an SVGP layer (Salimbeni 2020, ch. 3).

With natural parameters ``theta1 = S^{-1} m``, ``Theta2 = -S^{-1}/2`` and expectation parameters
``eta = (m, S + m m^T)``, the natural gradient in ``theta`` is the ordinary gradient in ``eta``
(§3.2.2), so a step is ``theta <- theta + gamma dL/deta``.
"""

import numpy as np

from .._core.linalg import cho_solve, cholesky_jitter, solve_lower, tril

__all__ = ["natural_params", "from_natural_params", "natgrad_step",
           "gaussian_natgrad_step", "expectation_gradients"]


def natural_params(q_mu, q_sqrt):
    """``(theta1, Theta2)`` per output column.

    Parameters
    ----------
    q_mu : ndarray of shape (M, D)
    q_sqrt : ndarray of shape (D, M, M)

    Returns
    -------
    theta1 : ndarray of shape (M, D)
    Theta2 : ndarray of shape (D, M, M)
    """
    M, D = q_mu.shape
    theta1 = np.empty_like(q_mu)
    Theta2 = np.empty((D, M, M))
    for d in range(D):
        L = tril(q_sqrt[d])
        theta1[:, d] = cho_solve(L, q_mu[:, d])
        Linv = solve_lower(L, np.eye(M))
        Theta2[d] = -0.5 * (Linv.T @ Linv)
    return theta1, Theta2


def from_natural_params(theta1, Theta2, jitter=0.0):
    """``(q_mu, q_sqrt)`` from natural parameters.

    Parameters
    ----------
    theta1 : ndarray of shape (M, D)
    Theta2 : ndarray of shape (D, M, M)
        Must be negative definite.
    jitter : float, default=0.0
        Relative jitter for the factorisations (escalated with a warning if needed).

    Returns
    -------
    q_mu : ndarray of shape (M, D)
    q_sqrt : ndarray of shape (D, M, M)
    """
    M, D = theta1.shape
    q_mu = np.empty_like(theta1)
    q_sqrt = np.empty((D, M, M))
    for d in range(D):
        prec = -2.0 * Theta2[d]
        prec = 0.5 * (prec + prec.T)
        Lp, _ = cholesky_jitter(prec, jitter, name="q(u) precision", parameter="natgrad_gamma",
                                increase=False)
        S = cho_solve(Lp, np.eye(M))
        q_mu[:, d] = cho_solve(Lp, theta1[:, d])
        q_sqrt[d], _ = cholesky_jitter(0.5 * (S + S.T), jitter, name="q(u) covariance",
                                       parameter="natgrad_gamma", increase=False)
    return q_mu, q_sqrt


def expectation_gradients(q_mu, dL_dm, G):
    """``dL/deta`` from the gradients in ``(m, S)`` (chain rule).

    Parameters
    ----------
    q_mu : ndarray of shape (M, D)
        Current means.
    dL_dm : ndarray of shape (M, D)
        ``dL/dm`` (total, KL included).
    G : ndarray of shape (D, M, M)
        Symmetric ``dL/dS`` (total, KL included).

    Returns
    -------
    deta1 : ndarray of shape (M, D)
        ``dL/dm - 2 G m``.
    deta2 : ndarray of shape (D, M, M)
        ``G``.
    """
    deta1 = dL_dm - 2.0 * np.einsum("dij,jd->id", G, q_mu)
    return deta1, G


def natgrad_step(q_mu, q_sqrt, dL_dm, G, gamma, jitter=0.0):
    """Generic natural-gradient step ``theta <- theta + gamma dL/deta`` (Salimbeni 2020, §3.2.2).

    Parameters
    ----------
    q_mu : ndarray of shape (M, D)
    q_sqrt : ndarray of shape (D, M, M)
    dL_dm : ndarray of shape (M, D)
        Total ``dL/dm``.
    G : ndarray of shape (D, M, M)
        Total symmetric ``dL/dS``.
    gamma : float
        Step size.
    jitter : float, default=0.0
        Relative jitter for the back-conversion.

    Returns
    -------
    q_mu, q_sqrt : ndarray
        Updated variational parameters.
    """
    theta1, Theta2 = natural_params(q_mu, q_sqrt)
    deta1, deta2 = expectation_gradients(q_mu, dL_dm, G)
    return from_natural_params(theta1 + gamma * deta1, Theta2 + gamma * deta2, jitter)


def gaussian_natgrad_step(q_mu, q_sqrt, A, residuals, point_weights, noise_variance, gamma,
                          Kuu_chol=None, whiten=True, jitter=0.0):
    """Closed-form natural-gradient step for a Gaussian-likelihood layer.

    ``theta <- (1 - gamma) theta + gamma theta_hat`` with
    ``theta_hat_1 = sum_p w_p a_p r_p / s2`` and
    ``Theta_hat_2 = -(Lambda_p + sum_p w_p a_p a_p^T / s2) / 2``. With one layer, full batch,
    unit weights and ``gamma = 1`` this is the optimal ``q(u)`` of Titsias (2009).

    Parameters
    ----------
    q_mu : ndarray of shape (M, D)
    q_sqrt : ndarray of shape (D, M, M)
    A : ndarray of shape (M, P)
        Projected features at this step's inputs (``L_u^{-1} K_uf`` whitened, ``K_uu^{-1} K_uf``
        unwhitened): the ``A`` of :func:`~._layer.marginals`.
    residuals : ndarray of shape (P, D)
        ``y - mean_function(h)``.
    point_weights : ndarray of shape (P,)
        Weight of each stacked point in the data term (``N / (|B| S)`` for Monte Carlo).
    noise_variance : float
        Likelihood variance.
    gamma : float
        Step size in (0, 1].
    Kuu_chol : ndarray of shape (M, M) or None
        Cholesky factor of ``K_uu`` (unwhitened prior precision ``K_uu^{-1}``).
    whiten : bool, default=True
        Whitened parameterisation (prior precision ``I``).
    jitter : float, default=0.0
        Relative jitter for the back-conversion.

    Returns
    -------
    q_mu, q_sqrt : ndarray
        Updated variational parameters.
    """
    return natgrad_from_statistics(
        q_mu, q_sqrt, *natgrad_statistics(A, residuals, point_weights, noise_variance), gamma,
        Kuu_chol, whiten, jitter)


def natgrad_statistics(A, residuals, point_weights, noise_variance):
    """The data sums of :func:`gaussian_natgrad_step`: ``sum_p w_p a_p r_p^T / s2`` and
    ``sum_p w_p a_p a_p^T / s2``; sums over disjoint sets of points add up to those of their
    union (the step on rows held in several places).

    Parameters
    ----------
    A, residuals, point_weights, noise_variance
        As in :func:`gaussian_natgrad_step`.

    Returns
    -------
    AwR : ndarray of shape (M, D)
    AwA : ndarray of shape (M, M)
    """
    Aw = A * (point_weights / noise_variance)
    return Aw @ residuals, Aw @ A.T


def natgrad_from_statistics(q_mu, q_sqrt, AwR, AwA, gamma, Kuu_chol=None, whiten=True,
                            jitter=0.0):
    """:func:`gaussian_natgrad_step` from the data sums of :func:`natgrad_statistics`.

    ``AwA`` may also hold one matrix per output, ``(D, M, M)``: the sums of a non-Gaussian
    likelihood (:func:`sklearn_lvgp.bounds._dsvi_likelihood.natgrad_sums`).
    """
    M = AwA.shape[-1]
    prior_prec = np.eye(M) if whiten else cho_solve(Kuu_chol, np.eye(M))
    hat2 = -0.5 * (prior_prec + AwA)
    theta1, Theta2 = natural_params(q_mu, q_sqrt)
    new1 = (1.0 - gamma) * theta1 + gamma * AwR
    new2 = (1.0 - gamma) * Theta2 + gamma * (hat2 if hat2.ndim == 3 else hat2[None])
    return from_natural_params(new1, new2, jitter)
