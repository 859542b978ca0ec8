"""The latent covariate ``w``: quadrature grid (spec §5) and Gaussian ``q(w_n)`` (spec §4).

* :func:`hermite_grid` — tensor Gauss–Hermite nodes and log weights for ``E_N(0, I)``;
* :func:`quadrature_bound` / :func:`quadrature_bound_vjp` —
  ``log sum_h w_h exp(L_n(w_h))`` and its softmax adjoint (the discretised ``q*(w_n)``);
* :func:`unscented_nodes` — the ``2 D_w`` sigma points of seed 001 §2.3 (``kappa = 0``);
"""

import numpy as np
from numpy.polynomial.hermite import hermgauss
from scipy.special import logsumexp

__all__ = ["hermite_grid", "quadrature_bound", "quadrature_bound_vjp", "unscented_nodes"]


def hermite_grid(n_nodes, dim):
    """Tensor Gauss–Hermite rule for ``E_N(0, I_dim)[g]`` (spec §5).

    Parameters
    ----------
    n_nodes : int
        Nodes per dimension ``H``.
    dim : int
        ``D_w`` (0 gives the single node of weight one).

    Returns
    -------
    nodes : ndarray of shape (H**dim, dim)
        ``sqrt(2) xi``.
    log_weights : ndarray of shape (H**dim,)
        ``log omega - log(pi)/2`` summed over dimensions.
    """
    if dim == 0:
        return np.zeros((1, 0)), np.zeros(1)
    xi, om = hermgauss(int(n_nodes))
    lw1 = np.log(om) - 0.5 * np.log(np.pi)
    grids = np.meshgrid(*([np.sqrt(2.0) * xi] * dim), indexing="ij")
    lgrids = np.meshgrid(*([lw1] * dim), indexing="ij")
    nodes = np.stack([g.ravel() for g in grids], axis=1)
    return nodes, np.sum(np.stack([g.ravel() for g in lgrids], axis=1), axis=1)


def quadrature_bound(log_weights, values):
    """``logsumexp_h [log w_h + L_n(w_h)]`` per row and the responsibilities (spec §5).

    Parameters
    ----------
    log_weights : ndarray of shape (H,)
    values : ndarray of shape (n, H)
        ``L_n`` at the nodes.

    Returns
    -------
    bound : ndarray of shape (n,)
    resp : ndarray of shape (n, H)
        ``softmax_h``: the adjoint of ``bound_n`` wrt ``values[n]``.
    """
    a = values + log_weights[None, :]
    bound = logsumexp(a, axis=1)
    return bound, np.exp(a - bound[:, None])


def quadrature_bound_vjp(dL_dbound, resp):
    """Backward pass of :func:`quadrature_bound`: ``dL/dvalues = dL/dbound * resp``."""
    return np.asarray(dL_dbound)[:, None] * resp


def unscented_nodes(dim):
    """Sigma points ``±sqrt(D_w) e_j`` and equal weights ``1/(2 D_w)`` (spec §4, ``kappa = 0``).

    Parameters
    ----------
    dim : int
        ``D_w >= 1``.

    Returns
    -------
    nodes : ndarray of shape (2 dim, dim)
    weights : ndarray of shape (2 dim,)
    """
    E = np.sqrt(dim) * np.eye(dim)
    return np.vstack([E, -E]), np.full(2 * dim, 1.0 / (2 * dim))
