"""Conformance problems of the deep-GP bounds: DSVI (Salimbeni & Deisenroth 2017) with one and
two layers, Monte Carlo and unscented propagation, and the latent-variable VI / importance-
weighted bounds (Salimbeni 2020, ch. 5).

The global blocks are the packer's blocks of the flat parameter vector (unconstrained), the
draws are fixed row arrays, so every evaluation is deterministic. Merged into the registry of
``conformance.py``.
"""

import numpy as np
from conformance import N, Problem

from sklearn_lvgp.bounds._dsvi import BoundParams
from sklearn_lvgp.bounds._dsvi_init import build_model, initial_layers
from sklearn_lvgp.bounds._iwvi import LatentDSVI
from sklearn_lvgp.likelihoods import Bernoulli, Poisson, StudentT
from sklearn_lvgp.variational import tril_pack

S = 2  # Monte Carlo samples per row


def _targets(X, r, likelihood):
    y = np.column_stack([np.sin(X[:, 0]) + 0.3 * X[:, 1], np.cos(X[:, 1])])
    y = y + 0.1 * r.standard_normal(y.shape)
    if isinstance(likelihood, Bernoulli):
        return (y[:, :1] > 0).astype(float)
    if isinstance(likelihood, Poisson):
        return np.floor(np.exp(y))
    return y


def _dsvi_problem(n_layers, expectation, latent=None, seed=0, likelihood=None):
    r = np.random.default_rng(seed)
    X = r.uniform(-2, 2, (N, 2))
    y = _targets(X, r, likelihood)
    Dw = latent[0] if latent else 0
    dims = [2 + Dw] + [2] * (n_layers - 1) + [y.shape[1]]
    rs = np.random.RandomState(seed)
    initial = initial_layers(X, dims, [None] * n_layers, 5, True, 1e-6, Dw, rs)
    params = {"n_inducing": 5, "whiten": True, "jitter": 1e-6, "expectation": expectation,
              "positive_transform": "softplus", "noise_variance_init": 0.2,
              "likelihood": likelihood}
    model, x0 = build_model(initial, dims, params, latent, rs, LatentDSVI)
    x0 = x0 + 0.1 * r.standard_normal(x0.size)
    for ell in range(n_layers - 1):
        # inner q_sqrt = 0.5 I: the joint K x K covariances stay far from their delta floor
        x0[model.packer.slice(f"q_sqrt{ell}")] = tril_pack(
            np.repeat(0.5 * np.eye(5)[None], dims[ell + 1], 0)).ravel()
    draws = model.draw_rows(N, S, np.random.RandomState(seed + 1))
    names = [b.name for b in model.packer.blocks if b.size]
    blocks = {name: x0[model.packer.slice(name)].copy() for name in names}
    bound = model.bound()

    def params_of(b, n):
        x = np.empty(model.packer.size)
        for name in names:
            x[model.packer.slice(name)] = b[name]
        return BoundParams(x, 1.7, S)

    def grads(g):
        return {name: g[model.packer.slice(name)] for name in names}

    return Problem(bound, {"X": X, "y": y, **draws}, blocks, (), params_of, grads)


#: Name -> problem factory.
REGISTRY = {
    "dsvi-monte-carlo-1-layer": lambda: _dsvi_problem(1, "monte_carlo", seed=4),
    "dsvi-monte-carlo-2-layers": lambda: _dsvi_problem(2, "monte_carlo", seed=5),
    "dsvi-unscented-1-layer": lambda: _dsvi_problem(1, "unscented", seed=6),
    "dsvi-unscented-2-layers": lambda: _dsvi_problem(2, "unscented", seed=7),
    "latent-vi-2-layers": lambda: _dsvi_problem(2, "monte_carlo", (1, (4,), "vi", 1), seed=8),
    "latent-iwvi-2-layers":
        lambda: _dsvi_problem(2, "monte_carlo", (1, (4,), "iwvi", 3), seed=9),
    # a likelihood object's theta is a block of its own (FD-checked like the others)
    "dsvi-student-t-2-layers": lambda: _dsvi_problem(
        2, "monte_carlo", seed=10, likelihood=StudentT(df=3.0, scale=0.4, df_bounds=(1, 50))),
    "dsvi-student-t-unscented-2-layers": lambda: _dsvi_problem(
        2, "unscented", seed=11, likelihood=StudentT(df=4.0, scale=0.3)),
    "dsvi-bernoulli-1-layer": lambda: _dsvi_problem(
        1, "monte_carlo", seed=12, likelihood=Bernoulli()),
    "dsvi-bernoulli-logit-2-layers": lambda: _dsvi_problem(
        2, "monte_carlo", seed=13, likelihood=Bernoulli(link="logit")),
    "dsvi-poisson-2-layers": lambda: _dsvi_problem(
        2, "monte_carlo", seed=14, likelihood=Poisson()),
}
