"""Kernels with sklearn-style hyperparameters and vector-Jacobian products.

Every kernel exposes ``K(X, Z)``, ``Kdiag(X)``, ``vjp(dL_dK, X, Z)`` and ``vjp_diag(dL_dKdiag, X)``;
see :class:`Kernel`.
"""

from ._base import Constant, Kernel, Product, Sum
from ._contract import Hyperparameter, KernelVJP
from ._from_sklearn import as_lvgp_kernel, from_sklearn, split_white
from ._linear import Linear
from ._mlp import MLPKernel
from ._periodic import Periodic
from ._stationary import RBF, Matern12, Matern32, Matern52, RationalQuadratic
from ._white import White

__all__ = [
    "Kernel", "Hyperparameter", "KernelVJP", "Sum", "Product",
    "RBF", "Matern12", "Matern32", "Matern52", "RationalQuadratic",
    "Constant", "White", "Linear", "Periodic", "MLPKernel",
    "from_sklearn", "as_lvgp_kernel", "split_white",
]
