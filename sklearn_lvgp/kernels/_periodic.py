"""Periodic kernel (MacKay 1998, eq. 47, in the GPflow-1 form).

The periodic kernel of the airline experiment of de Souza et al. (2021, §4.2.1, footnote 3).
"""

import numpy as np

from . import _kernels_numba as _nb
from ._base import Kernel
from ._contract import KernelVJP, _as_float_array

__all__ = ["Periodic"]


class Periodic(Kernel):
    r"""Periodic kernel with one period and one length scale shared by all input dimensions.

    .. math::

        k(x, z) = \sigma^2 \exp\left(-\frac{1}{2\ell^2}
                  \sum_q \sin^2\!\left(\frac{\pi (x_q - z_q)}{p}\right)\right)

    In one dimension this equals
    ``variance * sklearn.gaussian_process.kernels.ExpSineSquared(length_scale=2 * l,
    periodicity=p)``. There is no ARD: :meth:`relevance` returns ones.

    Parameters
    ----------
    period : float, default=1.0
        Period :math:`p > 0`.
    length_scale : float, default=1.0
        Length scale :math:`\ell > 0`.
    variance : float, default=1.0
        Signal variance :math:`\sigma^2 > 0`.
    period_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the period; ``"fixed"`` excludes it from ``theta``.
    length_scale_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the length scale.
    variance_bounds : pair of float or "fixed", default=(1e-5, 1e5)
        Bounds on the variance.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.kernels import Periodic
    >>> k = Periodic(period=2.0)
    >>> np.allclose(k.K(np.array([[0.0]]), np.array([[2.0]])), 1.0)
    True
    """

    _hyperparameters = (("variance", "log"), ("period", "log"), ("length_scale", "log"))

    def __init__(self, period=1.0, length_scale=1.0, variance=1.0, period_bounds=(1e-5, 1e5),
                 length_scale_bounds=(1e-5, 1e5), variance_bounds=(1e-5, 1e5)):
        self.period = period
        self.length_scale = length_scale
        self.variance = variance
        self.period_bounds = period_bounds
        self.length_scale_bounds = length_scale_bounds
        self.variance_bounds = variance_bounds

    def _scalars(self):
        values = []
        for name in ("period", "length_scale", "variance"):
            v = np.asarray(getattr(self, name), dtype=np.float64)
            if v.size != 1:
                raise ValueError(f"Periodic.{name} must be a scalar, got shape {v.shape}.")
            values.append(float(v.reshape(-1)[0]))
        return values

    def _inputs(self, X, Z):
        X = _as_float_array(X, "X")
        Zc = X if Z is None else _as_float_array(Z, "Z")
        if Zc.shape[1] != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} columns but Z has {Zc.shape[1]}.")
        return X, Zc

    def check_input_dim(self, n_features):
        self._scalars()

    def K(self, X, Z=None):
        X, Zc = self._inputs(X, Z)
        p, ls, var = self._scalars()
        return _nb.periodic_forward(X, Zc, p, ls, var)

    @property
    def diag_is_constant(self):
        return True

    def Kdiag(self, X):
        X = _as_float_array(X, "X")
        return np.full(X.shape[0], self._scalars()[2])

    def vjp(self, dL_dK, X, Z=None):
        X, Zc = self._inputs(X, Z)
        p, ls, var = self._scalars()
        Kxz = _nb.periodic_forward(X, Zc, p, ls, var)
        G = np.ascontiguousarray(np.asarray(dL_dK, dtype=np.float64) * Kxz)
        dX, dZ, dlogp, dlogl = _nb.periodic_backward(G, X, Zc, p, ls)
        if Z is None:
            dX = dX + dZ
            dZ = None
        grads = {"variance": np.sum(G), "period": dlogp, "length_scale": dlogl}
        return KernelVJP(dX, dZ, self._pack_theta_grad(grads))

    def vjp_diag(self, dL_dKdiag, X):
        X = _as_float_array(X, "X")
        var = self._scalars()[2]
        grads = {"variance": var * float(np.sum(dL_dKdiag)), "period": 0.0, "length_scale": 0.0}
        return KernelVJP(np.zeros_like(X), None, self._pack_theta_grad(grads))
