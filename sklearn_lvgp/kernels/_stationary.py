"""Stationary kernels ``variance * g(r2)`` with ARD length scales.

A stationary kernel supplies only its profile ``g`` and its slope ``dg/dr2`` as functions of the
squared scaled distance ``r2 = sum_q (x_q - z_q)^2 / l_q^2`` (``_kernels_numba``); working in
``r2`` rather than ``r`` keeps the Matérn 3/2 and 5/2 derivatives finite at ``r = 0``.

* Forward: one jitted loop (``stationary_K``) that vectorises along the inducing points,
  ``exp`` included (``_compile.vexp_numba.vexp``).
* Backward: one vectorised pass for the weights ``C = 2 dK variance dg/dr2`` from the kept
  ``K`` (``stationary_slope_weights``, no ``exp``) and a few matrix products
  (:func:`_stationary_vjp_from_weights`). The plain :meth:`vjp` evaluates ``K`` and then runs
  that backward. Matérn 1/2 is the exception: its slope is unbounded at ``r = 0``, so it keeps
  the fused loop over ``(n, m, q)`` (``stationary_K_vjp``), which works with ``x - z`` directly.
"""

import numpy as np

from . import _kernels_numba as _nb
from ._base import Kernel
from ._contract import KernelVJP, _as_float_array

__all__ = ["default_rbf", "RBF", "Matern12", "Matern32", "Matern52", "RationalQuadratic"]

#: Placeholder for the forward matrix when the backward recomputes the profile.
_NO_K = np.empty((0, 0))


def _stationary_vjp_from_weights(C, dlogvar, dlogalpha, X, Z, inv_ls):
    """Backward pass of a stationary kernel as products, given ``C = 2 dK variance dg/dr2``.

    ``dlogvar`` is ``sum dK K``; ``None`` means the RBF, whose ``C = -dK K`` gives it as
    ``-sum C``. Every adjoint is a weighted sum of ``x_n - z_m`` or its square over the pairs
    (for the RBF, ``dk/dx_q = -k (x_q - z_q) / l_q²``), and those sums are matrix products
    (:func:`._kernels_numba.stationary_vjp_products`).

    Returns ``(dX, dZ, dlogls, dlogvar, dlogalpha)`` as :func:`_nb.stationary_K_vjp` does.
    """
    dX, dZ, dlogls, total = _nb.stationary_vjp_products(
        np.ascontiguousarray(C), np.ascontiguousarray(X), np.ascontiguousarray(Z),
        np.ascontiguousarray(inv_ls, dtype=np.float64))
    if dlogvar is None:  # RBF: C = -dK K
        dlogvar = -total
    return dX, dZ, dlogls, dlogvar, dlogalpha


class _Stationary(Kernel):
    """Shared implementation: ARD length scales, variance, the ``r2`` chain rule."""

    _hyperparameters = (("variance", "log"), ("length_scale", "log"))

    def __init__(self, length_scale=1.0, variance=1.0, length_scale_bounds=(1e-5, 1e5),
                 variance_bounds=(1e-5, 1e5)):
        self.length_scale = length_scale
        self.variance = variance
        self.length_scale_bounds = length_scale_bounds
        self.variance_bounds = variance_bounds

    #: Profile selector of the jitted loops (``_kernels_numba.*_KIND``).
    _kind = None

    def _alpha(self):
        return 1.0

    @property
    def diag_is_constant(self):
        return True

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
        """Inverse length scales ``1 / l_q``.

        The ranking of de Souza et al. (2021, §4.1.1), who plot the latent dimensions with the
        largest inverse length scales.

        Parameters
        ----------
        n_features : int
            Input dimension.

        Returns
        -------
        relevance : ndarray of shape (n_features,)
            ``1 / length_scale`` broadcast to every input dimension.
        """
        return self._inv_ls(n_features).copy()

    def _prepare(self, X, Z):
        X = _as_float_array(X, "X")
        Zc = X if Z is None else _as_float_array(Z, "Z")
        if Zc.shape[1] != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} columns but Z has {Zc.shape[1]}.")
        return X, Zc, self._inv_ls(X.shape[1])

    # -- contract ------------------------------------------------------------------------------
    def K(self, X, Z=None):
        return self._K_into(X, Z, None)

    def _K_into(self, X, Z, out):
        X, Zc, inv_ls = self._prepare(X, Z)
        shape = (X.shape[0], Zc.shape[0])
        if (out is None or out.shape != shape or out.dtype != np.float64
                or not out.flags.c_contiguous or not out.flags.writeable):
            out = np.empty(shape)
        return _nb.stationary_K(X, np.ascontiguousarray(Zc.T), inv_ls, float(self.variance),
                                self._kind, self._alpha(), out)

    def Kdiag(self, X):
        X = _as_float_array(X, "X")
        return np.full(X.shape[0], float(self.variance))

    def vjp(self, dL_dK, X, Z=None):
        if self._kind != _nb.MATERN12_KIND:
            # K (one vectorised loop) plus the product backward from it beat the fused
            # backward loop, which evaluates the profile entry by entry
            return self.vjp_cached(dL_dK, (X, Z, self.K(X, Z)))
        X, Zc, inv_ls = self._prepare(X, Z)
        dL_dK = np.ascontiguousarray(dL_dK, dtype=np.float64)
        return self._theta_vjp(Z, *_nb.stationary_K_vjp(
            dL_dK, _NO_K, X, Zc, inv_ls, float(self.variance), self._kind, self._alpha(), False))

    def K_cached(self, X, Z=None, out=None):
        """Kernel matrix, kept for :meth:`vjp_cached` (the backward re-evaluates no ``exp``).

        Parameters
        ----------
        X : ndarray of shape (N, Q)
            First argument.
        Z : ndarray of shape (M, Q), default=None
            Second argument; ``None`` means ``X``.
        out : ndarray of shape (N, M), default=None
            C-contiguous float64 buffer the matrix is written into (one a training loop
            reuses across evaluations); a new array when ``None`` or not such a buffer.

        Returns
        -------
        K : ndarray of shape (N, M)
            Kernel matrix (``out`` when it was used).
        cache : tuple
            ``(X, Z, K)``.
        """
        K = self._K_into(X, Z, out)
        return K, (X, Z, K)

    def vjp_cached(self, dL_dK, cache, overwrite_dK=False):
        """Backward pass of :meth:`K_cached`; equals :meth:`vjp` to round-off.

        Parameters
        ----------
        dL_dK : ndarray of shape (N, M)
            Adjoint of the kernel matrix.
        cache : tuple
            From :meth:`K_cached`.
        overwrite_dK : bool, default=False
            Let the weights of the product backward overwrite ``dL_dK`` (when it is a
            C-contiguous float64 array) instead of a new ``(N, M)`` array.

        Returns
        -------
        KernelVJP
            Adjoints of ``X``, ``Z`` and ``theta``.
        """
        X, Z, K = cache
        X, Zc, inv_ls = self._prepare(X, Z)
        dK = np.ascontiguousarray(dL_dK, dtype=np.float64)
        if self._kind == _nb.MATERN12_KIND:
            # its slope dg/dr2 = -g / (2 r) is unbounded at r = 0: the fused loop keeps x - z
            return self._theta_vjp(Z, *_nb.stationary_K_vjp(
                dK, K, X, Zc, inv_ls, float(self.variance), self._kind, self._alpha(), True))
        # d/dlog variance = sum dK K; for the RBF that is -sum C, which the products form anyway
        dlogvar = None if self._kind == _nb.RBF_KIND else float(np.sum(dK * K))
        C = dK if overwrite_dK or not np.may_share_memory(dK, dL_dK) else np.empty_like(dK)
        C, dlogalpha = _nb.stationary_slope_weights(dK, K, X, np.ascontiguousarray(Zc.T),
                                                    inv_ls, self._kind, self._alpha(), C)
        return self._theta_vjp(Z, *_stationary_vjp_from_weights(C, dlogvar, dlogalpha, X, Zc,
                                                                inv_ls))

    def _theta_vjp(self, Z, dX, dZ, dlogls, dlogvar, dlogalpha):
        if Z is None:
            dX = dX + dZ
            dZ = None
        grads = {"variance": dlogvar, "alpha": dlogalpha,
                 "length_scale": np.sum(dlogls) if np.ndim(self.length_scale) == 0 else dlogls}
        return KernelVJP(dX, dZ, self._pack_theta_grad(grads))

    def vjp_diag(self, dL_dKdiag, X):
        X = _as_float_array(X, "X")
        grads = {"variance": float(self.variance) * float(np.sum(dL_dKdiag)), "alpha": 0.0,
                 "length_scale": np.zeros(np.shape(self.length_scale))}
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

    _kind = _nb.RBF_KIND


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

    _kind = _nb.MATERN12_KIND


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

    _kind = _nb.MATERN32_KIND


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

    _kind = _nb.MATERN52_KIND


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

    _kind = _nb.RQ_KIND

    def _alpha(self):
        return float(self.alpha)


def default_rbf(length_scale, variance, span=1e5):
    """The estimators' default ARD RBF, with bounds relative to the data's own scales.

    ``length_scale`` and ``variance`` are the starting values taken from the data; each bound
    is the starting value divided or multiplied by ``span``, so that data in any units (1e-6
    or 1e6) get the same room to fit (fixed absolute bounds would clip them).

    Parameters
    ----------
    length_scale : ndarray of shape (Q,)
        Starting length scales (positive).
    variance : float
        Starting signal variance (positive).
    span : float, default=1e5
        Ratio between a starting value and each of its bounds.

    Returns
    -------
    RBF
    """
    ls = np.asarray(length_scale, dtype=np.float64)
    return RBF(length_scale=ls, variance=float(variance),
               length_scale_bounds=np.column_stack([ls / span, ls * span]),
               variance_bounds=(float(variance) / span, float(variance) * span))


def K_cached_into(kernel, X, Z, workspace, name):
    """``kernel.K_cached(X, Z)``, written into the buffer ``name`` of ``workspace`` when there
    is one and the kernel's ``K_cached`` is the stationary kernels' own (a subclass that
    overrides it, or any other kernel, is called without a buffer, and none is requested)."""
    if workspace is None or type(kernel).K_cached is not _Stationary.K_cached:
        return kernel.K_cached(X, Z)
    shape = (X.shape[0], X.shape[0] if Z is None else Z.shape[0])
    return kernel.K_cached(X, Z, out=workspace.array(name, shape))
