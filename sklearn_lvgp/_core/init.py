"""Initialisation of latent means, inducing inputs and projections: the package's one PCA and
one k-means.

Latent means start at the PCA scores and inducing inputs at a random subset of them, as in
de Souza et al. (2021, §4.1); the deep models place inducing inputs at k-means centres
(Salimbeni 2020, §2.4), DVMGP at the best of many k-means runs (de Souza 2020, §4.4).

PCA is :func:`principal_axes` (SVD of the centred data; scores, components and the deep GP's
linear mean function use it). :func:`principal_directions` is the same PCA through the
eigen-decomposition of the covariance, which GP-CDE's initialisation has always used; it rounds
differently, so both stay, side by side. The two k-means, :func:`kmeans_inducing` (one run of
scipy's ``kmeans2``) and :func:`kmeans_centres` (scikit-learn's best of ``n_init`` runs), are
the two papers' procedures and give different centres. The latents of new rows start at those
of their :func:`nearest_rows` among reference rows.

:func:`pca_components_of_scatter` is :func:`pca_components` from the D × D scatter matrix, for
rows that are only reduced over (partitioned on Dask).
"""

import warnings

import numpy as np
from scipy.cluster.vq import kmeans2
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from .scaling import pairwise_column_variances
from .validation import check_finite_array

__all__ = ["fill_missing", "initial_latent_means", "initial_latent_start", "kmeans_centres",
           "kmeans_inducing", "nearest_rows", "pairwise_pca_latents", "pca_components",
           "pca_components_of_scatter", "pca_latents", "principal_axes", "principal_directions",
           "select_inducing"]

#: K-means restarts of :func:`kmeans_centres` (K-means as in de Souza 2020, §4.4).
KMEANS_N_INIT = 100
#: Largest block of the rows × reference-rows distance matrix of :func:`nearest_rows` (32 MiB).
DISTANCE_BLOCK = 2 ** 22


def _is_dask(A):
    return hasattr(A, "__dask_graph__")


def principal_axes(Y, n_components, center=True, fix_signs=True):
    """Top principal axes of the rows of ``Y`` by SVD, and the data they were taken from.

    Parameters
    ----------
    Y : ndarray of shape (N, D)
        Data (not modified).
    n_components : int
        Number of axes (at most ``min(N, D)``).
    center : bool, default=True
        Centre the columns first (PCA); ``False`` takes the right singular vectors of ``Y``
        itself.
    fix_signs : bool, default=True
        Make the largest-magnitude loading of each axis positive (deterministic signs, as
        scikit-learn's ``PCA``); ``False`` keeps LAPACK's signs.

    Returns
    -------
    axes : ndarray of shape (n_components, D)
        Orthonormal rows, largest singular value first.
    Yc : ndarray of shape (N, D)
        The centred data (``Y`` itself when ``center`` is false).
    """
    Yc = Y - Y.mean(axis=0) if center else Y
    _, _, Vt = np.linalg.svd(Yc, full_matrices=False)
    if not fix_signs:
        return Vt[:n_components], Yc
    signs = np.sign(Vt[np.arange(Vt.shape[0]), np.argmax(np.abs(Vt), axis=1)])
    signs[signs == 0] = 1.0
    return Vt[:n_components] * signs[:n_components, None], Yc


def pca_components(X, n_components):
    """``PCA(n_components).fit(X).components_``, padded with zero rows beyond the data's rank.

    Constant data (no direction to find) gets the first coordinate axes instead.

    Parameters
    ----------
    X : ndarray of shape (N, D)
        Data (not modified).
    n_components : int
        Number of rows ``Q``.

    Returns
    -------
    P : ndarray of shape (Q, D)
    """
    q = min(n_components, X.shape[0], X.shape[1])
    P = np.zeros((n_components, X.shape[1]))
    if np.any(np.ptp(X, axis=0) > 0):
        P[:q] = principal_axes(X, q)[0]
    else:
        P[:q, :q] = np.eye(q)
    return P


def pca_components_of_scatter(scatter, spread, n_rows, n_components):
    """:func:`pca_components` from the scatter matrix of the centred rows instead of the rows.

    The axes are the eigenvectors of ``scatter``, largest eigenvalue first, signed as
    :func:`principal_axes` signs them; equal to :func:`pca_components` up to rounding.

    Parameters
    ----------
    scatter : ndarray of shape (D, D)
        ``XcᵀXc`` of the centred rows ``Xc``.
    spread : ndarray of shape (D,)
        Range (max − min) of each column: all zero means constant data.
    n_rows : int
        Number of rows ``N``.
    n_components : int
        Number of rows ``Q``.

    Returns
    -------
    P : ndarray of shape (Q, D)
    """
    D = scatter.shape[0]
    q = min(n_components, n_rows, D)
    P = np.zeros((n_components, D))
    if not np.any(np.asarray(spread) > 0):
        P[:q, :q] = np.eye(q)
        return P
    evals, evecs = np.linalg.eigh(np.asarray(scatter))
    V = evecs[:, np.argsort(evals, kind="stable")[::-1]].T  # rows: principal axes, largest first
    signs = np.sign(V[np.arange(D), np.argmax(np.abs(V), axis=1)])
    signs[signs == 0] = 1.0
    P[:q] = V[:q] * signs[:q, None]
    return P


def pca_latents(Y, n_components):
    """Unwhitened PCA scores: top eigenvectors of the sample covariance of centred ``Y``.

    Columns beyond the rank of ``Y`` (including ``n_components > n_features``) are filled with
    small deterministic values so no latent dimension starts identically zero.

    Parameters
    ----------
    Y : ndarray or dask array of shape (N, D)
        Data (not modified). A dask array's axes come from the eigen-decomposition of the
        D × D Gram matrix of its centred columns (one pass over the rows; it rounds differently
        from the SVD), and its scores are a lazy dask array partitioned like its rows.
    n_components : int
        Latent dimension ``Q``.

    Returns
    -------
    X : ndarray or dask array of shape (N, Q)
        Initial latent means.
    """
    if _is_dask(Y):
        return _pca_latents_dask(Y, n_components)
    N, D = Y.shape
    q = min(n_components, D, max(N - 1, 1))
    V, Yc = principal_axes(Y, q)
    X = np.zeros((N, n_components))
    X[:, :q] = Yc @ V.T
    if q < n_components:
        scale = float(np.std(X[:, :q])) if q > 0 and np.std(X[:, :q]) > 0 else 1.0
        t = np.linspace(-1.0, 1.0, N)
        for j in range(q, n_components):
            X[:, j] = 1e-2 * scale * np.sin((j + 1) * np.pi * t)
    return X


def _pca_latents_dask(Y, Q):
    import dask.array as da

    N, D = Y.shape
    Yc = Y - Y.mean(axis=0)
    q = min(Q, D, max(N - 1, 1))
    scatter = np.asarray((Yc.T @ Yc).compute())
    cols = [Yc @ pca_components_of_scatter(scatter, np.diag(scatter), N, q).T]
    if q < Q:
        scale = float(cols[0].std().compute()) if q > 0 else 1.0
        scale = scale if scale > 0 else 1.0
        t = da.linspace(-1.0, 1.0, N, chunks=(Y.chunks[0],))
        cols += [1e-2 * scale * da.sin((j + 1) * np.pi * t)[:, None] for j in range(q, Q)]
    return da.concatenate(cols, axis=1).rechunk({0: Y.chunks[0], 1: -1})


def initial_latent_means(Y, n_components, init, random_state):
    """Initial latent means of the rows of ``Y`` (de Souza et al. 2021, §4.1).

    Parameters
    ----------
    Y : ndarray or dask array of shape (N, D)
        The normalised data.
    n_components : int
        Latent dimension ``Q``.
    init : {"pca", "pca_unscaled", "random"} or array-like of shape (N, Q)
        ``"pca"``: :func:`pca_latents` divided by the standard deviation of the first score, so
        the latents match the N(0, I) prior whatever the data scale; ``"pca_unscaled"``: the
        scores themselves; ``"random"``: ``N(0, 0.01)`` draws; an array: a checked copy.
    random_state : numpy.random.RandomState
        Source of the ``"random"`` draws (nothing is drawn otherwise).

    Returns
    -------
    mu : ndarray or dask array of shape (N, Q)
        A dask array, partitioned like the rows, when ``Y`` is one.
    """
    N, Q = Y.shape[0], n_components
    if isinstance(init, str) and init != "random":
        X = pca_latents(Y, Q)
        if init == "pca":
            top = float(X[:, 0].std())
            X = X / top if top > 0 else X
        return X
    if isinstance(init, str):
        mu = 0.1 * random_state.standard_normal((N, Q))
    else:
        mu = check_finite_array("init", init, shape=(N, Q))
    if not _is_dask(Y):
        return mu
    import dask.array as da

    return da.from_array(mu, chunks=(Y.chunks[0], Q))


def initial_latent_start(Y, n_components, init, random_state, *, var_y, scales=True,
                         rows_of=None):
    """The data-derived start of a GPLVM: latent means (:func:`initial_latent_means`), their
    column scales (which set a default kernel) and the mean column variance of ``Y``.

    Parameters
    ----------
    Y : ndarray or dask array of shape (N, D)
        The normalised data (no missing entries).
    n_components, init, random_state
        As in :func:`initial_latent_means`.
    var_y : float
        The mean column variance of ``Y``, returned as it is without ``rows_of``.
    scales : bool, default=True
        Whether the column scales are needed (else ``None`` is returned for them).
    rows_of : callable or None, default=None
        ``PairwiseRows`` (ndarray) or ``DaskPairwiseRows`` (dask array): the PCA start, the
        scales and the variance are then sums on the pairwise tree of the row index
        (:mod:`sklearn_lvgp._core.pairwise`), the same bits for an ndarray and any partitioning.

    Returns
    -------
    mu : ndarray or dask array of shape (N, Q)
        A dask array is persisted.
    scales : ndarray of shape (Q,) or None
    var_y : float
    """
    from .scaling import column_scales, pairwise_column_moments, pairwise_column_variances

    if rows_of is None:
        mu = initial_latent_means(Y, n_components, init, random_state)
        return mu, column_scales(mu) if scales else None, var_y
    if isinstance(init, str) and init != "random":
        mu = pairwise_pca_latents(rows_of(Y), n_components, scaled=init == "pca")
    else:
        mu = initial_latent_means(Y, n_components, init, random_state)
    mu = mu.persist() if hasattr(mu, "persist") else mu
    var_y = float(np.mean(pairwise_column_variances(rows_of(Y))[1]))
    return mu, pairwise_column_moments(rows_of(mu))[1] if scales else None, var_y


def nearest_rows(Y, refs):
    """Index of the nearest row of ``refs`` (Euclidean) for each row of ``Y``.

    The distances are taken in blocks of ``Y``'s rows of at most :data:`DISTANCE_BLOCK`
    entries, so memory stays bounded in the number of rows.

    Parameters
    ----------
    Y : ndarray of shape (n, D)
    refs : ndarray of shape (N, D)

    Returns
    -------
    nearest : ndarray of shape (n,), dtype intp
    """
    rows = max(1, DISTANCE_BLOCK // max(1, refs.shape[0]))
    ref_sq = np.sum(refs ** 2, axis=1)[None, :]
    nearest = np.empty(Y.shape[0], dtype=np.intp)
    for a in range(0, Y.shape[0], rows):
        block = Y[a:a + rows]
        d2 = np.sum(block ** 2, axis=1)[:, None] - 2.0 * block @ refs.T + ref_sq
        nearest[a:a + rows] = np.argmin(d2, axis=1)
    return nearest


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


def kmeans_centres(X, n_clusters, seed, n_init=KMEANS_N_INIT):
    """K-means centres of the rows of ``X``, best of ``n_init`` runs (de Souza 2020, §4.4).

    The rows themselves when there are exactly ``n_clusters`` of them. Duplicate rows can leave
    fewer distinct clusters than asked (the caller's jitter copes).

    Parameters
    ----------
    X : ndarray of shape (N, D)
        Points (not modified).
    n_clusters : int
        Number of centres.
    seed : int
        Seed of scikit-learn's ``KMeans``.
    n_init : int, default=100
        Runs from different k-means++ starts.

    Returns
    -------
    centres : ndarray of shape (n_clusters, D)
    """
    if n_clusters == X.shape[0]:
        return np.array(X, dtype=np.float64)
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="openmp"):
        # One OpenMP thread: a started OpenMP pool hangs any later fork of this process (and
        # scikit-learn's k-means gives the same centres for any thread count)
        warnings.simplefilter("ignore", ConvergenceWarning)
        km = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=seed).fit(X)
    return np.array(km.cluster_centers_, dtype=np.float64)


def principal_directions(X, k, random_state, scaled=True):
    """Top-``k`` principal directions (columns) from the eigen-decomposition of the covariance,
    padded with ``N(0, 1/D)`` columns beyond ``D``.

    Parameters
    ----------
    X : ndarray of shape (N, D)
        Data.
    k : int
        Number of directions.
    random_state : numpy.random.RandomState
        Source of the padding (drawn whatever ``k``).
    scaled : bool, default=True
        Scale each direction by the square root of its eigenvalue (GP-CDE's output mixing);
        ``False`` keeps unit directions (GP-CDE's input projection).

    Returns
    -------
    directions : ndarray of shape (D, k)
    """
    D = X.shape[1]
    C = np.cov(X, rowvar=False).reshape(D, D) if X.shape[0] > 1 else np.eye(D)
    vals, vecs = np.linalg.eigh(C)
    order = np.argsort(vals)[::-1]
    vals, vecs = np.maximum(vals[order], 0.0), vecs[:, order]
    out = random_state.standard_normal((D, k)) / np.sqrt(D)
    m = min(k, D)
    out[:, :m] = vecs[:, :m]
    if scaled:
        out[:, :m] *= np.sqrt(np.where(vals[:m] > 0, vals[:m], 1.0))
    return out


def fill_missing(Y):
    """``Y`` with each missing (NaN) entry replaced by its column's observed mean, for the
    initialisation; the rows with every entry missing (a boolean mask); the mean column
    variance of the observed entries.

    Returns ``Y`` itself (and no row) when nothing is missing.
    """
    missing = np.isnan(Y)
    if not missing.any():
        return Y, np.zeros(Y.shape[0], dtype=bool), float(np.mean(np.var(Y, axis=0)))
    return (np.where(missing, np.nanmean(Y, axis=0), Y), missing.all(axis=1),
            float(np.mean(np.nanvar(Y, axis=0))))

def pairwise_pca_latents(rows, n_components, scaled=False):
    """:func:`pca_latents` with its sums over the rows on the pairwise tree of the row index.

    The principal axes are the eigenvectors of the Gram matrix of the centred rows (summed on
    the tree), the scores are formed row by row in a fixed order, and the padding columns
    beyond the data's rank from the row index: every row's result is the same whichever rows
    it is stored with, so an ndarray and any partitioning of a dask array give the same bits.

    Parameters
    ----------
    rows : PairwiseRows or DaskPairwiseRows
        The data ``(N, D)`` (:class:`~sklearn_lvgp._core.pairwise.PairwiseRows`, or
        :class:`~sklearn_lvgp.engine._dask.DaskPairwiseRows` of a dask array).
    n_components : int
        Latent dimension ``Q``.
    scaled : bool, default=False
        Divide the scores by the standard deviation of the first one (a GPLVM's ``"pca"``
        start).

    Returns
    -------
    X : ndarray or dask array of shape (N, Q)
        Initial latent means, of the kind ``rows`` holds.
    """
    N, D = rows.n_rows, rows.n_columns
    q = min(n_components, D, max(N - 1, 1))
    mean = rows.sum(lambda B: B) / N
    gram = rows.sum(lambda B: _outer_rows(B - mean))
    evals, evecs = np.linalg.eigh(gram)
    V = evecs[:, np.argsort(evals)[::-1]].T  # rows: principal axes, largest first
    signs = np.sign(V[np.arange(D), np.argmax(np.abs(V), axis=1)])
    signs[signs == 0] = 1.0
    W = V[:q] * signs[:q, None]
    X = rows.map(_Scores(mean, W, n_components), n_components)
    if q < n_components:
        flat = rows.like(X).sum(lambda B: _row_sums(B[:, :q])) / (N * q)
        spread = rows.like(X).sum(lambda B: _row_sums(_square(B[:, :q] - flat))) / (N * q)
        scale = float(np.sqrt(spread)) if q > 0 and spread > 0 else 1.0
        X = rows.like(X).map(_Padding(q, scale, N), n_components)
    if scaled:
        top = float(np.sqrt(pairwise_column_variances(rows.like(X))[1][0]))
        if top > 0:
            X = X / top
    return X


def _outer_rows(C):
    """Per-row outer products ``c_n c_nᵀ``."""
    return C[:, :, None] * C[:, None, :]


def _square(x):
    return x * x


def _row_sums(B):
    """Each row's sum over its columns, left to right (the same bits for every block)."""
    out = np.zeros(B.shape[0])
    for j in range(B.shape[1]):
        out += B[:, j]
    return out


class _Scores:
    """Rows' PCA scores ``(y_n − mean) Wᵀ``, each a sum over the columns in a fixed order (a
    matrix product's rounding may depend on the other rows of the block), and zeros beyond
    the axes."""

    def __init__(self, mean, W, n_components):
        self.mean, self.W, self.n_components = mean, W, n_components

    def __call__(self, block, first):
        C = block - self.mean
        X = np.zeros((block.shape[0], self.n_components))
        q = self.W.shape[0]
        for d in range(C.shape[1]):
            X[:, :q] += C[:, d:d + 1] * self.W[:, d]
        return X


class _Padding:
    """Scores with the columns beyond the rank set to ``1e-2 · scale · sin((j + 1) π t_n)``,
    ``t`` the ``N`` points ``np.linspace(-1, 1, N)`` computes, formed from each row's index."""

    def __init__(self, q, scale, n_rows):
        self.q, self.scale, self.n_rows = q, scale, n_rows

    def __call__(self, block, first):
        X = np.array(block)
        index = np.arange(first, first + block.shape[0], dtype=np.float64)
        N = self.n_rows
        t = index * (2.0 / (N - 1)) + -1.0 if N > 1 else np.full(block.shape[0], -1.0)
        if N > 1 and first + block.shape[0] == N:
            t[-1] = 1.0
        for j in range(self.q, X.shape[1]):
            X[:, j] = 1e-2 * self.scale * np.sin((j + 1) * np.pi * t)
        return X
