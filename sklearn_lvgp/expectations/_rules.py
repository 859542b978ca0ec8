"""Expectation rules as weighted unit-space point sets.

The unscented rule is the symmetric sigma-point set of de Souza et al. (2021, §2.3): ``2Q`` points
``±sqrt(Q) e_q`` with equal weights.

For a diagonal Gaussian q(x_n) = N(mu_n, diag(S_n)) every rule evaluates the integrand at
``x_nk = mu_n + sqrt(S_n) * xi_k`` and returns ``sum_k w_k g(x_nk)``. The rules differ only in the
nodes ``xi`` and weights ``w``.
"""

from functools import lru_cache
from typing import NamedTuple

import numpy as np
from numpy.polynomial.hermite_e import hermegauss

__all__ = ["PointRule", "unscented_rule", "gauss_hermite_rule", "monte_carlo_rule",
           "expand_points", "expand_points_vjp", "MAX_GH_POINTS"]

#: Default refusal threshold for tensor Gauss–Hermite grids (their size is ``order**Q``).
MAX_GH_POINTS = 2 ** 20


class PointRule(NamedTuple):
    """A quadrature rule in unit space.

    Attributes
    ----------
    name : str
        ``"unscented"``, ``"gauss_hermite"`` or ``"monte_carlo"``.
    nodes : ndarray of shape (K, Q) or (N, K, Q)
        Unit-space nodes, shared by all points or one set per point.
    weights : ndarray of shape (K,)
        Positive weights summing to one.
    """

    name: str
    nodes: np.ndarray
    weights: np.ndarray

    @property
    def n_points(self):
        """Number of evaluation points per data point."""
        return self.weights.shape[0]

    @property
    def log_weights(self):
        """``log(weights)``, for rules summed in log space (GPCDE's ``log E_w[exp L(w)]``)."""
        return np.log(self.weights)


def unscented_rule(n_dims):
    """Uhlmann's symmetric unscented rule: nodes ``±sqrt(Q) e_q``, weights ``1/(2Q)``.

    Parameters
    ----------
    n_dims : int
        Latent dimension ``Q``.

    Returns
    -------
    PointRule
        ``2Q`` points; exact for polynomials of total degree ≤ 3 under a Gaussian.
    """
    Q = int(n_dims)
    eye = np.sqrt(Q) * np.eye(Q)
    nodes = np.vstack([eye, -eye])
    return PointRule("unscented", nodes, np.full(2 * Q, 1.0 / (2 * Q)))


@lru_cache(maxsize=32)
def _gh_grid(order, n_dims):
    if n_dims == 0:  # no dimension to integrate: one node of weight one
        nodes, weights = np.zeros((1, 0)), np.ones(1)
        nodes.setflags(write=False)
        weights.setflags(write=False)
        return nodes, weights
    x, w = hermegauss(order)
    w = w / w.sum()
    grids = np.meshgrid(*([x] * n_dims), indexing="ij")
    nodes = np.stack([g.ravel() for g in grids], axis=1)
    wgrid = np.meshgrid(*([w] * n_dims), indexing="ij")
    weights = np.prod(np.stack([g.ravel() for g in wgrid], axis=1), axis=1)
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


def gauss_hermite_rule(order, n_dims, max_points=MAX_GH_POINTS):
    """Tensor-product Gauss–Hermite rule (probabilists' nodes, normalised weights).

    Parameters
    ----------
    order : int
        Nodes per dimension ``H``; exact for polynomials of degree ≤ 2H - 1 per dimension.
    n_dims : int
        Latent dimension ``Q``.
    max_points : int, default=2**20
        Refuse grids with more than this many points (``H**Q`` grows exponentially).

    Returns
    -------
    PointRule
        ``H**Q`` points.

    Raises
    ------
    ValueError
        If ``order < 1`` or the grid exceeds ``max_points``.
    """
    order, Q = int(order), int(n_dims)
    if order < 1:
        raise ValueError(f"gh_order must be >= 1, got {order}.")
    n_points = order ** Q
    if n_points > max_points:
        raise ValueError(
            f"Gauss-Hermite with gh_order={order} in {Q} latent dimensions needs "
            f"{order}**{Q} = {n_points:,} evaluation points per data point (limit {max_points:,}). "
            "Use expectation='unscented' (2Q points) or 'monte_carlo', or reduce n_components.")
    nodes, weights = _gh_grid(order, Q)
    return PointRule("gauss_hermite", nodes, weights)


def monte_carlo_rule(n_samples, n_dims, random_state, n_points=None):
    """Monte Carlo rule with standard-normal nodes (reparameterisation).

    Parameters
    ----------
    n_samples : int
        Samples per data point ``K``.
    n_dims : int
        Latent dimension ``Q``.
    random_state : numpy.random.RandomState
        Source of the draws.
    n_points : int or None, default=None
        If given, draw an independent set of nodes for each of ``n_points`` data points
        (shape ``(n_points, K, Q)``); otherwise one set shared by all points.

    Returns
    -------
    PointRule
        ``K`` equally weighted points.
    """
    K, Q = int(n_samples), int(n_dims)
    if K < 1:
        raise ValueError(f"n_samples must be >= 1, got {K}.")
    shape = (K, Q) if n_points is None else (int(n_points), K, Q)
    return PointRule("monte_carlo", random_state.standard_normal(shape), np.full(K, 1.0 / K))


def expand_points(mu, sd, nodes):
    """Evaluation points ``x_nk = mu_n + sd_n ⊙ xi_k`` of the rule's unit-space nodes.

    Parameters
    ----------
    mu, sd : ndarray of shape (N, Q)
        Means and standard deviations of the diagonal Gaussians.
    nodes : ndarray of shape (K, Q) or (N, K, Q)
        Nodes shared by every row, or one set per row (Monte Carlo).

    Returns
    -------
    x : ndarray of shape (N, K, Q)
    """
    return mu[:, None, :] + sd[:, None, :] * nodes


def expand_points_vjp(dL_dx, nodes):
    """Backward pass of :func:`expand_points`: the adjoints ``(dL_dmu, dL_dsd)``.

    Parameters
    ----------
    dL_dx : ndarray of shape (N, K, Q)
    nodes : ndarray of shape (K, Q) or (N, K, Q)

    Returns
    -------
    dL_dmu, dL_dsd : ndarray of shape (N, Q)
        ``sum_k dL_dx[n, k]`` and ``sum_k dL_dx[n, k] ⊙ xi_k``.
    """
    return dL_dx.sum(axis=1), np.sum(dL_dx * nodes, axis=1)
