"""The latent covariate ``w`` on a quadrature grid: ``log sum_h w_h exp(L_n(w_h))``.

:func:`quadrature_bound` / :func:`quadrature_bound_vjp` are the bound of the discretised optimal
``q*(w_n)`` and its softmax adjoint. The nodes and weights are the Gauss–Hermite rule of
:mod:`sklearn_lvgp.expectations._rules`, the package's one home for expectation rules.
"""

import numpy as np
from scipy.special import logsumexp

__all__ = ["quadrature_bound", "quadrature_bound_vjp"]


def quadrature_bound(log_weights, values):
    """``logsumexp_h [log w_h + L_n(w_h)]`` per row and the responsibilities.

    The quadrature bound of Salimbeni (2020, §4.2.2, eq. 4.8), with the log inside the sum over
    rows (``p(w)`` factorises over rows; the printed equation has ``log sum_n``).

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
