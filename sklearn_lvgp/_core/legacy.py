"""Module paths of the releases before the package's layout by concept, for old pickles.

A pickle names the module of each class it holds. Estimators pickled before the modules moved
into their layers (``sklearn_lvgp._unscented_gplvm``, ``sklearn_lvgp._svgp._layer``, ...) name
paths that no longer exist; :class:`LegacyModuleFinder`, installed by the package, answers an
import of such a path with the module that holds the code now, so those pickles load (the
estimator's ``__setstate__`` then warns that another version wrote them).
"""

import importlib
import importlib.abc
import importlib.util
import sys
import types

__all__ = ["LEGACY_MODULES", "LegacyModuleFinder", "install"]

#: Old private module path (below ``sklearn_lvgp.``) -> its module now (or the modules its
#: classes now live in).
LEGACY_MODULES = {
    "_blas_numba": "_core.blas_numba",
    "_linalg": "_core.linalg",
    "_params": "_core.params",
    "_validation": "_core.validation",
    "_init": "_core.init",
    "_progress": "_core.progress",
    "_warn": "_core.warn",
    "_scaling": "_core.scaling",
    "_blocks": "_core.blocks",
    "_workspace": "_core.workspace",
    "_parallel": "_core.parallel",
    "_jit": "_compile.jit",
    "_vexp_numba": "_compile.vexp_numba",
    "_compile_plans": "_compile.plans",
    "_precompile": "_compile.precompile",
    "_compile_report": "_compile.report",
    "_engine": "engine",
    "_engine._executor": "engine._executor",
    "_engine._dask": "engine._dask",
    "_psi": "expectations",
    "_psi._cross": "expectations._cross",
    "_psi._linear": "expectations._linear",
    "_psi._pointset": "expectations._pointset",
    "_psi._psi_numba": "expectations._psi_numba",
    "_psi._rbf": "expectations._rbf",
    "_psi._rules": "expectations._rules",
    "_psi._two_rbf": "expectations._two_rbf",
    "_psi._two_rbf_numba": "expectations._two_rbf_numba",
    "_psi._types": "expectations._types",
    "_psi._ut_numba": "expectations._ut_numba",
    "_psi._ut_stationary": "expectations._ut_stationary",
    "_cde._likelihood": "likelihoods._mixed_gaussian",
    "_svgp": "variational",
    "_svgp._layer": "variational._layer",
    "_svgp._joint": "variational._joint",
    "_svgp._natgrad": "variational._natgrad",
    "_svgp._mean_functions": "variational._mean_functions",
    "_svgp._outputs_numba": "variational._outputs_numba",
    "_objectives._dvmgp_bound": "variational._projection",
    "_objectives._dvmgp_chunk_numba": "variational._projection_numba",
    "_cde._latent": "variational._latent_covariate",
    "_cde._projection": "variational._input_projection",
    "_cde._natgrad": "variational._natgrad_mixing",
    "_cde._joint": "variational._joint_mixing",
    "_mlp": "nn._mlp",
    "_cde._encoder": "nn._cde_encoder",
    "_ldgd_parts._encoder": "nn._ldgd_encoder",
    "_engine._collapsed": "bounds._collapsed",
    "_objectives._collapsed": "bounds._collapsed_global",
    "_objectives._collapsed_numba": "bounds._collapsed_global_numba",
    "_objectives._joint_uncertain": "bounds._joint_uncertain",
    "_engine._dsvi": "bounds._dsvi",
    "_engine._ldgd": "bounds._ldgd",
    "_engine._dvmgp": "bounds._dvmgp",
    "_cde._bound": ("bounds._gpcde", "bounds._gpcde_bound"),
    "_ldgd_parts._objective": "bounds._ldgd_objective",
    "_ldgd_parts._problem": "bounds._ldgd_problem",
    "_iwvi": "bounds._iwvi",
    "_deep_gp_model": "bounds._dsvi_model",
    "_optimize": "optim._lbfgsb",
    "_stochastic": "optim._adam",
    "_engine._alternating": "optim._alternating",
    "_unscented_gplvm": "models._unscented_gplvm",
    "_gplvm_fit": "models._unscented_gplvm",
    "_gplvm_setup": "models._unscented_gplvm",
    "_gplvm_predict": "models._unscented_gplvm",
    "_gplvm_early_stopping": "models._unscented_gplvm",
    "_gplvm_dask": "models._unscented_gplvm",
    "_deep_gp": "models._deep_gp",
    "_deep_gp_fit": "models._deep_gp",
    "_deep_gp_dask": "models._deep_gp",
    "_dvmgp": "models._dvmgp",
    "_dvmgp_parts": "bounds._dvmgp",
    "_sgpr": "models._sgpr",
    "_sgpr_parts": "models._sgpr",
    "_ldgd": "models._ldgd",
    "_ldgd_parts._fit": "models._ldgd",
    "_ldgd_parts._inference": "bounds._ldgd_posterior",
    "_gpcde": "models._gpcde",
    "_cde._fit": "models._gpcde",
    "_cde._init": "bounds._gpcde",
    "_cde._predict": "bounds._gpcde_predictive",
    "_cde._warm_start": "bounds._gpcde",
    # modules that moved again after the layout
    "_precompile_record": "utils._record_compile_plans",
    "_svgp._kl": "variational._kl",
    "_objectives._kl": "variational._kl",
    "_svgp._likelihoods": "likelihoods._gaussian",
    "kernels._combination": "kernels._base",
    "_objectives": (),
    "_cde": (),
    "_ldgd_parts": (),
    "kernels._constant": ("kernels._base", "kernels._white"),
}


class _Alias(importlib.abc.Loader):
    """The module now at ``targets`` (one path), or a module holding the public names of
    several (an old module whose classes now live in different modules)."""

    def __init__(self, name, targets):
        self.name, self.targets = name, targets

    def create_module(self, spec):
        if isinstance(self.targets, str):
            return importlib.import_module(self.targets)
        module = types.ModuleType(self.name)
        module.__path__ = []  # a package: an old folder's modules are found below it
        for target in self.targets:
            source = importlib.import_module(target)
            module.__dict__.update({k: v for k, v in vars(source).items()
                                    if not k.startswith("__")})
        return module

    def exec_module(self, module):
        pass


class LegacyModuleFinder(importlib.abc.MetaPathFinder):
    """Finds ``sklearn_lvgp.<old path>`` as the module that holds its code now."""

    def find_spec(self, fullname, path=None, target=None):
        prefix = "sklearn_lvgp."
        if not fullname.startswith(prefix):
            return None
        new = LEGACY_MODULES.get(fullname[len(prefix):])
        if new is None:
            return None
        targets = prefix + new if isinstance(new, str) else [prefix + t for t in new]
        return importlib.util.spec_from_loader(fullname, _Alias(fullname, targets))


def install():
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, LegacyModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(LegacyModuleFinder())
