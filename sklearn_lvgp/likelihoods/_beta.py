"""Beta likelihood for targets in (0, 1), in the single-parameter form of Salimbeni (2020,
§3.4.4): its expectation by jitted Gauss–Hermite quadrature."""

import numpy as np
from scipy.special import digamma, expit, gammaln, ndtr

from . import _quadrature_numba as _nb
from ._quadrature import _NO_EDGES, QuadratureLikelihood

__all__ = ["Beta"]


class Beta(QuadratureLikelihood):
    """Beta likelihood for targets in (0, 1), with a learned precision.

    ``p(y | f) = Beta(y | s m, s (1 - m))`` with mean ``m = Phi(f)`` or ``sigma(f)`` and precision
    ``s`` (Salimbeni 2020, §3.4.4). ``E[y | f] = m`` and ``Var[y | f] = m (1 - m) / (s + 1)``. The
    expectation and the predictive density are 1-D Gauss–Hermite sums (jitted); the predictive
    moments are Gauss–Hermite sums of ``m``, ``m^2`` and ``m (1 - m)``. Where ``s m`` or ``s (1 -
    m)`` underflows (``|f| > 37`` with the probit link) it is floored at ``1e-300``.

    Parameters
    ----------
    scale : float, default=1.0
        The precision ``s = alpha + beta``.
    link : {"probit", "logit"}, default="probit"
        Inverse link from the latent function to the mean ``m``.
    scale_bounds : pair of float, "fixed" or None, default=(1e-5, 1e5)
        Bounds of ``scale`` (``theta`` holds its log).
    gh_order : int, default=20
        Gauss–Hermite nodes.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.likelihoods import Beta
    >>> mean, var = Beta(scale=10.0).predict_mean_and_var(np.zeros((1, 1)), np.zeros((1, 1)))
    >>> float(mean[0, 0]), round(float(var[0, 0]), 6)
    (0.5, 0.022727)
    """

    _hyperparameters = (("scale", "log"),)

    def __init__(self, scale=1.0, link="probit", scale_bounds=(1e-5, 1e5), gh_order=20):
        self.scale = scale
        self.link = link
        self.scale_bounds = scale_bounds
        self.gh_order = gh_order

    def _check_values(self):
        super()._check_values()
        self._positive("scale", self.scale)
        if not (isinstance(self.link, str) and self.link in ("probit", "logit")):
            raise ValueError(f"link must be 'probit' or 'logit', got {self.link!r}.")

    def check_targets(self, y, n_classes=None):
        y = super().check_targets(y)
        if not np.all((y > 0) & (y < 1)):
            raise ValueError("Beta needs targets strictly between 0 and 1.")
        return y

    def _kind(self):
        return _nb.BETA_PROBIT if self.link == "probit" else _nb.BETA_LOGIT

    def _node_params(self):
        s = float(self.scale)
        return np.array([s, gammaln(s), digamma(s)]), _NO_EDGES

    def _slot_adjoints(self, weighted_slots, y):
        return {"scale": weighted_slots[:, 0].sum()}

    def _mean_and_var(self, mu, var):
        f, w = self._node_values(mu, var)
        m = ndtr(f) if self.link == "probit" else expit(f)
        mean = m @ w
        second = (m * m) @ w
        within = (m * (1.0 - m)) @ w / (float(self.scale) + 1.0)
        return mean, within + np.maximum(second - mean * mean, 0.0)
