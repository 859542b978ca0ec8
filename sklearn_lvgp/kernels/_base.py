"""Kernel algebra: :class:`Kernel`, :class:`Sum`, :class:`Product`, :class:`Constant`.

``k1 + k2`` and ``k1 * k2`` build a :class:`Sum` and a :class:`Product`, with the VJP routed to the
operands; a number in such an expression becomes a :class:`Constant` of that variance. These three
classes are kernels themselves, so they are defined here, beside the operators that create them.
The hyperparameter machinery and the VJP contract are in ``_contract.py``, below this module.
"""

import numpy as np

from ._contract import KernelBase, KernelVJP, _as_float_array, _check_pair

__all__ = ["Kernel", "Sum", "Product", "Constant"]


class Kernel(KernelBase):
    """Base class of all kernels.

    Subclasses declare their hyperparameters in the class attribute ``_hyperparameters``: a tuple of
    ``(name, transform)`` pairs. Each name must be an ``__init__`` argument stored verbatim, with a
    companion ``<name>_bounds`` argument (a ``(low, high)`` pair in the natural space, or
    ``"fixed"``), and implement ``K``, ``Kdiag``, ``vjp`` and ``vjp_diag``.

    ``k1 + k2`` is a :class:`Sum` and ``k1 * k2`` a :class:`Product`; a number ``c`` on either
    side becomes ``Constant(variance=c)``.
    """

    def __add__(self, other):
        return Sum(self, _as_kernel(other))

    def __radd__(self, other):
        return Sum(_as_kernel(other), self)

    def __mul__(self, other):
        return Product(self, _as_kernel(other))

    def __rmul__(self, other):
        return Product(_as_kernel(other), self)


def _as_kernel(value):
    """A kernel as is; a number as a :class:`Constant` of that variance."""
    if isinstance(value, KernelBase):
        return value
    return Constant(variance=float(value))


class _Binary(Kernel):
    """Shared machinery of :class:`Sum` and :class:`Product`."""

    def __init__(self, k1, k2):
        self.k1 = k1
        self.k2 = k2

    @property
    def hyperparameters(self):
        out = []
        for prefix, k in (("k1", self.k1), ("k2", self.k2)):
            for h in k.hyperparameters:
                out.append(h._replace(name=f"{prefix}__{h.name}"))
        return out

    @property
    def theta(self):
        return np.concatenate([self.k1.theta, self.k2.theta])

    @theta.setter
    def theta(self, theta):
        theta = np.asarray(theta, dtype=np.float64).reshape(-1)
        if theta.size != self.n_theta:
            raise ValueError(f"theta has {theta.size} entries, kernel {self!r} has {self.n_theta}.")
        n1 = self.k1.n_theta
        self.k1.theta = theta[:n1]
        self.k2.theta = theta[n1:]

    @property
    def bounds(self):
        return np.vstack([self.k1.bounds, self.k2.bounds])

    @property
    def n_theta(self):
        return self.k1.n_theta + self.k2.n_theta

    @property
    def diag_is_constant(self):
        return self.k1.diag_is_constant and self.k2.diag_is_constant

    def check_input_dim(self, n_features):
        self.k1.check_input_dim(n_features)
        self.k2.check_input_dim(n_features)

    def initialize(self, n_features, random_state):
        return type(self)(self.k1.initialize(n_features, random_state),
                          self.k2.initialize(n_features, random_state))

    def relevance(self, n_features):
        for k in self.summands() if isinstance(self, Sum) else (self.k1, self.k2):
            if type(k).relevance is not Kernel.relevance:
                return k.relevance(n_features)
        return np.ones(n_features)

    def __repr__(self):
        return f"{self.k1!r} {self._symbol} {self.k2!r}"


class Sum(_Binary):
    """Sum of two kernels, ``k1(x, z) + k2(x, z)``.

    Parameters
    ----------
    k1, k2 : Kernel
        The summands.
    """

    _symbol = "+"

    def K(self, X, Z=None):
        return self.k1.K(X, Z) + self.k2.K(X, Z)

    def Kdiag(self, X):
        return self.k1.Kdiag(X) + self.k2.Kdiag(X)

    def vjp(self, dL_dK, X, Z=None):
        a = self.k1.vjp(dL_dK, X, Z)
        b = self.k2.vjp(dL_dK, X, Z)
        dZ = None if Z is None else a.Z + b.Z
        return KernelVJP(a.X + b.X, dZ, np.concatenate([a.theta, b.theta]))

    def vjp_diag(self, dL_dKdiag, X):
        a = self.k1.vjp_diag(dL_dKdiag, X)
        b = self.k2.vjp_diag(dL_dKdiag, X)
        return KernelVJP(a.X + b.X, None, np.concatenate([a.theta, b.theta]))

    def summands(self):
        return self.k1.summands() + self.k2.summands()


class Product(_Binary):
    """Elementwise product of two kernels, ``k1(x, z) * k2(x, z)``.

    Parameters
    ----------
    k1, k2 : Kernel
        The factors.
    """

    _symbol = "*"

    def K(self, X, Z=None):
        return self.k1.K(X, Z) * self.k2.K(X, Z)

    def Kdiag(self, X):
        return self.k1.Kdiag(X) * self.k2.Kdiag(X)

    def vjp(self, dL_dK, X, Z=None):
        K1 = self.k1.K(X, Z)
        K2 = self.k2.K(X, Z)
        a = self.k1.vjp(dL_dK * K2, X, Z)
        b = self.k2.vjp(dL_dK * K1, X, Z)
        dZ = None if Z is None else a.Z + b.Z
        return KernelVJP(a.X + b.X, dZ, np.concatenate([a.theta, b.theta]))

    def vjp_diag(self, dL_dKdiag, X):
        d1 = self.k1.Kdiag(X)
        d2 = self.k2.Kdiag(X)
        a = self.k1.vjp_diag(dL_dKdiag * d2, X)
        b = self.k2.vjp_diag(dL_dKdiag * d1, X)
        return KernelVJP(a.X + b.X, None, np.concatenate([a.theta, b.theta]))


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
