"""Stationary kernels ``variance * g(r2)`` with ARD length scales.

A stationary kernel supplies only its profile ``g`` and ``dg/dr2`` as a function of the squared
scaled distance ``r2 = sum_q (x_q - z_q)^2 / l_q^2`` (one jitted elementwise loop); the chain rule
to ``X``, ``Z`` and ``log l`` is shared (``stationary_backward``). Working in ``r2`` rather than
``r`` keeps the Matérn 3/2 and 5/2 derivatives finite at ``r = 0`` without special cases.
"""

import numpy as np

from . import _kernels_numba as _nb
from ._base import Kernel, KernelVJP, _as_float_array

__all__ = ["RBF", "Matern12", "Matern32", "Matern52", "RationalQuadratic"]


class _Stationary(Kernel):
    """Shared implementation: ARD length scales, variance, the ``r2`` chain rule."""

    _hyperparameters = (("variance", "log"), ("length_scale", "log"))

    def __init__(self, length_scale=1.0, variance=1.0, length_scale_bounds=(1e-5, 1e5),
                 variance_bounds=(1e-5, 1e5)):
        self.length_scale = length_scale
        self.variance = variance
        self.length_scale_bounds = length_scale_bounds
        self.variance_bounds = variance_bounds

    # -- profile hooks -------------------------------------------------------------------------
    def _profile(self, r2):
        """Return ``(g, dg/dr2)`` elementwise; ``g(0) = 1``."""
        raise NotImplementedError

    def _extra_theta_grads(self, dL_dK, cache):
        """Gradients of extra (non-variance, non-length-scale) hyperparameters."""
        return {}

    # -- helpers -------------------------------------------------------------------------------
    def _inv_ls(self, Q):
        ls = np.asarray(self.length_scale, dtype=np.float64)
        if ls.ndim == 0:
            return np.full(Q, 1.0 / float(ls))
        if ls.shape != (Q,):
            raise ValueError(
                f"{type(self).__name__} has {ls.size} length scales but the inputs have {Q} "
                "dimensions; pass a scalar (isotropic) or one length scale per dimension.")
        return 1.0 / ls

    def check_input_dim(self, n_features):
        self._inv_ls(n_features)

    def relevance(self, n_features):
        """Inverse length scales ``1 / l_q`` (spec §4)."""
        return self._inv_ls(n_features).copy()

    def _forward(self, X, Z):
        X = _as_float_array(X, "X")
        Zc = X if Z is None else _as_float_array(Z, "Z")
        if Zc.shape[1] != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} columns but Z has {Zc.shape[1]}.")
        inv_ls = self._inv_ls(X.shape[1])
        r2 = _nb.scaled_sqdist(X, Zc, inv_ls)
        prof = self._profile(r2)
        return X, Zc, inv_ls, r2, prof

    # -- contract ------------------------------------------------------------------------------
    def K(self, X, Z=None):
        _, _, _, _, prof = self._forward(X, Z)
        return float(self.variance) * prof[0]

    def Kdiag(self, X):
        X = _as_float_array(X, "X")
        return np.full(X.shape[0], float(self.variance))

    def vjp(self, dL_dK, X, Z=None):
        X, Zc, inv_ls, r2, prof = self._forward(X, Z)
        dL_dK = np.asarray(dL_dK, dtype=np.float64)
        var = float(self.variance)
        g, dg = prof[0], prof[1]
        G = np.ascontiguousarray(dL_dK * (var * dg))
        dX, dZ, dlogls = _nb.stationary_backward(G, X, Zc, inv_ls)
        if Z is None:
            dX = dX + dZ
            dZ = None
        grads = {"variance": var * np.sum(dL_dK * g)}
        if np.ndim(self.length_scale) == 0:
            grads["length_scale"] = np.sum(dlogls)
        else:
            grads["length_scale"] = dlogls
        grads.update(self._extra_theta_grads(dL_dK, prof))
        return KernelVJP(dX, dZ, self._pack_theta_grad(grads))

    def vjp_diag(self, dL_dKdiag, X):
        X = _as_float_array(X, "X")
        grads = {"variance": float(self.variance) * float(np.sum(dL_dKdiag)),
                 "length_scale": np.zeros(np.shape(self.length_scale))}
        grads.update({name: 0.0 for name, _ in self._hyperparameters if name not in grads})
        return KernelVJP(np.zeros_like(X), None, self._pack_theta_grad(grads))


class RBF(_Stationary):
    r"""Squared-exponential kernel with optional ARD length scales.

    .. math:: k(x, z) = \sigma^2 \exp\left(-\tfrac12 \sum_q (x_q - z_q)^2 / \ell_q^2\right)

    Parameters
    ----------
    length_scale : float or ndarray of shape (n_features,), default=1.0
        Length scale(s); an array gives automatic relevance determination.
    variance : float, default=1.0
        Signal variance :math:`\sigma^2`.
    length_scale_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the length scales; ``"fixed"`` excludes them from optimisation.
    variance_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the variance.
    """

    def _profile(self, r2):
        return _nb.rbf_profile(r2)


class Matern12(_Stationary):
    r"""Matérn kernel with :math:`\nu = 1/2` (exponential kernel), optional ARD.

    .. math:: k(x, z) = \sigma^2 \exp(-r)

    Not differentiable at :math:`r = 0`; the zero subgradient is used there.

    Parameters
    ----------
    length_scale : float or ndarray of shape (n_features,), default=1.0
        Length scale(s).
    variance : float, default=1.0
        Signal variance.
    length_scale_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the length scales.
    variance_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the variance.
    """

    def _profile(self, r2):
        return _nb.matern12_profile(r2)


class Matern32(_Stationary):
    r"""Matérn kernel with :math:`\nu = 3/2`, optional ARD.

    .. math:: k(x, z) = \sigma^2 (1 + \sqrt3 r) \exp(-\sqrt3 r)

    Parameters
    ----------
    length_scale : float or ndarray of shape (n_features,), default=1.0
        Length scale(s).
    variance : float, default=1.0
        Signal variance.
    length_scale_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the length scales.
    variance_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the variance.
    """

    def _profile(self, r2):
        return _nb.matern32_profile(r2)


class Matern52(_Stationary):
    r"""Matérn kernel with :math:`\nu = 5/2`, optional ARD.

    .. math:: k(x, z) = \sigma^2 (1 + \sqrt5 r + \tfrac53 r^2) \exp(-\sqrt5 r)

    Parameters
    ----------
    length_scale : float or ndarray of shape (n_features,), default=1.0
        Length scale(s).
    variance : float, default=1.0
        Signal variance.
    length_scale_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the length scales.
    variance_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the variance.
    """

    def _profile(self, r2):
        return _nb.matern52_profile(r2)


class RationalQuadratic(_Stationary):
    r"""Rational quadratic kernel, optional ARD.

    .. math:: k(x, z) = \sigma^2 (1 + r^2 / (2\alpha))^{-\alpha}

    Parameters
    ----------
    length_scale : float or ndarray of shape (n_features,), default=1.0
        Length scale(s).
    alpha : float, default=1.0
        Scale-mixture parameter.
    variance : float, default=1.0
        Signal variance.
    length_scale_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the length scales.
    alpha_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on ``alpha``.
    variance_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the variance.
    """

    _hyperparameters = (("variance", "log"), ("length_scale", "log"), ("alpha", "log"))

    def __init__(self, length_scale=1.0, alpha=1.0, variance=1.0,
                 length_scale_bounds=(1e-5, 1e5), alpha_bounds=(1e-5, 1e5),
                 variance_bounds=(1e-5, 1e5)):
        super().__init__(length_scale=length_scale, variance=variance,
                         length_scale_bounds=length_scale_bounds,
                         variance_bounds=variance_bounds)
        self.alpha = alpha
        self.alpha_bounds = alpha_bounds

    def _profile(self, r2):
        return _nb.rq_profile(r2, float(self.alpha))

    def _extra_theta_grads(self, dL_dK, prof):
        return {"alpha": float(self.variance) * np.sum(dL_dK * prof[2])}
