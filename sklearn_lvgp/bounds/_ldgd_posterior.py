"""The posterior of a fitted LDGD and the starts of test-time inference (Ziaei et al. 2024).

:class:`LDGDPosterior` holds the fitted global parameters of both paths
(:class:`~._ldgd_objective.Globals`) and reads off what prediction needs: each path's GP
marginals at latent points, the regression path's decoded rows, the class log probabilities at
``q(x*)`` and the :class:`~._ldgd_problem.InferenceProblem` of new rows (§2.3.9). Test-time
inference starts from the training latent whose decoded row best explains the new row
(:func:`best_training_latent`) or from per-row seeded draws (:func:`random_latent_starts`).
"""

import zlib

import numpy as np
from scipy.special import log_ndtr

from ..expectations._rules import expand_points, unscented_rule
from ..variational import marginals, prior_factor
from ._ldgd_problem import InferenceProblem

__all__ = ["LDGDPosterior", "best_training_latent", "random_latent_starts"]


def best_training_latent(Yr, rec_mean, rec_var, chunk=512, return_score=False):
    """Index of the training latent whose decoded row best explains each new row.

    The candidate ``j`` maximising ``log N(y* | μ^r(μ_j), v(μ_j) + σ²)``: nearest in the
    model's own metric, so noise columns with large ``σ_d²`` do not decide the start.

    Parameters
    ----------
    Yr : ndarray of shape (n, D)
        New rows, scaled as in training.
    rec_mean, rec_var : ndarray of shape (N, D)
        Decoded means and predictive variances (noise included) of the training latents.
    chunk : int, default=512
        New rows per block (bounds the temporary ``(chunk, N)`` arrays).
    return_score : bool, default=False
        Also return each row's minimised score (``−2 log N`` up to a constant).

    Returns
    -------
    index : ndarray of shape (n,)
    score : ndarray of shape (n,)
        Only if ``return_score``.
    """
    inv = 1.0 / rec_var
    logdet = np.sum(np.log(rec_var), axis=1)
    weighted = rec_mean * inv
    offset = np.sum(rec_mean * weighted, axis=1) + logdet
    out = np.empty(Yr.shape[0], dtype=np.intp)
    score = np.empty(Yr.shape[0]) if return_score else None
    for start in range(0, Yr.shape[0], chunk):
        Y = Yr[start:start + chunk]
        S = (Y ** 2) @ inv.T - 2.0 * Y @ weighted.T + offset
        out[start:start + chunk] = np.argmin(S, axis=1)
        if return_score:
            score[start:start + chunk] = S[np.arange(S.shape[0]), out[start:start + chunk]]
    return (out, score) if return_score else out


def random_latent_starts(Yr, n_components, seed):
    """``N(0, I)`` means and ``log 2`` standard deviations, one draw per row from its own seed.

    The seed of a row mixes a hash of its bytes with ``seed``, so a row's start does not depend
    on the other rows transformed with it.

    Parameters
    ----------
    Yr : ndarray of shape (n, D)
        New rows.
    n_components : int
        Latent dimension ``Q``.
    seed : int
        Seed mixed into every row's.

    Returns
    -------
    mu0, sigma0 : ndarray of shape (n, Q)
    """
    n = Yr.shape[0]
    mu0 = np.empty((n, n_components))
    for i in range(n):
        row_seed = (zlib.crc32(Yr[i].tobytes()) ^ int(seed)) & 0x7FFFFFFF
        mu0[i] = np.random.RandomState(row_seed).standard_normal(n_components)
    return mu0, np.full((n, n_components), np.log(2.0))


class LDGDPosterior:
    """Predictions of a fitted LDGD from its global parameters.

    Parameters
    ----------
    glob : Globals
        Fitted kernels, inducing inputs, whitened ``q(U)`` of both paths and the noise.
    jitter : float
        Relative jitter on ``K_uu``.
    factors : tuple (w_r, w_c, gamma, beta_r, beta_c, beta_x)
        Path weights and preset factors of the fit (the test-time bound uses ``w_r``, ``β_x``).
    """

    def __init__(self, glob, jitter, factors):
        self.glob, self.jitter, self.factors = glob, jitter, factors

    def marginals(self, H, path):
        """Marginal means and variances of one path's GPs (``"reg"`` or ``"cls"``) at latent
        points ``H`` of shape (n, Q): two arrays of shape (n, D) or (n, K)."""
        g = self.glob
        kernel, Z, qm, qs = ((g.kernel_r, g.Z_r, g.qmu_r, g.qsqrt_r) if path == "reg" else
                             (g.kernel_c, g.Z_c, g.qmu_c, g.qsqrt_c))
        prior = prior_factor(kernel, Z, self.jitter)
        mu, var, _ = marginals(kernel, Z, qm, qs, np.ascontiguousarray(H), prior.Lu)
        return mu, var

    def decode(self, H):
        """Regression-path predictive means and variances (noise included) at ``H``."""
        m, v = self.marginals(H, "reg")
        return m, v + self.glob.noise

    def nearest_latent(self, Yr, latents, block=4096):
        """:func:`best_training_latent` among ``latents`` (N, Q), decoded ``block`` at a time,
        so memory stays O(n·block) rather than O(N·D) (a model that keeps no decoded training
        rows: a fit on Dask)."""
        best = np.full(Yr.shape[0], np.inf)
        out = np.zeros(Yr.shape[0], dtype=np.intp)
        for start in range(0, latents.shape[0], block):
            m, v = self.decode(latents[start:start + block])
            j, score = best_training_latent(Yr, m, v, return_score=True)
            better = score < best
            best[better], out[better] = score[better], j[better] + start
        return out

    def inference_start(self, Yr, latent_mean, latent_variance, init, seed, decoded=None):
        """Starting ``(μ*, σ*)`` of test-time inference of scaled rows ``Yr``.

        ``init="nearest"``: the fitted ``q(x_j)`` (``latent_mean``, ``latent_variance``) of the
        training latent whose decoded row best explains the row (:func:`best_training_latent`
        on ``decoded``, the training rows' ``(mean, variance)`` when kept, else
        :meth:`nearest_latent`); ``"random"``: :func:`random_latent_starts` with ``seed``.
        """
        if init != "nearest":
            return random_latent_starts(Yr, latent_mean.shape[1], seed)
        j = (self.nearest_latent(Yr, latent_mean) if decoded is None
             else best_training_latent(Yr, *decoded))
        return latent_mean[j], np.sqrt(latent_variance[j])

    def inference_problem(self, Yr):
        """The :class:`~._ldgd_problem.InferenceProblem` of scaled new rows ``Yr``."""
        w_r, _, _, _, _, beta_x = self.factors
        return InferenceProblem(Yr, self.glob, w_r, beta_x, self.jitter)

    def predict_proba(self, mu, sigma, proba="plugin"):
        """Class probabilities at ``q(x*)``: :meth:`log_proba`, rows normalised to sum to one."""
        lp = self.log_proba(mu, sigma, proba)
        p = np.exp(lp - lp.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True)

    def log_proba(self, mu, sigma, proba="plugin"):
        """Unnormalised log class probabilities at ``q(x*) = N(mu, diag sigma²)``.

        ``proba``: ``"plugin"`` ``log Φ(μ_k(μ*))``; ``"marginal"`` ``log Φ(μ_k/√(1+v_k))`` at
        ``μ*``; ``"integrated"`` that probability averaged over the unscented sigma points of
        ``q(x*)`` (a log-sum-exp).
        """
        if proba == "plugin":
            m, _ = self.marginals(mu, "cls")
            return log_ndtr(m)
        if proba == "marginal":
            m, v = self.marginals(mu, "cls")
            return log_ndtr(m / np.sqrt(1.0 + v))
        Q = mu.shape[1]
        ut = unscented_rule(Q)
        n, P = mu.shape[0], ut.weights.shape[0]
        m, v = self.marginals(expand_points(mu, sigma, ut.nodes).reshape(-1, Q), "cls")
        lp = log_ndtr(m / np.sqrt(1.0 + v)).reshape(n, P, -1) + np.log(ut.weights)[None, :, None]
        top = lp.max(axis=1, keepdims=True)
        return (top + np.log(np.sum(np.exp(lp - top), axis=1, keepdims=True)))[:, 0, :]
