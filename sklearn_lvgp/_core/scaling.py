"""Column means and scales for standardising data.

A column whose values are all equal can still get a standard deviation of about ``eps · |mean|``
from rounding in the mean (naval's constant 0.998 column: 1.1e-16). Dividing by it maps the
column to ±1 in training and sends any new value that differs in the fourth decimal to ~1e12,
where every stationary kernel is zero. Columns that are constant up to rounding therefore get
scale 1, as in scikit-learn's ``StandardScaler``.
"""

import numpy as np

from .validation import data_scale_ok


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


def normalization(A, rule, rows_of=None):
    """``(mean, scale)`` of the ``normalize_X`` rule: standardise, only centre, or leave as is.

    Parameters
    ----------
    A : ndarray of shape (n_samples, n_columns)
        Data, float64 (a dask array gives dask results).
    rule : {"standardize", "center", "none"}
        ``"standardize"``: :func:`column_moments`; ``"center"``: column means and unit scales;
        ``"none"``: zeros and ones.
    rows_of : callable or None, default=None
        ``PairwiseRows`` or ``DaskPairwiseRows``: the sums on the pairwise tree of the row index
        instead (:func:`pairwise_normalization`; the same bits for any partitioning).

    Returns
    -------
    mean, scale : ndarray of shape (n_columns,)
    """
    if rows_of is not None:
        mean, scale = pairwise_normalization(rows_of(A), rule)
    elif rule == "standardize":
        return column_moments(A)
    elif rule != "center":
        return np.zeros(A.shape[1]), np.ones(A.shape[1])
    else:
        mean, scale = (np.nanmean(A, axis=0) if _has_nan(A) else A.mean(axis=0),
                       np.ones(A.shape[1]))
    if rule == "center" and isinstance(A, np.ndarray):
        scale = overflow_safe_scale(A, mean, scale)
    return mean, scale


def overflow_safe_scale(A, mean, scale):
    """``scale``, unless ``(A - mean) / scale`` is out of the range the kernels can square.

    Then (values beyond 1e100 in magnitude, or a column spread below 1e-100: what
    :func:`~sklearn_lvgp._core.validation.check_data_scale` refuses) each column's scale is
    multiplied by the power of two nearest to its spread (:func:`column_scales` of the scaled
    data), so that the rescaled data are of order one and the division is exact: the model of
    ``A`` is the model of ``A / 2**k`` in other units. Ordinary data keep their scale, bit for
    bit.

    Parameters
    ----------
    A : ndarray of shape (n_samples, n_columns)
        Data (NaN entries are missing).
    mean, scale : ndarray of shape (n_columns,)
        The normalisation ``(A - mean) / scale`` otherwise applied.

    Returns
    -------
    scale : ndarray of shape (n_columns,)
    """
    with np.errstate(all="ignore"):
        U = (A - mean) / scale
    if data_scale_ok(U) or not np.all(np.isfinite(np.nan_to_num(U, nan=0.0))):
        return scale
    return scale * np.exp2(np.round(np.log2(column_scales(U))))


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



# ------------------------------------------- the same on the pairwise tree of the row index

def pairwise_column_moments(rows):
    """:func:`column_moments` with its sums over the rows taken on the pairwise tree of the row
    index.

    Parameters
    ----------
    rows : PairwiseRows or DaskPairwiseRows
        The rows (:class:`~sklearn_lvgp._core.pairwise.PairwiseRows` of an ndarray, or
        :class:`~sklearn_lvgp.engine._dask.DaskPairwiseRows` of a dask array: the same bits for
        any partitioning).

    Returns
    -------
    mean, scale : ndarray of shape (n_columns,)
    """
    n = rows.n_rows
    eps = np.finfo(np.float64).eps
    big = rows.max(np.abs) if n else np.ones(rows.n_columns)
    big = np.where(np.isfinite(big) & (big > 0), big, 1.0)
    mean, var = _mean_and_variance(rows, big)
    constant = var <= n * eps * var + (n * mean * eps) ** 2
    return mean * big, np.where(constant, 1.0, np.sqrt(var) * big)


def _mean_and_variance(rows, big=None):
    """Column means and (population) variances of the rows, of ``rows / big`` when given."""
    n = rows.n_rows
    if big is None:
        mean = rows.sum(lambda B: B) / n
        return mean, rows.sum(lambda B: _square(B - mean)) / n
    mean = rows.sum(lambda B: B / big) / n
    return mean, rows.sum(lambda B: _square(B / big - mean)) / n


def _square(x):
    return x * x


def pairwise_column_variances(rows):
    """Column means and variances (``ddof=0``) of the rows, on the pairwise tree of the row
    index (``rows`` as in :func:`pairwise_column_moments`)."""
    return _mean_and_variance(rows)


def pairwise_normalization(rows, rule):
    """:func:`normalization` with its sums on the pairwise tree of the row index (``rows`` as
    in :func:`pairwise_column_moments`)."""
    if rule == "standardize":
        return pairwise_column_moments(rows)
    mean = (rows.sum(lambda B: B) / rows.n_rows if rule == "center"
            else np.zeros(rows.n_columns))
    return mean, np.ones(rows.n_columns)
