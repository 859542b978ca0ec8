"""Linear kernel with optional ARD variances."""

import numpy as np

from ._base import Kernel
from ._contract import KernelVJP, _as_float_array

__all__ = ["Linear"]


class Linear(Kernel):
    r"""Linear (dot-product) kernel with optional ARD variances.

    .. math:: k(x, z) = \sum_q \alpha_q x_q z_q

    With a scalar ``variances`` all dimensions share one :math:`\alpha`; with ``variances = 1`` it
    equals ``sklearn.gaussian_process.kernels.DotProduct(sigma_0=0, sigma_0_bounds="fixed")``.

    Parameters
    ----------
    variances : float or ndarray of shape (n_features,), default=1.0
        Per-dimension variances :math:`\alpha_q > 0`; an array gives automatic relevance
        determination.
    variances_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the variances; ``"fixed"`` excludes them from ``theta``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.kernels import Linear
    >>> X = np.array([[1.0, 2.0], [0.0, 1.0]])
    >>> Linear(variances=np.array([1.0, 0.5])).K(X)
    array([[3. , 1. ],
           [1. , 0.5]])
    """

    _hyperparameters = (("variances", "log"),)

    def __init__(self, variances=1.0, variances_bounds=(1e-5, 1e5)):
        self.variances = variances
        self.variances_bounds = variances_bounds

    def _alpha(self, Q):
        a = np.asarray(self.variances, dtype=np.float64)
        if a.ndim == 0:
            return np.full(Q, float(a))
        if a.shape != (Q,):
            raise ValueError(
                f"Linear has {a.size} variances but the inputs have {Q} dimensions; pass a "
                "scalar or one variance per dimension.")
        return a

    def _inputs(self, X, Z):
        X = _as_float_array(X, "X")
        Zc = X if Z is None else _as_float_array(Z, "Z")
        if Zc.shape[1] != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} columns but Z has {Zc.shape[1]}.")
        return X, Zc, self._alpha(X.shape[1])

    def _reduce(self, dlog_alpha):
        """Collapse per-dimension ``d/d log alpha_q`` to the shape of ``variances``."""
        if np.ndim(self.variances) == 0:
            return np.sum(dlog_alpha)
        return dlog_alpha

    def check_input_dim(self, n_features):
        self._alpha(n_features)

    def relevance(self, n_features):
        """The variances :math:`\\alpha_q`, broadcast to ``n_features``.

        Parameters
        ----------
        n_features : int
            Input dimension.

        Returns
        -------
        relevance : ndarray of shape (n_features,)
            :math:`\\alpha_q`.
        """
        return self._alpha(n_features).copy()

    def K(self, X, Z=None):
        X, Zc, alpha = self._inputs(X, Z)
        return (X * alpha) @ Zc.T

    def Kdiag(self, X):
        X = _as_float_array(X, "X")
        alpha = self._alpha(X.shape[1])
        return (X * X) @ alpha

    def vjp(self, dL_dK, X, Z=None):
        X, Zc, alpha = self._inputs(X, Z)
        dL_dK = np.asarray(dL_dK, dtype=np.float64)
        GZ = dL_dK @ Zc  # (N, Q)
        dX = GZ * alpha
        dlog_alpha = alpha * np.einsum("nq,nq->q", GZ, X)
        if Z is None:
            dX = dX + (dL_dK.T @ X) * alpha
            dZ = None
        else:
            dZ = (dL_dK.T @ X) * alpha
        grads = {"variances": self._reduce(dlog_alpha)}
        return KernelVJP(dX, dZ, self._pack_theta_grad(grads))

    def vjp_diag(self, dL_dKdiag, X):
        X = _as_float_array(X, "X")
        alpha = self._alpha(X.shape[1])
        d = np.asarray(dL_dKdiag, dtype=np.float64)
        dX = 2.0 * d[:, None] * X * alpha
        dlog_alpha = alpha * (d @ (X * X))
        return KernelVJP(dX, None, self._pack_theta_grad({"variances": self._reduce(dlog_alpha)}))
