"""KL divergences of diagonal Gaussians and their gradients: the package's one home for them.

``KL(N(μ, diag S) ‖ N(m0, diag v0)) = ½ Σ [(μ − m0)²/v0 + S/v0 − log S + log v0 − 1]``
(e.g. Titsias & Lawrence 2010, eq. 14 for the GPLVM latents). The latent points of the
GPLVM are parametrised by their variances ``S``; those of LDGD and GPCDE, and GPCDE's
projection ``q(A)``, by standard deviations ``σ`` (:func:`gaussian_kl_std`).
"""

import numba as nb
import numpy as np

__all__ = ["gaussian_kl", "gaussian_kl_vjp", "gaussian_kl_std", "gaussian_kl_std_vjp",
           "standard_normal_kl_and_vjp"]


def gaussian_kl(mu, S, prior_mean=0.0, prior_var=1.0, per_row=False):
    """KL(N(mu, diag S) ‖ N(m0, diag v0)), summed over all entries (or per row).

    Parameters
    ----------
    mu, S : ndarray of shape (N, Q)
        Means and variances (``S > 0``).
    prior_mean, prior_var : float or array broadcastable to (N, Q), default=0, 1
        Prior moments.

    per_row : bool, default=False
        Return one value per row (per data point) instead of the total.

    Returns
    -------
    kl : float or ndarray of shape (N,)
        The divergence.
    """
    d = mu - prior_mean
    terms = d * d / prior_var + S / prior_var - np.log(S) + np.log(prior_var) - 1.0
    return 0.5 * np.sum(terms, axis=1) if per_row else 0.5 * float(np.sum(terms))


def gaussian_kl_vjp(mu, S, prior_mean=0.0, prior_var=1.0):
    """Gradients of :func:`gaussian_kl` wrt ``mu`` and ``S``.

    Returns
    -------
    dmu, dS : ndarray of shape (N, Q)
        ``(mu - m0)/v0`` and ``(1/v0 - 1/S)/2``.
    """
    v0 = np.broadcast_to(np.asarray(prior_var, dtype=np.float64), np.shape(mu))
    return (mu - prior_mean) / v0, 0.5 * (1.0 / v0 - 1.0 / S)


def gaussian_kl_std(mu, sigma, prior_var=1.0, per_row=False):
    """:func:`gaussian_kl` of ``N(mu, diag sigma²)`` against ``N(0, prior_var)``.

    Parameters
    ----------
    mu, sigma : ndarray of shape (N, Q)
        Means and standard deviations (``sigma > 0``).
    prior_var : float, default=1.0
        Variance of the zero-mean prior.
    per_row : bool, default=False
        Return one value per row instead of the total.

    Returns
    -------
    kl : float or ndarray of shape (N,)
    """
    v0 = float(prior_var)
    terms = (mu * mu + sigma * sigma) / v0 - 2.0 * np.log(sigma) + np.log(v0) - 1.0
    return 0.5 * np.sum(terms, axis=1) if per_row else 0.5 * float(np.sum(terms))


def gaussian_kl_std_vjp(mu, sigma, prior_var=1.0):
    """Gradients of :func:`gaussian_kl_std`: ``mu/v0`` and ``sigma/v0 − 1/sigma``.

    Multiply by the upstream adjoint (a scalar, or one value per row as ``w[:, None]``).
    """
    v0 = float(prior_var)
    return mu / v0, sigma / v0 - 1.0 / sigma


def standard_normal_kl_and_vjp(mu, S):
    """``KL(N(mu, diag S) ‖ N(0, I))`` summed over all entries, and its gradients.

    The prior of the GPLVM latents: :func:`gaussian_kl` and :func:`gaussian_kl_vjp`
    with their defaults, in one pass after numpy's ``log`` (vectorised; the C library's scalar
    ``log`` inside the jitted loop would dominate the pass).

    Returns
    -------
    kl : float
        The divergence.
    dmu, dS : ndarray of shape (N, Q)
        ``mu`` and ``(1 - 1/S)/2``.
    """
    return _standard_normal_kl_pass(mu, S, np.log(S))


@nb.njit(cache=True, nogil=True)
def _standard_normal_kl_pass(mu, S, logS):
    N, Q = mu.shape
    dmu = np.empty((N, Q))
    dS = np.empty((N, Q))
    total = 0.0
    for n in range(N):
        for q in range(Q):
            m = mu[n, q]
            s = S[n, q]
            total += m * m + s - logS[n, q] - 1.0
            dmu[n, q] = m
            dS[n, q] = 0.5 * (1.0 - 1.0 / s)
    return 0.5 * total, dmu, dS
