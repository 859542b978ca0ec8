"""The registry of the bound-protocol conformance test (``test_bound_conformance.py``).

Each entry builds one :class:`~sklearn_lvgp.engine.ChunkedBound` on a small problem: its row
arrays (data and local parameters), its global parameter blocks, how the blocks become the
bound's ``prepare`` argument, and which gradient answers which block. Registering a bound is
what submits it to every check of the conformance test: the collapsed bounds are registered
here, every other bound in a module ``conformance_<bound>.py`` beside this one, whose
``REGISTRY`` dict is merged in.
"""

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from sklearn_lvgp.bounds._collapsed import CollapsedKernel, CollapsedPsi, KernelParams, PsiParams
from sklearn_lvgp.expectations import make_rule
from sklearn_lvgp.kernels import RBF, Matern32


class Problem(NamedTuple):
    """A bound on a small problem.

    Attributes
    ----------
    bound : ChunkedBound
    rows : dict of str to ndarray
        Row arrays, in ``bound.row_names`` order.
    blocks : dict of str to ndarray
        Global parameter blocks (floats as 0-d arrays).
    local_blocks : tuple of str
        Row arrays that are parameters (their gradients are the bound's local gradients).
    params : callable
        ``params(blocks, n_rows)`` -> the argument of ``bound.prepare``.
    grads : callable
        ``grads(value_grads) -> dict`` of the global blocks' gradients.
    smooth : float
        Relative tolerance of the finite-difference check (looser for non-smooth kernels).
    """

    bound: object
    rows: dict
    blocks: dict
    local_blocks: tuple
    params: Callable
    grads: Callable
    smooth: float = 1e-6


N = 23


def _latent(seed):
    r = np.random.default_rng(seed)
    Y = r.standard_normal((N, 3))
    mu = r.standard_normal((N, 2))
    S = r.uniform(0.1, 0.6, (N, 2))
    Z = r.standard_normal((5, 2))
    return Y, mu, S, Z


def _psi_problem(kernel, rule_name, seed):
    kernel = kernel.initialize(2, np.random.RandomState(0))
    rule = make_rule(rule_name, kernel, 2)[1]
    Y, mu, S, Z = _latent(seed)

    def params(b, n):
        k = kernel.clone_with_theta(b["theta"])
        return PsiParams(k, b["Z"], float(b["noise"]), rule, n, Y.shape[1])

    return Problem(CollapsedPsi(), {"Y": Y, "mu": mu, "S": S},
                   {"Z": Z, "theta": kernel.theta.copy(), "noise": np.array(0.3)}, ("mu", "S"),
                   params, lambda g: {"Z": g["Z"], "theta": g["theta"], "noise": g["noise"]})


def _kernel_problem(seed):
    r = np.random.default_rng(seed)
    X = r.uniform(-2, 2, (N, 2))
    y = np.column_stack([np.sin(X[:, 0]), np.cos(X[:, 1])]) + 0.1 * r.standard_normal((N, 2))
    kernel = RBF(length_scale=[0.8, 1.3]).initialize(2, np.random.RandomState(0))

    def params(b, n):
        return KernelParams(kernel.clone_with_theta(b["theta"]), b["Z"], float(b["noise"]), n,
                            y.shape[1])

    return Problem(CollapsedKernel(), {"X": X, "y": y},
                   {"Z": X[:6] + 0.05, "theta": kernel.theta.copy(), "noise": np.array(0.2)},
                   (), params, lambda g: {"Z": g["Z"], "theta": g["theta"], "noise": g["noise"]})


#: Name -> problem factory (each call a fresh problem).
REGISTRY = {
    "collapsed-psi-analytic-rbf": lambda: _psi_problem(RBF(length_scale=[0.9, 1.2]), "analytic", 1),
    "collapsed-psi-unscented-matern32":
        lambda: _psi_problem(Matern32(length_scale=[1.0, 0.7]), "unscented", 2),
    "collapsed-kernel": lambda: _kernel_problem(3),
}

for _path in sorted(Path(__file__).resolve().parent.glob("conformance_*.py")):
    REGISTRY.update(importlib.import_module(_path.stem).REGISTRY)

