"""The predictive distribution of a fitted DVMGP (de Souza 2020, §4.3.1): latent points through
the W-layer, predictive moments and densities, the joint covariance of several rows, draws."""

from typing import NamedTuple

import numpy as np

from .._core.blocks import row_blocks
from ..expectations._rules import expand_points, reparameterise
from ..likelihoods._gaussian import gaussian_log_density
from ..variational._projection import (
    latent_covariance,
    latent_moments,
    output_kernel,
    output_psi,
    projection_forward,
    projection_kernels,
)
from ._collapsed_global import chunked_predictive_moments, predictive_moments
from ._dvmgp import qv_cholesky
from ._joint_uncertain import rbf_joint_moments

__all__ = ["DVMGPPredictive"]


def _scalar(v):
    return float(np.ravel(v)[0])


class DVMGPPredictive(NamedTuple):
    """The predictive distribution of a fitted DVMGP (de Souza 2020, §4.3.1), in the
    standardised units of its training rows.

    Parameters
    ----------
    params : dict
        The fitted blocks of :func:`dvmgp_packer`.
    post : CollapsedPosterior
        The collapsed q(u) of the output layer at ``params``.
    qv_covariance : {"diag", "full"}
        Shape of Σ_q.
    jitter : float
        Relative jitter on ``K_v`` (and ``K_u``).
    """

    params: dict
    post: object
    qv_covariance: str
    jitter: float

    def latent(self, Xs):
        """Means ``h`` and variances ``η`` of the latent points ``W(x) x``, each (n, Q)."""
        p = self.params
        a, b, _, _ = projection_forward(Xs, p["Xi"], p["mu"],
                                        qv_cholesky(p, self.qv_covariance),
                                        projection_kernels(p["wtheta"]), self.jitter)
        return latent_moments(a, b, Xs)

    def moments(self, Xs):
        """Mean and variance of y (noise included), each (n, D_y)."""
        p = self.params
        h, eta = self.latent(Xs)
        signal_std = _scalar(p["signal_std"])
        mean, var = chunked_predictive_moments(
            self.post, lambda a, b: output_psi(p["zeta"], h[a:b], eta[a:b], signal_std,
                                               per_point=True)[0],
            Xs.shape[0])
        return mean, var + _scalar(p["noise"])

    def log_density(self, Xs, Ys):
        """``log N(y | mean, var)`` with the moments of :meth:`moments`, per row and target."""
        mean, var = self.moments(Xs)
        return gaussian_log_density(Ys, mean, var)

    def joint(self, Xs):
        """Mean (n, D_y) and joint covariance (n, n, D_y) of y, noise on the diagonal: the
        latent points are jointly Gaussian through the W-layer GPs."""
        p = self.params
        h, _ = self.latent(Xs)
        C = latent_covariance(Xs, p["Xi"], p["mu"], qv_cholesky(p, self.qv_covariance),
                              projection_kernels(p["wtheta"]), self.jitter)
        mean, cov = rbf_joint_moments(self.post, p["zeta"], _scalar(p["signal_std"]) ** 2, h, C)
        idx = np.arange(Xs.shape[0])
        cov[idx, idx, :] += _scalar(p["noise"])
        return mean, cov

    def sample(self, Xs, n_samples, random_state):
        """Draws of y, shape ``(n, n_samples, D_y)``: z ~ N(h, diag η), then f | z under the
        collapsed q(u), then the noise; rows in blocks of about 4096 draws."""
        p, rs, S = self.params, random_state, n_samples
        h, eta = self.latent(Xs)
        n, Q = h.shape
        out = np.empty((n, S, self.post.G.shape[1]))
        kern = output_kernel(_scalar(p["signal_std"]), Q)
        noise_std = np.sqrt(_scalar(p["noise"]))
        for rows in row_blocks(n, S, 4096):
            a, b = rows.start, rows.stop
            z = expand_points(h[a:b], np.sqrt(eta[a:b]),
                              rs.standard_normal((b - a, S, Q))).reshape(-1, Q)
            m, v = predictive_moments(self.post, kern.Kdiag(z), kern.K(z, p["zeta"]), None)
            f = reparameterise(m, np.sqrt(v), rs.standard_normal(m.shape))
            y = reparameterise(f, noise_std, rs.standard_normal(m.shape))
            out[a:b] = y.reshape(b - a, S, -1)
        return out
