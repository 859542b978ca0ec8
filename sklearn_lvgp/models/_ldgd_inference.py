"""Starting points and test-time inference of LDGD.

The training parameters' start, the starts of test-time ``q(x*)`` of new rows and its
optimisation with the model fixed (Ziaei et al. 2024, §2.3.9; the encoder of Fast LDGD,
§2.3.10), the paths' marginals at latent points and the class probabilities.
"""

import zlib

import numpy as np
from scipy.special import log_ndtr
from sklearn.utils import check_random_state

from .._core.init import pca_latents, select_inducing
from .._core.params import softplus_inverse
from .._core.scaling import column_scales
from ..bounds._ldgd_objective import Globals
from ..bounds._ldgd_problem import InferenceProblem
from ..expectations._rules import expand_points, unscented_rule
from ..nn._ldgd_encoder import encoder_fit_mean_head, encoder_forward, encoder_init
from ..optim._adam import run_adam
from ..variational import marginals, prior_factor

__all__ = ["initial_values", "best_training_latent", "nearest_training_latent",
           "random_latent_starts", "fitted_globals", "path_marginals", "infer_latents",
           "log_proba"]


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


def nearest_training_latent(est, Yr, block=4096):
    """:func:`best_training_latent` for a model that keeps no decoded training rows (a fit on
    Dask): the training latents are decoded ``block`` at a time, so memory stays
    O(n·block) rather than O(N·D)."""
    N = est.latent_mean_.shape[0]
    best = np.full(Yr.shape[0], np.inf)
    out = np.zeros(Yr.shape[0], dtype=np.intp)
    for start in range(0, N, block):
        m, v = path_marginals(est, est.latent_mean_[start:start + block], "reg")
        j, score = best_training_latent(Yr, m, v + est.noise_variance_, return_score=True)
        better = score < best
        best[better], out[better] = score[better], j[better] + start
    return out


def random_latent_starts(Yr, n_components, seed):
    """``N(0, I)`` means and ``log 2`` standard deviations, one draw per row from its own seed.

    The seed of a row mixes a hash of its bytes with ``seed``, so a row's start does not depend
    on the other rows transformed with it.
    """
    n = Yr.shape[0]
    mu0 = np.empty((n, n_components))
    for i in range(n):
        row_seed = (zlib.crc32(Yr[i].tobytes()) ^ int(seed)) & 0x7FFFFFFF
        mu0[i] = np.random.RandomState(row_seed).standard_normal(n_components)
    return mu0, np.full((n, n_components), np.log(2.0))


def _initial_inducing(mu0, M, random_state):
    if M <= mu0.shape[0]:
        return select_inducing(mu0, M, random_state)
    return random_state.standard_normal((M, mu0.shape[1])) * column_scales(mu0)


def initial_values(Yr, n_classes, kernel_r, kernel_c, M_r, M_c, Q, x_init, encoder_shapes,
                   random_state, moments=None):
    """Named starting parameters of LDGD's training problem.

    Latent means from PCA (or ``N(0, I)``) with standard deviations 0.1 (a project choice: the
    authors' code's ``softplus(N(0, 1))`` ≈ 0.7 lets the deterministic mode collapse to flat
    kernels in its first L-BFGS steps); inducing inputs on initial latent means; ``q(u)`` near
    the prior; noise at a tenth of each column's variance. With ``encoder_shapes`` (Fast LDGD)
    a fresh encoder whose mean head reproduces the PCA start. ``moments(random_state)``, when
    given, returns the initial latent means and the columns' variances in place of those of
    ``Yr`` (a fit on Dask: ``Yr`` is then ``None``, and there is no encoder).
    """
    if moments is None:
        N, D = Yr.shape
        mu0 = pca_latents(Yr, Q) if x_init == "pca" else random_state.standard_normal((N, Q))
    else:
        mu0, column_var = moments(random_state)
        N, D = mu0.shape[0], column_var.shape[0]
    values = {"theta_r": kernel_r.theta, "theta_c": kernel_c.theta,
              "Z_r": _initial_inducing(mu0, M_r, random_state),
              "Z_c": _initial_inducing(mu0, M_c, random_state),
              "qmu_r": 1e-3 * random_state.standard_normal((M_r, D)),
              "qmu_c": 1e-3 * random_state.standard_normal((M_c, n_classes)),
              "qsqrt_r": np.tile(np.eye(M_r), (D, 1, 1)),
              "qsqrt_c": np.tile(np.eye(M_c), (n_classes, 1, 1)),
              "noise": np.maximum(0.1 * (Yr.var(axis=0) if moments is None else column_var),
                                  1e-2)}
    if encoder_shapes is not None:
        enc = encoder_init(encoder_shapes, random_state)
        values["enc"] = encoder_fit_mean_head(enc, Yr, mu0) if x_init == "pca" else enc
    else:
        values["mu"], values["sigma"] = mu0, np.full((N, Q), 0.1)
    return values


def fitted_globals(est):
    """The fitted global parameters of both paths as :class:`~._objective.Globals`."""
    return Globals(est.kernel_reg_, est.inducing_inputs_reg_, *est.q_u_reg_,
                   est.noise_variance_, est.kernel_cls_, est.inducing_inputs_cls_,
                   *est.q_u_cls_)


def path_marginals(est, H, path):
    """Marginal means and variances of one path's GPs at latent points ``H``."""
    if path == "reg":
        kernel, Z, (qm, qs) = est.kernel_reg_, est.inducing_inputs_reg_, est.q_u_reg_
    else:
        kernel, Z, (qm, qs) = est.kernel_cls_, est.inducing_inputs_cls_, est.q_u_cls_
    prior = prior_factor(kernel, Z, est.jitter)
    mu, var, _ = marginals(kernel, Z, qm, qs, np.ascontiguousarray(H), prior.Lu)
    return mu, var


def infer_latents(est, Yr):
    """Test-time ``(μ*, σ*)`` of scaled rows (Ziaei et al. 2024, §2.3.9; Fast LDGD §2.3.10)."""
    if est.amortized:
        mu, sigma, _ = encoder_forward(est._encoder, Yr)
        return mu, sigma
    n, Q = Yr.shape[0], est.n_components
    rs = check_random_state(est._transform_seed)
    if est.transform_init == "nearest":
        j = (nearest_training_latent(est, Yr) if est._rec_mean is None
             else best_training_latent(Yr, est._rec_mean, est._rec_var))
        mu0, sigma0 = est.latent_mean_[j], np.sqrt(est.latent_variance_[j])
    else:
        mu0, sigma0 = random_latent_starts(Yr, Q, est._transform_seed)
    if est.transform_max_iter == 0 or n == 0:
        return mu0, sigma0
    w_r, _, _, _, _, beta_x = est._factors
    prob = InferenceProblem(Yr, fitted_globals(est), w_r, beta_x, est.jitter)
    x0 = np.concatenate([mu0.ravel(), softplus_inverse(sigma0).ravel()])
    stochastic = est.expectation == "monte_carlo"
    ut = unscented_rule(Q)

    def objective(flat, idx):
        if stochastic:
            # one ε shared by all rows per step: per-row trajectories independent of the batch
            return prob.value_and_grad(flat, rs.standard_normal((1, Q)), np.ones(1))
        return prob.value_and_grad(flat, ut.nodes, ut.weights)

    res = run_adam(objective, x0, n_data=n, batch_size=n, max_iter=est.transform_max_iter,
                   learning_rate=est.learning_rate, random_state=rs, verbose=est.verbose,
                   name=f"{type(est).__name__}.transform")
    p = prob.packer.unpack(res.x)
    return p["mu"], p["sigma"]


def log_proba(est, mu, sigma):
    """Unnormalised log class probabilities at ``q(x*) = N(mu, diag sigma²)`` (``est.proba``:
    plug-in, marginal, or integrated over the sigma points)."""
    if est.proba == "plugin":
        m, _ = path_marginals(est, mu, "cls")
        return log_ndtr(m)
    if est.proba == "marginal":
        m, v = path_marginals(est, mu, "cls")
        return log_ndtr(m / np.sqrt(1.0 + v))
    ut = unscented_rule(est.n_components)
    n, P = mu.shape[0], ut.weights.shape[0]
    H = expand_points(mu, sigma, ut.nodes).reshape(-1, est.n_components)
    m, v = path_marginals(est, H, "cls")
    lp = log_ndtr(m / np.sqrt(1.0 + v)).reshape(n, P, -1) + np.log(ut.weights)[None, :, None]
    top = lp.max(axis=1, keepdims=True)
    return (top + np.log(np.sum(np.exp(lp - top), axis=1, keepdims=True)))[:, 0, :]
