"""Multiclass robust-max likelihood of Hernández-Lobato et al. (2011): its expectation through a
1-D Gauss–Hermite integral (jitted)."""

import numpy as np

from . import _quadrature_numba as _nb
from ._base import LikelihoodVJP, MulticlassLikelihood, broadcast_adjoint
from ._quadrature import gh_nodes

__all__ = ["RobustMax"]

#: Floor of the latent variances (``sd >= 1e-10``): the class probability divides by them.
VAR_FLOOR = 1e-20


class RobustMax(MulticlassLikelihood):
    """Robust-max multiclass likelihood, with one latent function per class.

    ``p(y | f) = 1 - epsilon`` if ``y = argmax_k f_k``, else ``epsilon / (K - 1)``
    (Hernández-Lobato et al. 2011): labelling errors happen with probability ``epsilon``. With
    ``p = P(argmax_k f_k = y)`` under ``q(f)``,
    ``E log p(y | f) = p log(1 - epsilon) + (1 - p) log(epsilon / (K - 1))``, and ``p`` is a
    1-D integral over the latent function of class ``y``,
    ``p = E_{f_y} prod_{k != y} Phi((f_y - mu_k) / sd_k)``, computed by Gauss–Hermite
    quadrature (jitted) with its exact gradients. Class probabilities are
    ``p_k (1 - epsilon) + (1 - p_k) epsilon / (K - 1)``, normalised over the classes (the
    quadrature's ``p_k`` sum to one only up to its error). Variances below ``1e-20`` count as
    ``1e-20``.

    Parameters
    ----------
    epsilon : float, default=1e-3
        Probability of a labelling error, in (0, 1).
    epsilon_bounds : pair of float, "fixed" or None, default="fixed"
        Bounds of ``epsilon`` in (0, 1) (``theta`` holds its logit). Fixed by default; pass a
        pair such as ``(1e-6, 0.5)`` to learn it.
    gh_order : int, default=20
        Gauss–Hermite nodes.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.likelihoods import RobustMax
    >>> RobustMax().predict_proba(np.array([[0.0, 0.0]]), np.ones((1, 2))).round(3)
    array([[0.5, 0.5]])
    """

    _hyperparameters = (("epsilon", "logit"),)

    def __init__(self, epsilon=1e-3, epsilon_bounds="fixed", gh_order=20):
        self.epsilon = epsilon
        self.epsilon_bounds = epsilon_bounds
        self.gh_order = gh_order

    def _check_values(self):
        self._positive_int("gh_order", self.gh_order)
        eps = self._positive("epsilon", self.epsilon)
        if eps >= 1.0:
            raise ValueError(f"epsilon must lie in (0, 1), got {self.epsilon!r}.")

    def _prob_largest(self, y, mu, var):
        """``p = P(argmax f = y)`` ``(N,)`` and its gradients in ``mu`` and ``var``."""
        x, w = gh_nodes(self.gh_order)
        sd = np.sqrt(np.maximum(var, VAR_FLOOR))
        N, K = mu.shape
        p, dmu, dsd = np.empty(N), np.empty((N, K)), np.empty((N, K))
        _nb.robust_max_prob(np.ascontiguousarray(y), mu, sd, x, w, p, dmu, dsd)
        dvar = np.where(var > VAR_FLOOR, dsd / (2.0 * sd), 0.0)
        return p, dmu, dvar

    def _log_weights(self, K):
        """``log(1 - epsilon)`` and ``log(epsilon / (K - 1))``."""
        eps = float(self.epsilon)
        return np.log1p(-eps), np.log(eps / (K - 1))

    def _expectation(self, y, mu, var):
        p, dmu, dvar = self._prob_largest(y, mu, var)
        hit, miss = self._log_weights(mu.shape[1])
        return p * hit + (1.0 - p) * miss, (p, dmu, dvar, hit - miss)

    def _expectation_vjp(self, dL_dvalues, cache):
        p, dmu, dvar, slope = cache
        w = broadcast_adjoint(dL_dvalues, p.shape)
        theta = np.zeros(0)
        if self.n_theta:
            eps = float(self.epsilon)
            # d/d logit(eps) of p log(1-eps) + (1-p) log(eps/(K-1)): eps (1-eps) (-p/(1-eps)
            # + (1-p)/eps)
            theta = self._pack_theta_grad({"epsilon": np.sum(w * ((1.0 - p) * (1.0 - eps)
                                                                  - p * eps))})
        ws = (w * slope)[:, None]
        return LikelihoodVJP(ws * dmu, ws * dvar, theta)

    def _proba(self, mu, var):
        N, K = mu.shape
        eps = float(self.epsilon)
        out = np.empty((N, K))
        for k in range(K):
            p = self._prob_largest(np.full(N, k, dtype=np.int64), mu, var)[0]
            out[:, k] = p * (1.0 - eps) + (1.0 - p) * eps / (K - 1)
        return out / out.sum(axis=1, keepdims=True)
