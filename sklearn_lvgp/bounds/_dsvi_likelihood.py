"""The final layer of a deep GP under a likelihood object
(:class:`~sklearn_lvgp.likelihoods.Likelihood`): its share of the DSVI bound with the backward
pass, the data sums of a natural-gradient step on the last layer's ``q(u)``, and the
predictive quantities along prediction paths (their draws, the Gaussian mixture density and
the KDE of sampled targets included).

Every function takes plain arrays: the last layer's marginals ``mu``, ``var`` of shape
``(P, D)`` at ``P`` stacked points, the targets ``Y`` of shape ``(P, D)`` (a multiclass
likelihood's class indices in one column, ``(P, 1)``) and the points' weights in the bound.
"""

import numpy as np
from scipy.special import logsumexp

from .._core import blocks
from .._core.blocks import row_blocks
from ..likelihoods._gaussian import gaussian_log_density
from ..metrics import kde_log_density

__all__ = ["data_term", "natgrad_sums", "safe_natgrad_gamma", "path_moments",
           "path_log_density", "path_class_probabilities", "prediction_paths", "kde_rows",
           "mixture_log_density"]


def _targets(likelihood, Y):
    return Y[:, 0] if likelihood.is_multiclass else Y


def data_term(likelihood, Y, mu, var, point_weights):
    """``sum_p w_p E_q[log p(y_p | f_p)]`` and its adjoints.

    Parameters
    ----------
    likelihood : Likelihood
    Y : ndarray of shape (P, D), or (P, 1) class indices for a multiclass likelihood
    mu, var : ndarray of shape (P, D)
        Marginals of the last layer at the stacked points.
    point_weights : ndarray of shape (P,)
        Weight of each point in the bound.

    Returns
    -------
    value : float
    dmu, dvar : ndarray of shape (P, D)
        Adjoints of the marginals.
    dtheta : ndarray of shape (likelihood.n_theta,)
        Adjoint of the likelihood's ``theta``.
    """
    values, cache = likelihood.variational_expectation_cached(_targets(likelihood, Y), mu, var)
    w = point_weights if values.ndim == 1 else point_weights[:, None]
    adj = likelihood.variational_expectation_vjp_cached(w, cache)
    return float(np.sum(w * values)), adj.mu, adj.var, np.asarray(adj.theta, dtype=np.float64)


def natgrad_sums(likelihood, A, q_mu, Y, mu, var, point_weights):
    """Data sums of a natural-gradient step on the last layer's ``q(u)`` (Salimbeni 2020, §3.2).

    With ``mu_p = a_p^T m_d + mean_p`` and ``var_p = k_pp - ... + a_p^T S_d a_p`` (``a_p`` the
    columns of ``A``), the data term ``F`` has ``dF/dm_d = sum_p dmu_pd a_p`` and ``dF/dS_d =
    sum_p dvar_pd a_p a_p^T``, and its gradient in the expectation parameters ``(m, S + m m^T)``
    is ``(dF/dm - 2 dF/dS m, dF/dS)``. The step
    ``theta <- (1 - gamma) theta + gamma (theta_prior + dF/deta)`` in the natural parameters
    then takes ``theta_hat_1 = dF/deta_1`` and ``Theta_hat_2 = -(Lambda_p + P_d) / 2`` with
    ``P_d = -2 dF/dS_d``, the form of
    :func:`~sklearn_lvgp.variational.natgrad_from_statistics`. For a Gaussian likelihood these
    are its closed-form sums; sums over disjoint sets of points add up.

    Parameters
    ----------
    likelihood : Likelihood
    A : ndarray of shape (M, P)
        The last layer's projected features at the points.
    q_mu : ndarray of shape (M, D)
        Current means of ``q(u)``.
    Y, mu, var, point_weights
        As in :func:`data_term`.

    Returns
    -------
    b : ndarray of shape (M, D)
        ``dF/deta_1``.
    P : ndarray of shape (D, M, M)
        ``-2 dF/dS`` per output.
    """
    _, dmu, dvar, _ = data_term(likelihood, Y, mu, var, point_weights)
    b = A @ dmu - 2.0 * (A @ (dvar * (A.T @ q_mu)))
    P = np.stack([(A * (-2.0 * dvar[:, d])) @ A.T for d in range(dmu.shape[1])])
    return b, P


def _flat(mu, var):
    S, n, D = mu.shape
    return mu.reshape(S * n, D), var.reshape(S * n, D)


def path_moments(likelihood, mu, var):
    """Mean and variance of the targets under the mixture over paths of the last layer's
    marginals ``mu``, ``var`` of shape ``(S, n, D)`` (law of total variance)."""
    m, v = likelihood.predict_mean_and_var(*_flat(mu, var))
    m, v = m.reshape(mu.shape), v.reshape(mu.shape)
    mean = m.mean(axis=0)
    return mean, np.maximum(np.mean(v + m * m, axis=0) - mean * mean, 0.0)


def path_log_density(likelihood, mu, var, Y):
    """Log density of rows ``Y`` (``(n, D)``, or ``(n, 1)`` class indices) under the mixture
    over paths of the predictive densities at ``mu``, ``var`` of shape ``(S, n, D)``."""
    S, n, _ = mu.shape
    Yt = np.tile(Y, (S, 1))
    lp = likelihood.predict_log_density(_targets(likelihood, Yt), *_flat(mu, var))
    lp = lp.reshape(S, n, -1).sum(axis=2)
    return logsumexp(lp, axis=0) - np.log(S)


def path_class_probabilities(likelihood, mu, var):
    """Class probabilities ``(n, n_classes)`` averaged over the paths of ``mu``, ``var`` of
    shape ``(S, n, D)``."""
    S, n, _ = mu.shape
    p = likelihood.predict_proba(*_flat(mu, var))
    return p.reshape(S, n, -1).mean(axis=0)


def safe_natgrad_gamma(q_sqrt, P, gamma, prior_precision, max_halvings=30):
    """The natural-gradient step size, halved until every output's new precision
    ``(1 - gamma) S^{-1} + gamma (Lambda_p + P_d)`` is positive definite.

    A log-concave likelihood (Bernoulli, Poisson, ...) has ``P_d`` positive semi-definite and
    any ``gamma`` in (0, 1] passes; one that is not (Student-t, robust-max) can make a large
    step leave the positive-definite cone, and the step along the same natural-gradient
    direction is then shortened.

    Parameters
    ----------
    q_sqrt : ndarray of shape (D, M, M)
        Current Cholesky factors of ``S``.
    P : ndarray of shape (D, M, M)
        Data sums of :func:`natgrad_sums`.
    gamma : float
        Requested step size.
    prior_precision : ndarray of shape (M, M)
        ``Lambda_p``: ``I`` whitened, ``K_uu^{-1}`` otherwise.
    max_halvings : int, default=30
        Halvings tried before giving up (the requested step is then returned).

    Returns
    -------
    gamma : float
    """
    M = P.shape[-1]
    current = []
    for R in q_sqrt:
        Rinv = np.linalg.solve(np.tril(R), np.eye(M))
        current.append(Rinv.T @ Rinv)
    g = float(gamma)
    for _ in range(max_halvings):
        try:
            for S_inv, Pd in zip(current, P, strict=True):
                np.linalg.cholesky((1.0 - g) * S_inv + g * (prior_precision + Pd))
            return g
        except np.linalg.LinAlgError:
            g *= 0.5
    return float(gamma)


def prediction_paths(dims, n_latent, rs, S):
    """``S`` paths of standard-normal draws shared by all test rows, so each row's prediction
    depends on that row only: the latent covariates (from their prior, Salimbeni et al. 2019)
    first, then one draw per inner layer output."""
    latent = [rs.standard_normal((S, n_latent))] if n_latent else []
    return S, latent + [rs.standard_normal((S, d)) for d in dims[1:-1]]


def kde_rows(sample, X, y, n_kde_samples, rs, n_layers):
    """Kernel-density log density of ``y`` from ``sample(rows, rs)`` draws, in row chunks.

    ``sample(rows, rs)`` returns ``(len(rows), n_kde_samples)`` draws; with one layer each row
    is propagated once, deeper models stack ``S`` copies per row, hence the chunk sizes.
    """
    out = np.empty(X.shape[0])
    budget = blocks.PREDICT_POINTS * (50 if n_layers == 1 else 1)
    for sl in row_blocks(X.shape[0], int(n_kde_samples), budget):
        ys = sample(X[sl], rs)
        out[sl] = kde_log_density(ys.reshape(ys.shape[0], -1), y[sl])
    return out


def mixture_log_density(mu, var, noise, Y, y_mean, y_scale):
    """Log density of rows ``Y`` (original units) under the mixture over paths of the
    standardised components ``(mu, var, noise)`` (Salimbeni 2020, eqs. 2.20-2.21)."""
    # in standardised units, less the log of the scale: y_scale ** 2 overflows for targets of
    # magnitude ~1e154 and more
    lp = gaussian_log_density(((Y - y_mean) / y_scale)[None], mu, var + noise).sum(axis=2)
    return logsumexp(lp, axis=0) - np.log(lp.shape[0]) - np.sum(np.log(y_scale))
