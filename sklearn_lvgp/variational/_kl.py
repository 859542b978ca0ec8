"""Every Gaussian KL divergence of the package, each with its backward pass beside it.

Three families, each in the parametrisation its users optimise:

* diagonal Gaussians against a diagonal Gaussian prior,
  ``KL(N(μ, diag S) ‖ N(m0, diag v0)) = ½ Σ [(μ − m0)²/v0 + S/v0 − log S + log v0 − 1]``
  (e.g. Titsias & Lawrence 2010, eq. 14 for the GPLVM latents): in variances ``S``
  (:func:`gaussian_kl`), in standard deviations ``σ`` (:func:`gaussian_kl_std`; LDGD's and
  GP-CDE's latent points, GP-CDE's projection ``q(A)``; :func:`standard_normal_kl_std` for the
  latent covariates of the latent-variable deep GP), and the standard-normal prior of the GPLVM
  latents in one jitted pass (:func:`standard_normal_kl_and_vjp`);
* an SVGP layer's ``KL(q(u) ‖ p(u))`` with ``q(u_d) = N(m_d, L_d L_dᵀ)`` per output column,
  whitened (prior ``N(0, I)``) or unwhitened (prior ``N(0, K_uu)``, ``K_uu = L_u L_uᵀ``)
  (Salimbeni 2020, eq. 1.24) (:func:`kl_divergence`);
* the same unwhitened divergence when one covariance ``Σ = L Lᵀ`` is shared by all ``D``
  columns, as in DVMGP's projection layer (de Souza 2020, eq. A.1)
  (:func:`kl_shared_covariance`).

Forms that could be computed by one another are kept apart where they round differently:
:func:`standard_normal_kl_and_vjp` sums serially (a jitted loop) where :func:`gaussian_kl`
sums pairwise (numpy), :func:`standard_normal_kl_std` groups the terms of
:func:`gaussian_kl_std` differently, and :func:`kl_shared_covariance` forms the shared trace and
log-determinant once instead of ``D`` times; each keeps the bits of the fits that use it.
"""

from typing import NamedTuple

import numba as nb
import numpy as np

from .._core.linalg import cho_solve, logdet_from_chol, solve_lower, tril

__all__ = ["gaussian_kl", "gaussian_kl_vjp", "gaussian_kl_std", "gaussian_kl_std_vjp",
           "standard_normal_kl_std", "standard_normal_kl_and_vjp", "KLCache", "KLVJP",
           "kl_divergence", "kl_divergence_vjp", "kl_shared_covariance",
           "kl_shared_covariance_vjp"]


# ------------------------------------------------------------------ diagonal Gaussians

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


def standard_normal_kl_std(mu, sigma):
    """:func:`gaussian_kl_std` against ``N(0, I)``, summed over all entries, with the terms
    grouped as ``(mu² + sigma² − 1) − 2 log sigma`` (the latent covariates' KL of the
    latent-variable deep GP, whose recorded bounds keep these bits). Its gradients are
    :func:`gaussian_kl_std_vjp` with ``prior_var=1``.

    Parameters
    ----------
    mu, sigma : ndarray of shape (N, Q)
        Means and standard deviations (``sigma > 0``).

    Returns
    -------
    kl : float
    """
    return 0.5 * float(np.sum(mu * mu + sigma * sigma - 1.0 - 2.0 * np.log(sigma)))


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


# ------------------------------------------------- q(u) of an SVGP layer, per output column

class KLCache(NamedTuple):
    """Forward quantities reused by :func:`kl_divergence_vjp`."""

    q_mu: np.ndarray
    q_sqrt: np.ndarray
    Lu: np.ndarray | None
    whiten: bool


class KLVJP(NamedTuple):
    """Adjoints of the KL term.

    Attributes
    ----------
    q_mu : ndarray of shape (M, D)
    q_sqrt : ndarray of shape (D, M, M)
        Lower triangle only.
    Kuu : ndarray of shape (M, M) or None
        Symmetric adjoint of the (jittered) ``K_uu`` (``None`` when whitened).
    """

    q_mu: np.ndarray
    q_sqrt: np.ndarray
    Kuu: np.ndarray | None


def kl_divergence(q_mu, q_sqrt, Lu=None, whiten=True):
    """KL divergence summed over output columns.

    Parameters
    ----------
    q_mu : ndarray of shape (M, D)
        Variational means.
    q_sqrt : ndarray of shape (D, M, M)
        Lower-triangular square roots of the variational covariances.
    Lu : ndarray of shape (M, M) or None
        Cholesky factor of ``K_uu`` (required when ``whiten=False``).
    whiten : bool, default=True
        Whitened parameterisation (prior ``N(0, I)``).

    Returns
    -------
    kl : float
        ``sum_d KL(q(u_d) ‖ p(u_d))``.
    cache : KLCache
        Input of :func:`kl_divergence_vjp`.
    """
    M, D = q_mu.shape
    Ls = tril(q_sqrt)
    logdiag = np.sum(np.log(np.abs(np.diagonal(Ls, axis1=1, axis2=2))))
    if whiten:
        kl = 0.5 * (np.sum(Ls * Ls) + np.sum(q_mu * q_mu) - M * D) - logdiag
    else:
        if Lu is None:
            raise ValueError("the unwhitened KL needs the Cholesky factor Lu of Kuu.")
        trace = sum(np.sum(solve_lower(Lu, Ls[d]) ** 2) for d in range(D))
        maha = np.sum(solve_lower(Lu, q_mu) ** 2)
        logdet_p = 2.0 * np.sum(np.log(np.diag(Lu)))
        kl = 0.5 * (trace + maha - M * D + D * logdet_p) - logdiag
    return float(kl), KLCache(q_mu, q_sqrt, Lu, bool(whiten))


def kl_divergence_vjp(dL_dkl, cache):
    """Backward pass of :func:`kl_divergence` (with upstream ``dL_dkl``).

    Parameters
    ----------
    dL_dkl : float
        Adjoint of the KL value (``-1`` for an ELBO).
    cache : KLCache
        From :func:`kl_divergence`.

    Returns
    -------
    KLVJP
    """
    q_mu, q_sqrt, Lu, whiten = cache
    D, M, _ = q_sqrt.shape
    Ls = tril(q_sqrt)
    inv_diag = np.zeros_like(Ls)
    idx = np.arange(M)
    inv_diag[:, idx, idx] = 1.0 / np.diagonal(Ls, axis1=1, axis2=2)
    if whiten:
        return KLVJP(dL_dkl * q_mu, dL_dkl * (Ls - inv_diag), None)
    Kinv_m = cho_solve(Lu, q_mu)
    Kinv = cho_solve(Lu, np.eye(M))
    dq_sqrt = np.empty_like(Ls)
    outer = Kinv_m @ Kinv_m.T
    for d in range(D):
        Kinv_L = cho_solve(Lu, Ls[d])
        dq_sqrt[d] = tril(Kinv_L) - inv_diag[d]
        outer += Kinv_L @ Kinv_L.T
    dKuu = 0.5 * (D * Kinv - outer)
    dKuu = 0.5 * (dKuu + dKuu.T)
    return KLVJP(dL_dkl * Kinv_m, dL_dkl * dq_sqrt, dL_dkl * dKuu)


# ------------------------------------------------- q(V) with one covariance for all columns

def kl_shared_covariance(mu, L_q, L_p):
    """``Σ_d KL(N(mu_d, Σ) ‖ N(0, K))`` with ``Σ = L_q L_qᵀ`` and ``K = L_p L_pᵀ``.

    ``½ [D (log|K| − log|Σ| + tr(K⁻¹Σ)) + Σ_d mu_dᵀ K⁻¹ mu_d − M D]`` (de Souza 2020,
    eq. A.1), the trace and the log-determinants formed once for the ``D`` columns.

    Parameters
    ----------
    mu : ndarray of shape (M, D)
        Means, one column per output.
    L_q : ndarray of shape (M, M)
        Lower-triangular square root of the shared covariance.
    L_p : ndarray of shape (M, M)
        Cholesky factor of the prior covariance.

    Returns
    -------
    kl : float
    """
    M, D = mu.shape
    iLS = solve_lower(L_p, L_q)
    iLmu = solve_lower(L_p, mu)
    logdet_q = 2.0 * float(np.sum(np.log(np.abs(np.diag(L_q)))))
    return 0.5 * (D * (logdet_from_chol(L_p) - logdet_q + float(np.sum(iLS * iLS)))
                  + float(np.sum(iLmu * iLmu)) - M * D)


def kl_shared_covariance_vjp(dL_dkl, Kinv, Kinv_mu, Sig, L_q):
    """Backward pass of :func:`kl_shared_covariance` (with upstream ``dL_dkl``).

    Parameters
    ----------
    dL_dkl : float
        Adjoint of the KL value (``-1`` for an ELBO).
    Kinv : ndarray of shape (M, M)
        ``K⁻¹``.
    Kinv_mu : ndarray of shape (M, D)
        ``K⁻¹ mu``.
    Sig : ndarray of shape (M, M)
        ``Σ = L_q L_qᵀ``.
    L_q : ndarray of shape (M, M)
        As in the forward pass.

    Returns
    -------
    dK : ndarray of shape (M, M)
        Adjoint of the prior covariance ``K`` (symmetric up to rounding).
    dmu : ndarray of shape (M, D)
    dL_q : ndarray of shape (M, M)
        Adjoint of ``L_q`` (its lower triangle is meaningful).
    """
    D = Kinv_mu.shape[1]
    dK = 0.5 * dL_dkl * (D * Kinv - D * Kinv @ Sig @ Kinv - Kinv_mu @ Kinv_mu.T)
    dmu = dL_dkl * Kinv_mu
    dL_q = dL_dkl * D * (Kinv @ L_q - np.diag(1.0 / np.diag(L_q)))
    return dK, dmu, dL_q
