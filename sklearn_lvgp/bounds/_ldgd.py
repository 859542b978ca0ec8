"""The LDGD bound's data terms as a map over chunks of batch rows.

Given the global parameters, the expected log-likelihoods of a row under the regression and
classification paths depend on that row's q(x_i) only (Ziaei et al. 2024, eq. 9), so an
evaluation is: each path's prior factor chol(K_uu) and KL once; one map over row chunks, each
expanding its rows' latent points, evaluating both paths' marginals and likelihoods and
backpropagating them at once (returning the gradients of its rows' μ, σ and partial adjoints
of q(u), Z, θ, L_u and the noise); then, once per path, the KL adjoints and the prior factor's
backward pass. This is the one implementation of the composed LDGD objective
(:func:`ldgd_forward`).
"""

import numpy as np

from ..engine._executor import ChunkExecutor, plan_chunks, serial_global_steps
from ..expectations._rules import expand_points, expand_points_vjp
from ..likelihoods._gaussian import gaussian_expectation, gaussian_expectation_vjp
from ..variational import kl_divergence, layer_global_vjp, marginals, marginals_vjp, prior_factor
from ._dsvi import FLOPS_PER_WORK
from ._ldgd_objective import GlobalsVJP, classification_ell, classification_ell_vjp

__all__ = ["ldgd_forward", "ldgd_value_and_vjp", "ldgd_vjp"]


def _path_pass(kernel, Z, q_mu, q_sqrt, prior, H):
    """Marginals of one (whitened, zero-mean) path at the chunk's points."""
    return marginals(kernel, Z, q_mu, q_sqrt, H, prior.Lu, None, True)


def _chunk(glob, priors, Yr, Yc, mu, sigma, nodes, weights, G_scale, gh_order):
    """Forward and backward of one chunk's data terms (see the module docstring)."""
    scale_r, scale_c = G_scale
    b, P = mu.shape[0], weights.shape[0]
    H = expand_points(mu, sigma, nodes).reshape(b * P, -1)
    wp = np.tile(np.asarray(weights, dtype=np.float64), b)[:, None]
    Yr_rep = np.repeat(Yr, P, axis=0)
    mu_r, var_r, cache_r = _path_pass(glob.kernel_r, glob.Z_r, glob.qmu_r, glob.qsqrt_r,
                                      priors[0], H)
    ell_r = gaussian_expectation(Yr_rep, mu_r, var_r, glob.noise)
    G_r = np.broadcast_to(scale_r * wp, ell_r.shape)
    value_r = float(np.sum(G_r * ell_r))
    dmu_r, dvar_r, dnoise = gaussian_expectation_vjp(G_r, Yr_rep, mu_r, var_r, glob.noise)
    mv_r = marginals_vjp(dmu_r, dvar_r, cache_r)
    dH = mv_r.H
    part_r = (mv_r.q_mu, mv_r.q_sqrt, mv_r.Z, mv_r.theta, mv_r.Lu)
    value_c, part_c = 0.0, None
    if Yc is not None:
        mu_c, var_c, cache_c = _path_pass(glob.kernel_c, glob.Z_c, glob.qmu_c, glob.qsqrt_c,
                                          priors[1], H)
        ell_c, gh_cache = classification_ell(np.repeat(Yc, P, axis=0), mu_c, var_c, gh_order)
        G_c = np.broadcast_to(scale_c * wp, ell_c.shape)
        value_c = float(np.sum(G_c * ell_c))
        dmu_c, dvar_c = classification_ell_vjp(G_c, gh_cache)
        mv_c = marginals_vjp(dmu_c, dvar_c, cache_c)
        dH = dH + mv_c.H
        part_c = (mv_c.q_mu, mv_c.q_sqrt, mv_c.Z, mv_c.theta, mv_c.Lu)
    dmu, dsigma = expand_points_vjp(dH.reshape(b, P, -1), nodes)
    return (dmu, dsigma), (value_r, value_c, dnoise, part_r, part_c)


def _finish_path(kernel, prior, part, kl_cache, dkl):
    """The path's global adjoints ``(dθ, dZ, dq_mu, dq_sqrt)`` from its chunk partials."""
    dq_mu, dq_sqrt, dZ, dtheta = layer_global_vjp(kernel, prior, kl_cache, dkl, *part)
    return dtheta, dZ, dq_mu, dq_sqrt


@serial_global_steps
def ldgd_value_and_vjp(glob, Yr, Yc, mu, sigma, nodes, weights, *, scale=1.0,
                       factors=(1.0, 1.0, 1.0), kl_factors=(1.0, 1.0), jitter=1e-6,
                       gh_order=20, chunk_rows=None, n_threads=None):
    """Data terms and q(U) KL terms of the LDGD bound for a batch of rows, and their adjoints.

    The bound (Ziaei et al. 2024, eq. 9, with the weights w_r, w_c, γ, β of its presets) is
    ``s Σ_i Σ_p w_p [w_r Σ_d ℓ^r_id + w_c γ Σ_k ℓ^c_ik] − w_r β_r KL_u^r − w_c γ β_c KL_u^c``.

    Parameters
    ----------
    glob : Globals
        Global parameters.
    Yr : ndarray of shape (b, D)
        Continuous observations of the batch.
    Yc : ndarray of shape (b, K) or None
        One-hot labels; ``None`` drops the classification path and both KL_u terms (test
        time).
    mu, sigma : ndarray of shape (b, Q)
        q(x_i) of the batch rows.
    nodes : ndarray of shape (P, Q) or (b, P, Q)
        Unit-space nodes (reparameterisation samples ε or sigma points).
    weights : ndarray of shape (P,)
        Node weights (``1/J`` for Monte Carlo, ``1/(2Q)`` for the unscented rule).
    scale : float, default=1.0
        Minibatch scale ``N / b``.
    factors : tuple (w_r, w_c, gamma), default=(1, 1, 1)
        Path weights and the classification up-weighting γ.
    kl_factors : tuple (beta_r, beta_c), default=(1, 1)
        KL_u weights of the preset.
    jitter : float, default=1e-6
        Relative jitter on ``K_uu``.
    gh_order : int, default=20
        Gauss–Hermite nodes of the classification expectation.
    chunk_rows : int, default=None
        Rows per chunk; ``None`` chooses from the problem size (never from the thread count).
    n_threads : int, default=None
        Threads; ``None`` takes the enclosing :func:`sklearn_lvgp._core.parallel.threads` context.

    Returns
    -------
    value : float
        The (maximised) partial bound.
    adjoints : GlobalsVJP
        Its gradients wrt every global block (kernel ``theta`` in the kernel's own log space)
        and wrt the batch's ``mu`` and ``sigma``.
    """
    w_r, w_c, gamma = factors
    beta_r, beta_c = kl_factors
    classify = Yc is not None
    priors = [prior_factor(glob.kernel_r, glob.Z_r, jitter)]
    if classify:
        priors.append(prior_factor(glob.kernel_c, glob.Z_c, jitter))
    b, Q = mu.shape
    P = weights.shape[0]
    M_r, D = glob.qmu_r.shape
    work = P * M_r * (M_r * (1 + D) + Q)
    if classify:
        M_c, K = glob.qmu_c.shape
        work += P * M_c * (M_c * (1 + K) + Q)
    chunks = plan_chunks(b, work / FLOPS_PER_WORK, chunk_rows=chunk_rows)
    dmu = np.empty_like(mu)
    dsigma = np.empty_like(sigma)
    G_scale = (scale * w_r, scale * w_c * gamma)

    def chunk(i, a, c):
        nodes_c = nodes if nodes.ndim == 2 else nodes[a:c]
        local, partial = _chunk(glob, priors, Yr[a:c], Yc[a:c] if classify else None, mu[a:c],
                                sigma[a:c], nodes_c, weights, G_scale, gh_order)
        dmu[a:c], dsigma[a:c] = local
        return partial

    value_r, value_c, dnoise, part_r, part_c = ChunkExecutor(n_threads).map_reduce(chunk,
                                                                                  chunks)
    if not classify:
        theta_r, Z_r, qmu_r, qsqrt_r = _finish_path(glob.kernel_r, priors[0], part_r, None, 0.0)
        return value_r, GlobalsVJP(theta_r, Z_r, qmu_r, qsqrt_r, dnoise, None, None, None, None,
                                   dmu, dsigma)
    kl_r, kcache_r = kl_divergence(glob.qmu_r, glob.qsqrt_r, priors[0].Lu, True)
    kl_c, kcache_c = kl_divergence(glob.qmu_c, glob.qsqrt_c, priors[1].Lu, True)
    dkl_r, dkl_c = -w_r * beta_r, -w_c * gamma * beta_c
    value = value_r + (value_c + dkl_r * kl_r + dkl_c * kl_c)
    theta_r, Z_r, qmu_r, qsqrt_r = _finish_path(glob.kernel_r, priors[0], part_r, kcache_r,
                                                dkl_r)
    theta_c, Z_c, qmu_c, qsqrt_c = _finish_path(glob.kernel_c, priors[1], part_c, kcache_c,
                                                dkl_c)
    return value, GlobalsVJP(theta_r, Z_r, qmu_r, qsqrt_r, dnoise, theta_c, Z_c, qmu_c, qsqrt_c,
                             dmu, dsigma)


def ldgd_forward(glob, Yr, Yc, mu, sigma, nodes, weights, **kwargs):
    """``(value, adjoints)`` of :func:`ldgd_value_and_vjp`, as a forward/backward pair with
    :func:`ldgd_vjp` (the adjoints are formed in the same pass)."""
    return ldgd_value_and_vjp(glob, Yr, Yc, mu, sigma, nodes, weights, **kwargs)


def ldgd_vjp(cache):
    """The adjoints (:class:`~sklearn_lvgp.bounds._ldgd_objective.GlobalsVJP`) of
    :func:`ldgd_forward`'s value."""
    return cache
