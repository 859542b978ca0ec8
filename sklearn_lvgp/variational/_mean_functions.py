"""Fixed (never trained) mean functions of SVGP layers (Salimbeni 2020, §2.2).

Each mean function maps layer inputs ``H`` of shape ``(P, D_in)`` to ``(P, D_out)`` and has a
backward ``vjp(dL_dmean, H) -> dL_dH``. Mean functions are kept outside the inducing variables
(Salimbeni 2020, remark after eq. 1.29).
"""

import numpy as np

from .._core.init import principal_axes

__all__ = ["ZeroMean", "IdentityMean", "LinearMean", "pca_linear_mean", "inner_mean"]


class ZeroMean:
    """``m(h) = 0`` with ``n_outputs`` columns (the last layer of a DGP)."""

    def __init__(self, n_outputs):
        self.n_outputs = int(n_outputs)

    def __call__(self, H):
        return np.zeros((H.shape[0], self.n_outputs))

    def vjp(self, dL_dmean, H):
        """Adjoint of the inputs (zero)."""
        return np.zeros_like(H)


class IdentityMean:
    """``m(h) = h`` (inner layers whose input and output widths match)."""

    def __call__(self, H):
        return np.array(H, dtype=np.float64, copy=True)

    def vjp(self, dL_dmean, H):
        """Adjoint of the inputs (the upstream adjoint itself)."""
        return np.array(dL_dmean, dtype=np.float64, copy=True)


class LinearMean:
    """``m(h) = h W`` with a fixed ``W`` of shape ``(D_in, D_out)``."""

    def __init__(self, W):
        self.W = np.array(W, dtype=np.float64, copy=True)

    def __call__(self, H):
        return H @ self.W

    def vjp(self, dL_dmean, H):
        """Adjoint of the inputs, ``dL_dmean W^T``."""
        return dL_dmean @ self.W.T


def pca_linear_mean(X_run, n_outputs):
    """Linear mean function for a width change (the PCA mean function of Salimbeni 2020, §2.2).

    Parameters
    ----------
    X_run : ndarray of shape (N, D_in)
        Current running copy of the (standardised) training inputs.
    n_outputs : int
        Output width ``D_out``.

    Returns
    -------
    mean : LinearMean
        ``D_in > D_out``: the first ``D_out`` right-singular vectors of ``X_run`` (no centring);
        ``D_in < D_out``: ``[I, 0]`` (identity plus zero padding); equal widths: the identity.
    """
    d_in, d_out = X_run.shape[1], int(n_outputs)
    if d_in > d_out:
        W = principal_axes(X_run, d_out, center=False, fix_signs=False)[0].T
    else:
        W = np.zeros((d_in, d_out))
        W[:, :d_in] = np.eye(d_in)
    return LinearMean(W)


def inner_mean(X_run, n_outputs):
    """Mean function of an inner layer: identity for equal widths, else :func:`pca_linear_mean`.

    Parameters
    ----------
    X_run : ndarray of shape (N, D_in)
        Running copy of the inputs.
    n_outputs : int
        Output width.

    Returns
    -------
    mean : IdentityMean or LinearMean
        The fixed mean function.
    """
    if X_run.shape[1] == int(n_outputs):
        return IdentityMean()
    return pca_linear_mean(X_run, n_outputs)
