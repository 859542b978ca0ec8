"""Starting points of LDGD: the training parameters, and test-time ``q(x*)`` of new rows."""

import zlib

import numpy as np

from .._init import pca_latents, select_inducing
from .._scaling import column_scales
from ._encoder import encoder_fit_mean_head, encoder_init

__all__ = ["initial_values", "best_training_latent", "random_latent_starts"]


def best_training_latent(Yr, rec_mean, rec_var, chunk=512):
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

    Returns
    -------
    index : ndarray of shape (n,)
    """
    inv = 1.0 / rec_var
    logdet = np.sum(np.log(rec_var), axis=1)
    weighted = rec_mean * inv
    offset = np.sum(rec_mean * weighted, axis=1) + logdet
    out = np.empty(Yr.shape[0], dtype=np.intp)
    for start in range(0, Yr.shape[0], chunk):
        Y = Yr[start:start + chunk]
        out[start:start + chunk] = np.argmin((Y ** 2) @ inv.T - 2.0 * Y @ weighted.T + offset,
                                             axis=1)
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
                   random_state):
    """Named starting parameters of LDGD's training problem.

    Latent means from PCA (or ``N(0, I)``) with standard deviations 0.1 (a project choice: the
    authors' code's ``softplus(N(0, 1))`` ≈ 0.7 lets the deterministic mode collapse to flat
    kernels in its first L-BFGS steps); inducing inputs on initial latent means; ``q(u)`` near
    the prior; noise at a tenth of each column's variance. With ``encoder_shapes`` (Fast LDGD)
    a fresh encoder whose mean head reproduces the PCA start.
    """
    N, D = Yr.shape
    mu0 = pca_latents(Yr, Q) if x_init == "pca" else random_state.standard_normal((N, Q))
    values = {"theta_r": kernel_r.theta, "theta_c": kernel_c.theta,
              "Z_r": _initial_inducing(mu0, M_r, random_state),
              "Z_c": _initial_inducing(mu0, M_c, random_state),
              "qmu_r": 1e-3 * random_state.standard_normal((M_r, D)),
              "qmu_c": 1e-3 * random_state.standard_normal((M_c, n_classes)),
              "qsqrt_r": np.tile(np.eye(M_r), (D, 1, 1)),
              "qsqrt_c": np.tile(np.eye(M_c), (n_classes, 1, 1)),
              "noise": np.maximum(0.1 * Yr.var(axis=0), 1e-2)}
    if encoder_shapes is not None:
        enc = encoder_init(encoder_shapes, random_state)
        values["enc"] = encoder_fit_mean_head(enc, Yr, mu0) if x_init == "pca" else enc
    else:
        values["mu"], values["sigma"] = mu0, np.full((N, Q), 0.1)
    return values

