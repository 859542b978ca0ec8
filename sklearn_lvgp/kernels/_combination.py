"""Sums and products of kernels, with the VJP routed to the operands."""

import numpy as np

from ._base import Kernel, KernelVJP

__all__ = ["Sum", "Product"]


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
