"""Elementwise likelihoods whose expectation is a 1-D Gauss–Hermite sum, computed by the jitted
loops of :mod:`._quadrature_numba` in one pass together with its derivatives.

``E_N(f|mu,var) g(f) ≈ sum_k w_k g(mu + sd x_k)`` with the probabilists' nodes ``x_k`` and
normalised weights ``w_k`` of :func:`~sklearn_lvgp.expectations._rules.gauss_hermite_rule`
(Salimbeni 2020, §1.2). The gradients are those of this sum, so finite differences of the
computed expectation match them to rounding.
"""

import numpy as np

from ..expectations._rules import gauss_hermite_rule
from . import _quadrature_numba as _nb
from ._base import Likelihood, LikelihoodVJP, broadcast_adjoint

__all__ = ["QuadratureLikelihood", "gh_nodes"]

_NO_EDGES = np.zeros(0)


def gh_nodes(gh_order):
    """1-D probabilists' Gauss–Hermite nodes and normalised weights (cached, read-only).

    Parameters
    ----------
    gh_order : int
        Number of nodes.

    Returns
    -------
    x, w : ndarray of shape (gh_order,)
    """
    rule = gauss_hermite_rule(gh_order, 1)
    return rule.nodes[:, 0], rule.weights


class QuadratureLikelihood(Likelihood):
    """An elementwise likelihood integrated by Gauss–Hermite quadrature.

    A subclass sets ``gh_order`` in ``__init__`` and defines :meth:`_kind` (the jitted
    likelihood), :meth:`_node_params` and, if it has hyperparameters, :meth:`_slot_adjoints`.
    """

    def _kind(self):
        raise NotImplementedError

    def _node_params(self):
        """``(params, edges)`` of the jitted log density (see ``_quadrature_numba._node``)."""
        return np.zeros(0), _NO_EDGES

    def _slot_adjoints(self, weighted_slots, y):
        """Per-hyperparameter ``theta``-space adjoints from ``slots * dL_dvalues`` ``(n, 3)``."""
        return {}

    def _check_values(self):
        self._positive_int("gh_order", self.gh_order)

    def _nodes(self):
        return gh_nodes(self.gh_order)

    # ------------------------------------------------------------------------- expectation
    def _expectation(self, y, mu, var):
        x, w = self._nodes()
        params, edges = self._node_params()
        n = mu.size
        value, dmu, dvar = np.empty(n), np.empty(n), np.empty(n)
        slots = np.empty((n, _nb.N_SLOTS))
        yf = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
        _nb.gh_expectation(self._kind(), yf, mu.reshape(-1), var.reshape(-1), params, edges,
                           x, w, value, dmu, dvar, slots)
        return value.reshape(mu.shape), (mu.shape, y, dmu, dvar, slots)

    def _expectation_vjp(self, dL_dvalues, cache):
        shape, y, dmu, dvar, slots = cache
        w = broadcast_adjoint(dL_dvalues, shape).reshape(-1)
        theta = np.zeros(0)
        if self.n_theta:
            theta = self._pack_theta_grad(self._slot_adjoints(slots * w[:, None], y))
        return LikelihoodVJP((w * dmu).reshape(shape), (w * dvar).reshape(shape), theta)

    def _log_density(self, y, mu, var):
        x, w = self._nodes()
        params, edges = self._node_params()
        out = np.empty(mu.size)
        yf = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
        _nb.gh_log_density(self._kind(), yf, mu.reshape(-1), var.reshape(-1), params, edges,
                           x, w, out)
        return out.reshape(mu.shape)

    def _node_values(self, mu, var):
        """``f`` at the nodes, shape ``mu.shape + (gh_order,)``, and the weights."""
        x, w = self._nodes()
        return mu[..., None] + np.sqrt(np.maximum(var, 0.0))[..., None] * x, w
