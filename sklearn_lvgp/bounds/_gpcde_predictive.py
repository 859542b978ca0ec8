"""The predictive distribution of a fitted GP-CDE: a mixture over its latent covariate.

``p(y | x)`` integrates ``w`` (and a Bayesian input projection ``A``) out under the prior
(Salimbeni 2020, ch. 4): a mixture over values ``w_j`` with log weights ``log π_j`` — the
Gauss–Hermite nodes when ``D_w <= 2`` without projection, otherwise prior draws of ``w`` (each
paired with a draw of ``A ~ q(A)``) fixed when the mixture is made. Each component is the
Gaussian predictive of the SVGP at ``[h(x), w_j]`` pushed through the output mixing
(:mod:`sklearn_lvgp.likelihoods._mixed_gaussian`). Test rows run in blocks of at most
:data:`~sklearn_lvgp.bounds._gpcde.CHUNK_POINTS` evaluation points.
"""

from functools import cached_property

import numpy as np
from scipy.special import logsumexp

from .._core.blocks import row_blocks
from .._core.parallel import threads
from ..expectations._rules import gauss_hermite_rule, reparameterise
from ..likelihoods._mixed_gaussian import (
    mixture_quantiles,
    predictive_log_density,
    predictive_marginals,
)
from ..variational import marginals, prior_factor
from ..variational._input_projection import projection_sample
from ..variational._joint_mixing import latent_cross_covariance
from ._gpcde import CHUNK_POINTS

__all__ = ["CDEPredictive"]


class CDEPredictive:
    """``p(y | x)`` of a GP-CDE at fitted parameters.

    The model runs on standardised inputs and targets; the targets ``y`` here are in the units
    of ``y_mean + y_scale * y_standardised`` (the default: standardised).

    Parameters
    ----------
    model : CDEModel
        The model's structure.
    x : ndarray
        Fitted flat parameters.
    nodes : ndarray of shape (J, D_w)
        Values of ``w`` of the mixture components, shared by all rows.
    logw : ndarray of shape (J,)
        Their log weights.
    A_draws : ndarray of shape (J, D_x, D_h) or None, default=None
        Draws of ``A`` paired with the nodes (input projection only).
    y_mean, y_scale : ndarray of shape (D_y,) or float, default=0.0 and 1.0
        The targets' standardisation.
    n_jobs : int or None, default=None
        Threads of the jitted kernel loops.
    """

    def __init__(self, model, x, nodes, logw, A_draws=None, y_mean=0.0, y_scale=1.0,
                 n_jobs=None):
        self.model, self.x = model, x
        self.nodes, self.logw, self.A_draws = nodes, logw, A_draws
        self.y_mean, self.y_scale = y_mean, y_scale
        self.n_jobs = n_jobs
        self.params = model.unpack(x)

    @classmethod
    def from_prior(cls, model, x, gh_order, n_samples, random_state, **kwargs):
        """The mixture over the prior ``p(w)``: ``gh_order`` Gauss–Hermite nodes per latent
        dimension when ``D_w <= 2`` without projection, otherwise ``n_samples`` draws of ``w``
        and of ``A ~ q(A)`` from ``random_state``; ``kwargs`` go to the constructor."""
        if not model.projection and model.Dw <= 2:
            rule = gauss_hermite_rule(int(gh_order), model.Dw, max_points=np.inf)
            return cls(model, x, rule.nodes, rule.log_weights, **kwargs)
        S = int(n_samples)
        nodes = random_state.standard_normal((S, model.Dw))
        logw = np.full(S, -np.log(S))
        A_draws = None
        if model.projection:
            p = model.unpack(x)
            A_draws = reparameterise(p["A_mu"][None], p["A_s"][None],
                                     random_state.standard_normal((S,) + p["A_mu"].shape))
        return cls(model, x, nodes, logw, A_draws, **kwargs)

    @cached_property
    def _prior(self):
        return prior_factor(self.params["kernel"], self.params["Z"], self.model.jitter)

    def _marginals(self, H):
        """Latent marginals at the points ``H = [h, w]``, ``(n, L)`` each."""
        p = self.params
        mu, var, _ = marginals(p["kernel"], p["Z"], p["q_mu"], p["q_sqrt_full"], H,
                               self._prior.Lu, None, self.model.whiten)
        return mu, var

    def components(self, Xs):
        """``(rows, mu, var)`` in row blocks: the latent marginals ``(n_block, J, L)`` at
        ``[h(x_n), w_j]`` of the standardised inputs ``Xs`` and every node."""
        m, nodes, J = self.model, self.nodes, self.nodes.shape[0]
        with threads(self.n_jobs):
            for sl in row_blocks(Xs.shape[0], J, CHUNK_POINTS):
                X = Xs[sl]
                n = X.shape[0]
                if self.A_draws is None:
                    h = np.broadcast_to(X[:, None, :], (n, J, m.Dh))
                else:
                    h = np.einsum("ni,jik->njk", X, self.A_draws)
                H = np.concatenate([h, np.broadcast_to(nodes[None], (n, J, m.Dw))], axis=2)
                mu, var = self._marginals(H.reshape(n * J, -1))
                yield sl, mu.reshape(n, J, -1), var.reshape(n, J, -1)

    def moments(self, Xs):
        """Mean and variance of every target under each component, ``(n, J, D_y)`` each."""
        p, means, varis = self.params, [], []
        for _, mu, var in self.components(Xs):
            m, v = predictive_marginals(mu, var, p["P_"], p["s2"])
            means.append(self.y_mean + self.y_scale * m)
            varis.append(self.y_scale ** 2 * v)
        return np.concatenate(means), np.concatenate(varis)

    def mean_variance(self, Xs):
        """Mean and variance (law of total variance) of every target, ``(n, D_y)`` each."""
        m, v = self.moments(Xs)
        w = np.exp(self.logw)[None, :, None]
        mean = np.sum(w * m, axis=1)
        return mean, np.maximum(np.sum(w * (v + m * m), axis=1) - mean * mean, 0.0)

    def covariance(self, Xs, variance):
        """Joint covariance ``(n, n, D_y)`` of the rows per target (no input projection or
        output mixing): each row has its own ``w``, so two rows covary through the GP alone
        (:func:`~sklearn_lvgp.variational._joint_mixing.latent_cross_covariance`); the
        diagonal is ``variance`` (:meth:`mean_variance`)."""
        p = self.params
        with threads(self.n_jobs):
            cov = latent_cross_covariance(p["kernel"], p["Z"], p["q_sqrt_full"],
                                          self.model.jitter, self.model.whiten, Xs, self.nodes,
                                          self.logw)
        cov = cov * self.y_scale ** 2
        idx = np.arange(Xs.shape[0])
        cov[idx, idx, :] = variance
        return cov

    def quantiles(self, Xs, q):
        """Quantiles ``q`` of every target's marginal, ``(n, D_y, n_quantiles)``."""
        return mixture_quantiles(*self.moments(Xs), self.logw, q)

    def log_density(self, Xs, Y):
        """``log p(y_n | x_n)`` of each row, ``(n,)``."""
        p, out = self.params, np.empty(Y.shape[0])
        Ys = (Y - self.y_mean) / self.y_scale
        for sl, mu, var in self.components(Xs):
            lp = predictive_log_density(Ys[sl][:, None, :], mu, var, p["P_"], p["s2"])
            out[sl] = logsumexp(lp + self.logw[None, :], axis=1)
        return out - np.sum(np.log(self.y_scale))

    def grid_log_density(self, Xs, G):
        """``log p(g | x_n)`` of every grid row of ``G`` at each row of ``Xs``,
        ``(n, n_grid)``."""
        p, out = self.params, np.empty((Xs.shape[0], G.shape[0]))
        Gs = (G - self.y_mean) / self.y_scale
        for sl, mu, var in self.components(Xs):
            lp = predictive_log_density(Gs[None, None], mu[:, :, None], var[:, :, None],
                                        p["P_"], p["s2"])
            out[sl] = logsumexp(lp + self.logw[None, :, None], axis=1)
        return out - np.sum(np.log(self.y_scale))

    def sample(self, Xs, n_samples, random_state):
        """``n_samples`` draws of ``y`` per row (``w ~ N(0, I)``, ``A ~ q(A)``, ``f ~ q(f)``,
        then the noise), ``(n, D_y, n_samples)``."""
        m, p, S, n = self.model, self.params, n_samples, Xs.shape[0]
        Xr = np.repeat(Xs, S, axis=0)
        if m.projection:
            h, _ = projection_sample(Xr, p["A_mu"], p["A_s"],
                                     random_state.standard_normal((n * S, m.Dh)))
        else:
            h = Xr
        H = np.hstack([h, random_state.standard_normal((n * S, m.Dw))])
        with threads(self.n_jobs):
            parts = [self._marginals(H[rows])
                     for rows in row_blocks(H.shape[0], 1, CHUNK_POINTS)]
        mu = np.concatenate([mu for mu, _ in parts])
        var = np.concatenate([var for _, var in parts])
        f = reparameterise(mu, np.sqrt(var), random_state.standard_normal(mu.shape))
        ys = f if p["P_"] is None else f @ p["P_"]
        ys = reparameterise(ys, np.sqrt(p["s2"]), random_state.standard_normal(ys.shape))
        return (self.y_mean + self.y_scale * ys).reshape(n, S, -1).transpose(0, 2, 1)
