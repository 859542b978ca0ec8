"""sklearn_lvgp: scikit-learn-compatible latent-variable Gaussian-process models."""

from . import kernels
from ._unscented_gplvm import UnscentedGPLVM

__version__ = "0.1.0.dev0"

__all__ = ["UnscentedGPLVM", "kernels", "__version__"]
