"""Column means and scales for standardising data.

A column whose values are all equal can still get a standard deviation of about ``eps · |mean|``
from rounding in the mean (naval's constant 0.998 column: 1.1e-16). Dividing by it maps the
column to ±1 in training and sends any new value that differs in the fourth decimal to ~1e12,
where every stationary kernel is zero. Columns that are constant up to rounding therefore get
scale 1, as in scikit-learn's ``StandardScaler``.
"""

import numpy as np


def column_moments(A):
    """Mean and scale of each column, for ``(A - mean) / scale``.

    The scale is the standard deviation, or 1 for a column that is constant up to rounding:
    the computed variance of ``n`` equal values ``c`` is bounded by ``n·eps·var + (n·|c|·eps)²``
    (the error bound of the two-pass algorithm, Chan, Golub & LeVeque 1983), and a column whose
    variance is within it is treated as constant.

    Parameters
    ----------
    A : ndarray of shape (n_samples, n_columns)
        Data, float64; NaN entries are missing (the moments are the observed entries').

    Returns
    -------
    mean : ndarray of shape (n_columns,)
        Column means.
    scale : ndarray of shape (n_columns,)
        Positive scales.
    """
    eps = np.finfo(np.float64).eps
    if _has_nan(A):  # NaN = missing: the moments of each column's observed entries
        n = np.sum(~np.isnan(A), axis=0)
        big = np.nanmax(np.abs(A), axis=0)
        big = np.where(np.isfinite(big) & (big > 0), big, 1.0)
        U = A / big
        mean, var = np.nanmean(U, axis=0), np.nanvar(U, axis=0)
        constant = var <= n * eps * var + (n * mean * eps) ** 2
        return mean * big, np.where(constant, 1.0, np.sqrt(var) * big)
    n = A.shape[0]
    # moments of A / max|A| per column: squares of 1e160 overflow and of 1e-200 underflow
    # (a constant column to the test below, and kmeans on unscaled 1e160 crashes in scipy)
    big = np.max(np.abs(A), axis=0) if n else np.ones(A.shape[1])
    big = np.where(np.isfinite(big) & (big > 0), big, 1.0)
    U = A / big
    mean = U.mean(axis=0)
    var = U.var(axis=0)
    constant = var <= n * eps * var + (n * mean * eps) ** 2
    return mean * big, np.where(constant, 1.0, np.sqrt(var) * big)


def column_scales(A):
    """The ``scale`` of :func:`column_moments` alone (initial length scales, spreads)."""
    return column_moments(A)[1]


#: Values of the ``normalize_X`` parameter.
NORMALIZE_OPTIONS = ("standardize", "center", "none")


def normalization(A, rule):
    """``(mean, scale)`` of the ``normalize_X`` rule: standardise, only centre, or leave as is.

    Parameters
    ----------
    A : ndarray of shape (n_samples, n_columns)
        Data, float64 (a dask array gives dask results).
    rule : {"standardize", "center", "none"}
        ``"standardize"``: :func:`column_moments`; ``"center"``: column means and unit scales;
        ``"none"``: zeros and ones.

    Returns
    -------
    mean, scale : ndarray of shape (n_columns,)
    """
    if rule == "standardize":
        return column_moments(A)
    if rule != "center":
        return np.zeros(A.shape[1]), np.ones(A.shape[1])
    return np.nanmean(A, axis=0) if _has_nan(A) else A.mean(axis=0), np.ones(A.shape[1])


def observed_log_scale(Y, scale):
    """``Σ_d log scale_d`` over the observed (non-NaN) entries of each row of ``Y`` — the
    log-Jacobian of the normalisation of a density of those entries; one number when ``Y`` has
    no NaN."""
    missing = np.isnan(Y)
    if not missing.any():
        return np.sum(np.log(scale))
    return (~missing) @ np.log(scale)


def _has_nan(A):
    """Whether the in-memory ``A`` has a NaN entry (a missing value; dask arrays: never)."""
    return isinstance(A, np.ndarray) and bool(np.isnan(A).any())
