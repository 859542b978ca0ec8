"""sklearn_lvgp: scikit-learn-compatible latent-variable Gaussian-process models."""

from . import kernels
from ._deep_gp import DeepGP
from ._dvmgp import DVMGP
from ._gpcde import GPCDE
from ._ldgd import LDGD
from ._sgpr import SparseGPRegressor
from ._unscented_gplvm import UnscentedGPLVM
from ._version import __version__

__all__ = ["DVMGP", "DeepGP", "GPCDE", "LDGD", "SparseGPRegressor", "UnscentedGPLVM",
           "kernels", "__version__"]
