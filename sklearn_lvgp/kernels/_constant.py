"""Input-independent kernels: :class:`Constant` and :class:`White` (sklearn semantics)."""

import numpy as np

from ._base import Kernel, KernelVJP, _as_float_array

__all__ = ["Constant", "White"]


def _check_pair(X, Z):
    X = _as_float_array(X, "X")
    if Z is None:
        return X, None
    Z = _as_float_array(Z, "Z")
    if Z.shape[1] != X.shape[1]:
        raise ValueError(f"X has {X.shape[1]} columns but Z has {Z.shape[1]}.")
    return X, Z


class Constant(Kernel):
    r"""Constant kernel, :math:`k(x, z) = c`.

    Equal to :class:`sklearn.gaussian_process.kernels.ConstantKernel`. Multiplying a kernel by a
    number (``2.0 * kernel``) builds a :class:`Product` with a ``Constant`` factor.

    Parameters
    ----------
    variance : float, default=1.0
        The constant value :math:`c > 0`.
    variance_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on ``variance``; ``"fixed"`` excludes it from ``theta``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.kernels import Constant
    >>> Constant(variance=2.0).K(np.zeros((2, 1)))
    array([[2., 2.],
           [2., 2.]])
    """

    _hyperparameters = (("variance", "log"),)

    def __init__(self, variance=1.0, variance_bounds=(1e-5, 1e5)):
        self.variance = variance
        self.variance_bounds = variance_bounds

    def K(self, X, Z=None):
        X, Z = _check_pair(X, Z)
        M = X.shape[0] if Z is None else Z.shape[0]
        return np.full((X.shape[0], M), float(self.variance))

    @property
    def diag_is_constant(self):
        return True

    def Kdiag(self, X):
        X = _as_float_array(X, "X")
        return np.full(X.shape[0], float(self.variance))

    def vjp(self, dL_dK, X, Z=None):
        X, Z = _check_pair(X, Z)
        dL_dK = np.asarray(dL_dK, dtype=np.float64)
        grads = {"variance": float(self.variance) * np.sum(dL_dK)}
        dZ = None if Z is None else np.zeros_like(Z)
        return KernelVJP(np.zeros_like(X), dZ, self._pack_theta_grad(grads))

    def vjp_diag(self, dL_dKdiag, X):
        X = _as_float_array(X, "X")
        grads = {"variance": float(self.variance) * np.sum(dL_dKdiag)}
        return KernelVJP(np.zeros_like(X), None, self._pack_theta_grad(grads))


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
