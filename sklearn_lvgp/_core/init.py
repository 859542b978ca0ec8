"""Initialisation of latent means and inducing inputs.

Latent means start at the PCA scores and inducing inputs at a random subset of them, as in
de Souza et al. (2021, §4.1); the deep models place inducing inputs at k-means centres
(Salimbeni 2020, §2.4).
"""

import warnings

import numpy as np
from scipy.cluster.vq import kmeans2

__all__ = ["kmeans_inducing", "pca_latents", "select_inducing", "principal_directions",
           "unit_directions"]


def pca_latents(Y, n_components):
    """Unwhitened PCA scores: top eigenvectors of the sample covariance of centred ``Y``.

    Columns beyond the rank of ``Y`` (including ``n_components > n_features``) are filled with
    small deterministic values so no latent dimension starts identically zero.

    Parameters
    ----------
    Y : ndarray of shape (N, D)
        Data (not modified).
    n_components : int
        Latent dimension ``Q``.

    Returns
    -------
    X : ndarray of shape (N, Q)
        Initial latent means.
    """
    N, D = Y.shape
    Yc = Y - Y.mean(axis=0)
    q = min(n_components, D, max(N - 1, 1))
    _, s, Vt = np.linalg.svd(Yc, full_matrices=False)
    # deterministic sign: largest-magnitude loading of each component positive
    signs = np.sign(Vt[np.arange(Vt.shape[0]), np.argmax(np.abs(Vt), axis=1)])
    signs[signs == 0] = 1.0
    X = np.zeros((N, n_components))
    X[:, :q] = (Yc @ (Vt[:q] * signs[:q, None]).T)
    if q < n_components:
        scale = float(np.std(X[:, :q])) if q > 0 and np.std(X[:, :q]) > 0 else 1.0
        t = np.linspace(-1.0, 1.0, N)
        for j in range(q, n_components):
            X[:, j] = 1e-2 * scale * np.sin((j + 1) * np.pi * t)
    return X


def select_inducing(X, n_inducing, random_state):
    """``n_inducing`` distinct rows of ``X`` chosen by a seeded permutation.

    Parameters
    ----------
    X : ndarray of shape (N, Q)
        Candidate points.
    n_inducing : int
        Number of rows.
    random_state : numpy.random.RandomState
        Source of the permutation.

    Returns
    -------
    Z : ndarray of shape (n_inducing, Q)
        A copy of the chosen rows, nudged apart when duplicates would make ``Kuu`` singular.
    """
    idx = random_state.permutation(X.shape[0])[:n_inducing]
    Z = np.array(X[idx], dtype=np.float64)
    _, first = np.unique(np.round(Z, 12), axis=0, return_index=True)
    if first.size < Z.shape[0]:
        dup = np.setdiff1d(np.arange(Z.shape[0]), first)
        scale = float(np.std(X)) if np.std(X) > 0 else 1.0
        Z[dup] += 1e-3 * scale * random_state.standard_normal((dup.size, Z.shape[1]))
    return Z


def kmeans_inducing(X, M, random_state):
    """``M`` k-means centres of the rows of ``X`` (Salimbeni 2020, §2.4), distinct.

    With fewer than ``M`` rows, the rows plus ``N(0, 1)`` rows; centres that coincide are
    separated by a small random shift.

    Parameters
    ----------
    X : ndarray of shape (N, D)
        Points (not modified).
    M : int
        Number of centres.
    random_state : numpy.random.RandomState
        Seeds k-means and the fill-in rows.

    Returns
    -------
    Z : ndarray of shape (M, D)
    """
    N, D = X.shape
    if N < M:
        return np.vstack([X, random_state.standard_normal((M - N, D))])
    if D == 0:
        return np.zeros((M, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "One of the clusters is empty"
        Z, _ = kmeans2(X, M, minit="points", seed=random_state)
    _, first = np.unique(np.round(Z, 10), axis=0, return_index=True)
    if first.size < M:
        dup = np.setdiff1d(np.arange(M), first)
        Z[dup] += 1e-2 * random_state.standard_normal((dup.size, D))
    return Z


def principal_directions(X, k, random_state):
    """Top-``k`` principal directions (columns) times √eigenvalue, padded with ``N(0, 1/D)``."""
    D = X.shape[1]
    C = np.cov(X, rowvar=False).reshape(D, D) if X.shape[0] > 1 else np.eye(D)
    vals, vecs = np.linalg.eigh(C)
    order = np.argsort(vals)[::-1]
    vals, vecs = np.maximum(vals[order], 0.0), vecs[:, order]
    out = random_state.standard_normal((D, k)) / np.sqrt(D)
    m = min(k, D)
    out[:, :m] = vecs[:, :m] * np.sqrt(np.where(vals[:m] > 0, vals[:m], 1.0))
    return out


def unit_directions(X, k, random_state):
    """GPCDE's input-projection init: top-``k`` principal directions, ``N(0, 1/D)`` padding."""
    D = X.shape[1]
    C = np.cov(X, rowvar=False).reshape(D, D) if X.shape[0] > 1 else np.eye(D)
    vals, vecs = np.linalg.eigh(C)
    vecs = vecs[:, np.argsort(vals)[::-1]]
    out = random_state.standard_normal((D, k)) / np.sqrt(D)
    m = min(k, D)
    out[:, :m] = vecs[:, :m]
    return out
