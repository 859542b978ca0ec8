"""The heteroscedastic / bimodal 1-D conditional-density problem.

Restated from the demo of the public IWVI code (Salimbeni et al. 2019): ``x`` uniform on
``[-3, -0.5]`` and on ``[1, 3]``; with probability 0.6
``y = exp(-(x-1)^2) + exp(-(x+1)^2) + 0.1 exp(eps)`` (skewed log-normal noise), otherwise
``y = exp(-(x-1)^2) + U(-0.1, 0.1)``. Its conditional density is known in closed form.
"""

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_bimodal_conditional", "bimodal_conditional_log_density"]

_P_SKEW = 0.6


def _means(x):
    a = np.exp(-(x - 1.0) ** 2)
    return a + np.exp(-(x + 1.0) ** 2), a


def make_bimodal_conditional(n_per_region=100, random_state=None):
    """Draw the bimodal, skewed, heteroscedastic 1-D problem.

    Parameters
    ----------
    n_per_region : int, default=100
        Points drawn uniformly in each of ``[-3, -0.5]`` and ``[1, 3]``.
    random_state : int, RandomState instance or None, default=None
        Seed (our reproduction protocol uses ``s`` for training draws and ``1000 + s`` for test
        draws).

    Returns
    -------
    X : ndarray of shape (2 * n_per_region, 1)
        Conditions.
    y : ndarray of shape (2 * n_per_region,)
        Targets.
    """
    rs = check_random_state(random_state)
    n = int(n_per_region)
    x = np.concatenate([rs.uniform(-3.0, -0.5, n), rs.uniform(1.0, 3.0, n)])
    m1, m2 = _means(x)
    skew = rs.uniform(size=2 * n) < _P_SKEW
    y1 = m1 + 0.1 * np.exp(rs.standard_normal(2 * n))
    y2 = m2 + rs.uniform(-0.1, 0.1, 2 * n)
    return x[:, None], np.where(skew, y1, y2)


def bimodal_conditional_log_density(X, y):
    """The true ``log p(y | x)`` of :func:`make_bimodal_conditional` (the oracle).

    Parameters
    ----------
    X : array-like of shape (n, 1)
        Conditions.
    y : array-like of shape (n,)
        Targets.

    Returns
    -------
    log_density : ndarray of shape (n,)
        ``log p(y_i | x_i)`` of the generating mixture.
    """
    x = np.asarray(X, dtype=np.float64).reshape(-1)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    m1, m2 = _means(x)
    z = (y - m1) / 0.1
    with np.errstate(divide="ignore", invalid="ignore"):
        lz = np.log(np.where(z > 0, z, 1.0))
        p1 = np.where(z > 0, np.exp(-0.5 * lz ** 2) / np.sqrt(2 * np.pi) / (z * 0.1), 0.0)
    p2 = np.where(np.abs(y - m2) < 0.1, 1.0 / 0.2, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(_P_SKEW * p1 + (1.0 - _P_SKEW) * p2)
