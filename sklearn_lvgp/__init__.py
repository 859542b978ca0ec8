"""sklearn_lvgp: scikit-learn-compatible latent-variable Gaussian-process models."""

from . import kernels, metrics  # metrics: scorer names such as "log_predictive_density"
from ._core.legacy import install as _install_legacy_modules
from .impute import GPLVMImputer
from .models._deep_gp import DeepGP
from .models._deep_gp_classifier import DeepGPClassifier
from .models._dvmgp import DVMGP
from .models._gpcde import GPCDE
from .models._ldgd import LDGD
from .models._sgpr import SparseGPRegressor
from .models._unscented_gplvm import UnscentedGPLVM

_install_legacy_modules()  # pickles written before the modules moved still load

__all__ = ["DVMGP", "DeepGP", "DeepGPClassifier", "GPCDE", "GPLVMImputer", "LDGD",
           "SparseGPRegressor", "UnscentedGPLVM", "kernels", "metrics", "__version__"]


def __getattr__(name):
    # ``__version__`` is looked up on first use (see ``_version.version``)
    if name == "__version__":
        from ._version import version

        return version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
