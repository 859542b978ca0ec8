"""Column means and scales for standardising data.

A column whose values are all equal can still get a standard deviation of about ``eps · |mean|``
from rounding in the mean (naval's constant 0.998 column: 1.1e-16). Dividing by it maps the
column to ±1 in training and sends any new value that differs in the fourth decimal to ~1e12,
where every stationary kernel is zero. Columns that are constant up to rounding therefore get
scale 1, as in scikit-learn's ``StandardScaler``.
"""

import numpy as np


def constant_columns(A):
    """Which columns of ``A`` are constant up to the rounding error of their variance.

    The computed variance of ``n`` equal values ``c`` is bounded by
    ``n·eps·var + (n·|c|·eps)²`` (the error bound of the two-pass algorithm, Chan, Golub &
    LeVeque 1983); a column whose variance is within it is treated as constant.

    Parameters
    ----------
    A : ndarray of shape (n_samples, n_columns)
        Data, float64.

    Returns
    -------
    constant : ndarray of shape (n_columns,), dtype=bool
        True for the constant columns.
    """
    n = A.shape[0]
    eps = np.finfo(np.float64).eps
    var = A.var(axis=0)
    return var <= n * eps * var + (n * A.mean(axis=0) * eps) ** 2


def column_scales(A):
    """Standard deviation of each column, 1 for columns that are constant up to rounding.

    Parameters
    ----------
    A : ndarray of shape (n_samples, n_columns)
        Data, float64.

    Returns
    -------
    scale : ndarray of shape (n_columns,)
        Positive scales.
    """
    return np.where(constant_columns(A), 1.0, A.std(axis=0))


def column_moments(A):
    """Mean and scale (:func:`column_scales`) of each column, for ``(A - mean) / scale``.

    Parameters
    ----------
    A : ndarray of shape (n_samples, n_columns)
        Data, float64.

    Returns
    -------
    mean : ndarray of shape (n_columns,)
        Column means.
    scale : ndarray of shape (n_columns,)
        Positive scales.
    """
    return A.mean(axis=0), column_scales(A)
