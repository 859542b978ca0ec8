"""Gross outliers in regression targets, for robust-likelihood experiments."""

import numpy as np
from sklearn.utils import check_random_state

from .._core.validation import check_finite_array, check_float

__all__ = ["add_target_outliers"]


def add_target_outliers(y, fraction=0.05, magnitude=10.0, random_state=None):
    """Corrupt a fraction of regression targets with gross outliers.

    ``round(fraction * n)`` rows, drawn uniformly without replacement, get
    ``y_i + s_i * magnitude * std(y)`` with independent random signs ``s_i = ±1`` (``std`` of the
    uncorrupted targets). The other rows are unchanged.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Targets.
    fraction : float, default=0.05
        Fraction of rows corrupted, in [0, 1].
    magnitude : float, default=10.0
        Shift of a corrupted row, in standard deviations of ``y``.
    random_state : int, RandomState instance or None, default=None
        Seeds the choice of rows (first) and their signs (second).

    Returns
    -------
    y_corrupted : ndarray of shape (n_samples,)
        A float64 copy of ``y`` with the outliers.
    outliers : ndarray of shape (n_samples,), dtype=bool
        ``True`` on the corrupted rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.datasets import add_target_outliers
    >>> y = np.sin(np.linspace(0, 6, 100))
    >>> y_out, outliers = add_target_outliers(y, random_state=0)
    >>> int(outliers.sum())
    5
    """
    y = check_finite_array("y", y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}.")
    fraction = check_float("fraction", fraction, 0.0)
    if fraction > 1.0:
        raise ValueError(f"fraction must be <= 1, got {fraction}.")
    magnitude = check_float("magnitude", magnitude, 0.0)
    rs = check_random_state(random_state)
    n = y.shape[0]
    k = int(round(fraction * n))
    rows = rs.choice(n, k, replace=False)
    signs = rs.choice([-1.0, 1.0], k)
    corrupted = y.copy()
    corrupted[rows] += signs * magnitude * y.std()
    outliers = np.zeros(n, dtype=bool)
    outliers[rows] = True
    return corrupted, outliers
