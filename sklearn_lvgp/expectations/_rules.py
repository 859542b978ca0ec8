"""Expectation rules as weighted unit-space point sets.

The unscented rule is the symmetric sigma-point set of de Souza et al. (2021, §2.3): ``2Q`` points
``±sqrt(Q) e_q`` with equal weights.

For a diagonal Gaussian q(x_n) = N(mu_n, diag(S_n)) every rule evaluates the integrand at
``x_nk = mu_n + sqrt(S_n) * xi_k`` and returns ``sum_k w_k g(x_nk)``. The rules differ only in the
nodes ``xi`` and weights ``w``. That reparameterisation ``x = mu + sd ⊙ xi`` and its backward pass
live here once (:func:`reparameterise`, :func:`expand_points`) for every layer that uses it:
the Ψ point sets, the likelihoods' quadrature, the deep GPs' Monte Carlo and sigma-point
propagation, latent covariates and projections, and the draws of ``sample_y``.
"""

from functools import lru_cache
from typing import NamedTuple

import numpy as np
from numpy.polynomial.hermite_e import hermegauss

__all__ = ["PointRule", "unscented_rule", "gauss_hermite_rule", "monte_carlo_rule",
           "reparameterise", "reparameterise_vjp", "variance_adjoint", "expand_points",
           "expand_points_vjp", "MAX_GH_POINTS"]

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


def reparameterise(mu, sd, eps):
    """The reparameterisation ``x = mu + sd ⊙ eps`` (elementwise, broadcast).

    A draw of ``N(mu, diag sd²)`` from standard normal ``eps``, or a quadrature point of that
    Gaussian from a unit-space node (Salimbeni & Deisenroth 2017, eq. 7). Its backward pass is
    :func:`reparameterise_vjp`; :func:`expand_points` lays it out over a rule's nodes.

    Parameters
    ----------
    mu, sd : ndarray
        Means and standard deviations.
    eps : ndarray
        Standard normal draws or unit-space nodes (broadcast against ``mu`` and ``sd``).

    Returns
    -------
    x : ndarray
    """
    return mu + sd * eps


def variance_adjoint(dL_dsd, sd):
    """Adjoint of the variance ``v = sd²`` from that of ``sd``: ``dL_dsd / (2 sd)``, 0 where
    ``sd = 0`` (a point mass, whose variance the points do not see)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, dL_dsd / (2.0 * sd), 0.0)


def reparameterise_vjp(dL_dx, eps, sd=None):
    """Backward pass of :func:`reparameterise`, per element (the caller sums broadcast axes).

    Parameters
    ----------
    dL_dx : ndarray
        Upstream adjoint.
    eps : ndarray
        As in the forward pass.
    sd : ndarray, default=None
        The forward ``sd``: given, the second adjoint is that of the variance ``sd²``
        (:func:`variance_adjoint`) instead of ``sd``.

    Returns
    -------
    dL_dmu : ndarray
        ``dL_dx``.
    dL_dsd : ndarray
        ``dL_dx ⊙ eps`` (or ``dL_dx ⊙ eps / (2 sd)`` with ``sd``).
    """
    dsd = dL_dx * eps
    return dL_dx, dsd if sd is None else variance_adjoint(dsd, sd)


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
    return reparameterise(mu[:, None, :], sd[:, None, :], nodes)


def expand_points_vjp(dL_dx, nodes, sd=None):
    """Backward pass of :func:`expand_points`: the adjoints ``(dL_dmu, dL_dsd)``.

    Parameters
    ----------
    dL_dx : ndarray of shape (N, K, Q)
    nodes : ndarray of shape (K, Q) or (N, K, Q)
    sd : ndarray of shape (N, Q), default=None
        The forward ``sd``: given, the second adjoint is that of the variance ``sd²``.

    Returns
    -------
    dL_dmu, dL_dsd : ndarray of shape (N, Q)
        ``sum_k dL_dx[n, k]`` and ``sum_k dL_dx[n, k] ⊙ xi_k`` (divided by ``2 sd`` with ``sd``).
    """
    dsd = np.sum(dL_dx * nodes, axis=1)
    return dL_dx.sum(axis=1), dsd if sd is None else variance_adjoint(dsd, sd)
