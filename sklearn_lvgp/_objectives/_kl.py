"""KL divergences of diagonal Gaussians and their gradients (spec §2.1)."""

import numba as nb
import numpy as np

__all__ = ["gaussian_kl", "gaussian_kl_vjp", "standard_normal_kl_and_vjp"]


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


def standard_normal_kl_and_vjp(mu, S):
    """``KL(N(mu, diag S) ‖ N(0, I))`` summed over all entries, and its gradients.

    The prior of the GPLVM latents (spec §2.1): :func:`gaussian_kl` and :func:`gaussian_kl_vjp`
    with their defaults, in one pass after numpy's ``log`` (vectorised; the C library's scalar
    ``log`` inside the jitted loop cost 30 µs of 35 at N = 1000, Q = 5).

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
