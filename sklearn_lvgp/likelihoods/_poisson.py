"""Poisson likelihood with the exponential link: its expectation in closed form."""

import numpy as np
from scipy.special import gammaln, logsumexp

from ._base import Likelihood, LikelihoodVJP, broadcast_adjoint
from ._quadrature import gh_nodes

__all__ = ["Poisson"]


class Poisson(Likelihood):
    """Poisson likelihood for counts ``y`` in {0, 1, 2, ...} with rate ``exp(f)``.

    ``E log p(y | f) = y mu - exp(mu + var / 2) - log(y!)`` in closed form; the predictive
    mean is ``exp(mu + var / 2)`` and the variance ``mean + (exp(var) - 1) mean^2``; the
    predictive density ``log E p(y | f)`` is a Gauss–Hermite sum in log space.

    Parameters
    ----------
    gh_order : int, default=20
        Gauss–Hermite nodes of the predictive density.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.likelihoods import Poisson
    >>> Poisson().predict_mean_and_var(np.zeros((1, 1)), np.zeros((1, 1)))
    (array([[1.]]), array([[1.]]))
    """

    def __init__(self, gh_order=20):
        self.gh_order = gh_order

    def _check_values(self):
        self._positive_int("gh_order", self.gh_order)

    def check_targets(self, y, n_classes=None):
        y = super().check_targets(y)
        if np.any(y < 0) or np.any(y != np.round(y)):
            raise ValueError("Poisson needs non-negative integer counts as targets.")
        return y

    def _expectation(self, y, mu, var):
        rate = np.exp(mu + 0.5 * var)
        return y * mu - rate - gammaln(y + 1.0), (y, rate)

    def _expectation_vjp(self, dL_dvalues, cache):
        y, rate = cache
        w = broadcast_adjoint(dL_dvalues, y.shape)
        return LikelihoodVJP(w * (y - rate), -0.5 * w * rate, np.zeros(0))

    def _log_density(self, y, mu, var):
        x, w = gh_nodes(self.gh_order)
        f = mu[..., None] + np.sqrt(np.maximum(var, 0.0))[..., None] * x
        logp = y[..., None] * f - np.exp(f) - gammaln(y + 1.0)[..., None]
        return logsumexp(logp, axis=-1, b=w)

    def _mean_and_var(self, mu, var):
        mean = np.exp(mu + 0.5 * var)
        return mean, mean + np.expm1(var) * mean * mean
