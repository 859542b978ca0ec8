"""Student-t likelihood with a learned scale and fixed or learned degrees of freedom
(Salimbeni 2020, §3.4.2): its expectation by jitted Gauss–Hermite quadrature."""

import numpy as np
from scipy.special import digamma, gammaln

from . import _quadrature_numba as _nb
from ._quadrature import _NO_EDGES, QuadratureLikelihood

__all__ = ["StudentT"]


class StudentT(QuadratureLikelihood):
    """Student-t likelihood ``p(y | f) = St(y | f, scale, df)``, robust to outliers.

    ``log p = lgamma((df+1)/2) - lgamma(df/2) - log(df pi)/2 - log(scale)
    - (df+1)/2 log(1 + (y-f)^2 / (df scale^2))``. The expectation and the predictive density
    are 1-D Gauss–Hermite sums (jitted); the predictive mean is ``mu`` and the variance
    ``var + scale^2 df / (df - 2)`` (infinite for ``df <= 2``).

    Parameters
    ----------
    df : float, default=4.0
        Degrees of freedom.
    scale : float, default=1.0
        Scale of the noise.
    df_bounds : pair of float, "fixed" or None, default="fixed"
        Bounds of ``df`` (``theta`` holds its log). Fixed by default: the degrees of freedom
        are hard to learn together with the scale; pass a pair such as ``(2.0, 100.0)`` to
        learn them.
    scale_bounds : pair of float, "fixed" or None, default=(1e-5, 1e5)
        Bounds of ``scale`` (``theta`` holds its log).
    gh_order : int, default=20
        Gauss–Hermite nodes.

    Examples
    --------
    >>> from sklearn_lvgp.likelihoods import StudentT
    >>> lik = StudentT(df=4.0, scale=0.5)
    >>> lik.get_params()["df_bounds"]
    'fixed'
    """

    _hyperparameters = (("df", "log"), ("scale", "log"))

    def __init__(self, df=4.0, scale=1.0, df_bounds="fixed", scale_bounds=(1e-5, 1e5),
                 gh_order=20):
        self.df = df
        self.scale = scale
        self.df_bounds = df_bounds
        self.scale_bounds = scale_bounds
        self.gh_order = gh_order

    def _check_values(self):
        super()._check_values()
        self._positive("df", self.df)
        self._positive("scale", self.scale)

    def _kind(self):
        return _nb.STUDENT_T

    def _node_params(self):
        df, scale = float(self.df), float(self.scale)
        c = gammaln(0.5 * (df + 1.0)) - gammaln(0.5 * df) - 0.5 * np.log(df * np.pi) - np.log(scale)
        dc = df * 0.5 * (digamma(0.5 * (df + 1.0)) - digamma(0.5 * df)) - 0.5
        return np.array([df, scale, c, dc]), _NO_EDGES

    def _slot_adjoints(self, weighted_slots, y):
        sums = weighted_slots.sum(axis=0)
        return {"df": sums[0], "scale": sums[1]}

    def _mean_and_var(self, mu, var):
        df, scale = float(self.df), float(self.scale)
        noise = scale * scale * df / (df - 2.0) if df > 2.0 else np.inf
        return mu.copy(), var + noise
