"""White-noise kernel with scikit-learn semantics."""

import numpy as np

from ._base import Kernel
from ._contract import KernelVJP, _as_float_array, _check_pair

__all__ = ["White"]


class White(Kernel):
    r"""White-noise kernel with scikit-learn semantics.

    ``K(X)`` (no second argument) is :math:`\sigma_n^2 I`; ``K(X, Z)`` with ``Z`` given is all
    zeros, **even when** ``Z`` **is** ``X`` — the noise is attached to the training points, not
    to coinciding inputs. ``Kdiag(X)`` is :math:`\sigma_n^2`. Equal to
    :class:`sklearn.gaussian_process.kernels.WhiteKernel`.

    Parameters
    ----------
    noise_level : float, default=1.0
        Noise variance :math:`\sigma_n^2 > 0`.
    noise_level_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on ``noise_level``; ``"fixed"`` excludes it from ``theta``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.kernels import White
    >>> X = np.zeros((2, 1))
    >>> White(noise_level=0.5).K(X)
    array([[0.5, 0. ],
           [0. , 0.5]])
    >>> White(noise_level=0.5).K(X, X)
    array([[0., 0.],
           [0., 0.]])
    """

    _hyperparameters = (("noise_level", "log"),)

    def __init__(self, noise_level=1.0, noise_level_bounds=(1e-5, 1e5)):
        self.noise_level = noise_level
        self.noise_level_bounds = noise_level_bounds

    def K(self, X, Z=None):
        X, Z = _check_pair(X, Z)
        if Z is None:
            return float(self.noise_level) * np.eye(X.shape[0])
        return np.zeros((X.shape[0], Z.shape[0]))

    @property
    def diag_is_constant(self):
        return True

    def Kdiag(self, X):
        X = _as_float_array(X, "X")
        return np.full(X.shape[0], float(self.noise_level))

    def vjp(self, dL_dK, X, Z=None):
        X, Z = _check_pair(X, Z)
        if Z is None:
            dL_dK = np.asarray(dL_dK, dtype=np.float64)
            grads = {"noise_level": float(self.noise_level) * np.trace(dL_dK)}
            return KernelVJP(np.zeros_like(X), None, self._pack_theta_grad(grads))
        return KernelVJP(np.zeros_like(X), np.zeros_like(Z),
                         self._pack_theta_grad({"noise_level": 0.0}))

    def vjp_diag(self, dL_dKdiag, X):
        X = _as_float_array(X, "X")
        grads = {"noise_level": float(self.noise_level) * np.sum(dL_dKdiag)}
        return KernelVJP(np.zeros_like(X), None, self._pack_theta_grad(grads))
