"""Starting points of LDGD's test-time inference of ``q(x*)`` for new rows."""

import zlib

import numpy as np

__all__ = ["best_training_latent", "random_latent_starts"]


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
