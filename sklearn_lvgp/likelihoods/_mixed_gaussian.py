"""Conditional expected log-likelihood with output mixing ``P`` and the predictive log-density.

``L_n(t) = E_q(f) log N(y | P^T f(t), s2 I)`` and its adjoints (the closed-form ``L_{w_n}`` of
Salimbeni 2020, eq. 4.6, with the output mixing of §4.2.3), and the predictive density (Woodbury
form of ``log N(y | P^T mu, P^T diag(v) P + s2 I)``, never forming ``D_y x D_y``).
``P = None`` means no mixing (``P = I``, ``L = D_y``). The expectation is the Gaussian one of
:mod:`._gaussian` at the expected squared residual ``‖y − Pᵀmu‖² + varᵀ diag(P Pᵀ)``, and without
mixing the predictive density is its :func:`~._gaussian.gaussian_log_density`.
"""

from typing import NamedTuple

import numpy as np
from scipy.special import ndtr

from .._core.constants import LOG_2PI
from ._gaussian import expected_log_gaussian, expected_log_gaussian_vjp, gaussian_log_density

__all__ = ["ConditionalVJP", "conditional_ell", "conditional_ell_vjp", "latent_pi",
           "mixture_quantiles", "predictive_log_density", "predictive_marginals"]


class ConditionalVJP(NamedTuple):
    """Adjoints of :func:`conditional_ell`.

    Attributes
    ----------
    mu, var : ndarray of shape (n, L)
    P : ndarray of shape (L, D_y) or None
    noise_variance : float
    """

    mu: np.ndarray
    var: np.ndarray
    P: np.ndarray | None
    noise_variance: float


def _mix(mu, P):
    return mu if P is None else mu @ P


def latent_pi(P, L):
    """``pi_e = sum_d P_ed^2``, the weight of latent ``e``'s variance (ones without mixing)."""
    return np.ones(L) if P is None else np.sum(P * P, axis=1)


def conditional_ell(Y, mu, var, P, noise_variance):
    """``L_n(t)`` at ``n`` evaluation points (Salimbeni 2020, eq. 4.6).

    Parameters
    ----------
    Y : ndarray of shape (n, D_y)
        Targets (repeated per evaluation point).
    mu, var : ndarray of shape (n, L)
        Marginals of the ``L`` latent GPs at the points.
    P : ndarray of shape (L, D_y) or None
        Output mixing (``None`` is the identity).
    noise_variance : float
        ``s2``.

    Returns
    -------
    values : ndarray of shape (n,)
    cache : tuple
        Input of :func:`conditional_ell_vjp`.
    """
    s2 = float(noise_variance)
    Dy = Y.shape[1]
    r = Y - _mix(mu, P)
    quad = np.sum(r * r, axis=1) + var @ latent_pi(P, mu.shape[1])
    values = expected_log_gaussian(quad, Dy, s2)
    return values, (r, mu, var, P, s2, quad)


def conditional_ell_vjp(dL_dvalues, cache):
    """Backward pass of :func:`conditional_ell`.

    Parameters
    ----------
    dL_dvalues : ndarray of shape (n,)
        Upstream adjoint of each value.
    cache : tuple
        From :func:`conditional_ell`.

    Returns
    -------
    ConditionalVJP
    """
    r, mu, var, P, s2, quad = cache
    w = np.asarray(dL_dvalues, dtype=np.float64)
    Dy = r.shape[1]
    wr = r * (w / s2)[:, None]
    pi = latent_pi(P, mu.shape[1])
    dmu = wr if P is None else wr @ P.T
    dquad, dnoise = expected_log_gaussian_vjp(w, Dy, quad, s2)
    dvar = dquad[:, None] * pi[None, :]
    dP = None
    if P is not None:
        dP = mu.T @ wr - P * ((w / s2) @ var)[:, None]
    dnoise = float(np.sum(dnoise))
    return ConditionalVJP(dmu, dvar, dP, dnoise)


def predictive_marginals(mu, var, P, noise_variance):
    """Per-output predictive means and variances ``(P^T mu, diag(P^T V P) + s2)``.

    Parameters
    ----------
    mu, var : ndarray of shape (..., L)
    P : ndarray of shape (L, D_y) or None
    noise_variance : float

    Returns
    -------
    mean, variance : ndarray of shape (..., D_y)
    """
    if P is None:
        return mu, var + noise_variance
    return mu @ P, var @ (P * P) + noise_variance


def predictive_log_density(Y, mu, var, P, noise_variance):
    """``log N(y | P^T mu, P^T diag(v) P + s2 I)`` per point (Woodbury form).

    Parameters
    ----------
    Y : ndarray of shape (..., D_y)
        Targets (broadcast against ``mu``'s leading dimensions).
    mu, var : ndarray of shape (..., L)
        Latent marginals.
    P : ndarray of shape (L, D_y) or None
        Output mixing.
    noise_variance : float

    Returns
    -------
    log_density : ndarray of shape (...)
    """
    s2 = float(noise_variance)
    if P is None or P.shape[1] == 1:
        mean, v = predictive_marginals(mu, var, P, s2)
        return np.sum(gaussian_log_density(Y, mean, v), axis=-1)
    L, Dy = P.shape
    r = Y - mu @ P
    # C = s2 I + U U^T with U = P^T V^{1/2}: |C| and C^{-1} through the L x L capacitance
    sq = np.sqrt(var)
    PPt = P @ P.T
    K = sq[..., :, None] * PPt * sq[..., None, :] + s2 * np.eye(L)
    Lk = np.linalg.cholesky(K)
    logdet = Dy * np.log(s2) + 2.0 * np.sum(np.log(np.diagonal(Lk, axis1=-2, axis2=-1)),
                                            axis=-1) - L * np.log(s2)
    Ur = sq * (r @ P.T)
    sol = np.linalg.solve(K, Ur[..., None])[..., 0]
    maha = (np.sum(r * r, axis=-1) - np.sum(Ur * sol, axis=-1)) / s2
    return -0.5 * (Dy * LOG_2PI + logdet + maha)


def mixture_quantiles(means, variances, log_weights, q, n_bisections=60):
    """Quantiles of each target's Gaussian-mixture marginal, by bisection on the mixture CDF.

    Parameters
    ----------
    means, variances : ndarray of shape (n, J, D)
        Component moments per row, node and target.
    log_weights : ndarray of shape (J,)
        Log mixture weights.
    q : ndarray of shape (K,)
        Probabilities in (0, 1).
    n_bisections : int, default=60
        Halvings of the bracket ``[min(m - 10 s), max(m + 10 s)]`` (60 reach float64 resolution
        for any bracket).

    Returns
    -------
    quantiles : ndarray of shape (n, D, K)
    """
    w = np.exp(log_weights)[None, :, None, None]
    sd = np.sqrt(variances)
    lo = np.min(means - 10 * sd, axis=1)[..., None] * np.ones(q.size)
    hi = np.max(means + 10 * sd, axis=1)[..., None] * np.ones(q.size)
    for _ in range(n_bisections):
        mid = 0.5 * (lo + hi)
        cdf = np.sum(w * ndtr((mid[:, None] - means[..., None]) / sd[..., None]), axis=1)
        below = cdf < q
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)

