"""The predictive mixture of :class:`~sklearn_lvgp.GPCDE` over the latent covariate.

``p(y | x)`` integrates ``w`` (and ``A``) out under the prior: Gauss–Hermite nodes when
``latent_dim <= 2`` without projection, otherwise prior draws fixed at fit time. Here are those
nodes, the per-node marginals of test rows in row chunks, their moments in original units and
the draws of ``sample_y`` (``w ~ N(0, I)``, ``A ~ q(A)``, ``f ~ q(f)``, then the noise).
"""

import numpy as np
from scipy.special import logsumexp

from .._core.blocks import row_blocks
from .._core.parallel import threads
from ..bounds._gpcde import CHUNK_POINTS
from ..expectations._rules import gauss_hermite_rule, reparameterise
from ..likelihoods._mixed_gaussian import predictive_log_density, predictive_marginals
from ..variational._input_projection import projection_sample

__all__ = ["component_chunks", "grid_log_density", "mixture_log_density", "mixture_moments",
           "prediction_nodes", "sample_targets"]


def prediction_nodes(model, gh_order, n_predict_samples, A_mean, A_std, rs):
    """Nodes over ``w``, their log weights and the draws of ``A`` (``None`` without
    projection) of the predictive integration under the prior ``p(w)``."""
    if not model.projection and model.Dw <= 2:
        rule = gauss_hermite_rule(int(gh_order), model.Dw, max_points=np.inf)
        return rule.nodes, rule.log_weights, None
    S = int(n_predict_samples)
    nodes = rs.standard_normal((S, model.Dw))
    logw = np.full(S, -np.log(S))
    A_draws = (reparameterise(A_mean[None], A_std[None], rs.standard_normal((S,) + A_mean.shape))
               if model.projection else None)
    return nodes, logw, A_draws


def component_chunks(model, x, Xs, nodes, A_draws, n_jobs):
    """``(rows, mu, var)`` of the latent marginals at every node, in row chunks."""
    with threads(n_jobs):
        for sl in row_blocks(Xs.shape[0], nodes.shape[0], CHUNK_POINTS):
            mu, var = model.predict_components(x, Xs[sl], nodes, A_draws)
            yield sl, mu, var


def mixture_moments(chunks, P, noise_variance, y_mean, y_scale):
    """Per-node means/variances of every output, ``(n, J, D_y)``, original units."""
    means, varis = [], []
    for _, mu, var in chunks:
        m, v = predictive_marginals(mu, var, P, noise_variance)
        means.append(y_mean + y_scale * m)
        varis.append(y_scale ** 2 * v)
    return np.concatenate(means), np.concatenate(varis)


def mixture_log_density(chunks, Ys, P, noise_variance, logw):
    """Log density of each standardised row of ``Ys`` under the mixture over the nodes."""
    out = np.empty(Ys.shape[0])
    for sl, mu, var in chunks:
        lp = predictive_log_density(Ys[sl][:, None, :], mu, var, P, noise_variance)
        out[sl] = logsumexp(lp + logw[None, :], axis=1)
    return out


def grid_log_density(chunks, n, Gs, P, noise_variance, logw):
    """Log density of every standardised grid row of ``Gs`` at each of the ``n`` rows,
    ``(n, n_grid)``, under the mixture over the nodes."""
    out = np.empty((n, Gs.shape[0]))
    for sl, mu, var in chunks:
        lp = predictive_log_density(Gs[None, None], mu[:, :, None], var[:, :, None], P,
                                    noise_variance)
        out[sl] = logsumexp(lp + logw[None, :, None], axis=1)
    return out


def sample_targets(model, x, Xs, n_samples, rs, A_mean, A_std, P, noise_variance, n_jobs):
    """``n_samples`` draws of y per row (standardised units), shape ``(n * n_samples, D_y)``,
    the draws of a row consecutive."""
    S = n_samples
    n = Xs.shape[0]
    Xr = np.repeat(Xs, S, axis=0)
    if model.projection:
        h, _ = projection_sample(Xr, A_mean, A_std, rs.standard_normal((n * S, model.Dh)))
    else:
        h = Xr
    w = rs.standard_normal((n * S, model.Dw))
    with threads(n_jobs):
        mu, var = model.point_marginals(x, np.hstack([h, w]))
    f = reparameterise(mu, np.sqrt(var), rs.standard_normal(mu.shape))
    ys = f if P is None else f @ P
    return reparameterise(ys, np.sqrt(noise_variance), rs.standard_normal(ys.shape))
