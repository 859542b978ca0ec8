"""Initialisation of latent means and inducing inputs (spec §7)."""

import numpy as np

__all__ = ["pca_latents", "select_inducing"]


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
