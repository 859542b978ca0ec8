"""The minibatch (uncollapsed) GPLVM bound in the conformance test: complete data and a mask,
closed-form and unscented Ψ-statistics, and a minibatch weight ``N / |B|`` other than one.

Its global blocks are q(u) (whitened means and lower-triangular square roots), the inducing
inputs, the kernel's ``theta`` and the noise variance; its local blocks the rows' q(x_n).
"""

import numpy as np
from conformance import N, Problem

from sklearn_lvgp._core.linalg import tril
from sklearn_lvgp.bounds._collapsed_masked import column_groups
from sklearn_lvgp.bounds._svi import AmortisedUncollapsedPsi, SviParams, UncollapsedPsi
from sklearn_lvgp.expectations import make_rule
from sklearn_lvgp.kernels import RBF, Matern32
from sklearn_lvgp.nn._ldgd_encoder import encoder_init, encoder_shapes


def _svi_problem(kernel, rule_name, seed, missing, scale, hidden=None, empty_rows=()):
    kernel = kernel.initialize(2, np.random.RandomState(0))
    rule = make_rule(rule_name, kernel, 2, n_samples=3, random_state=np.random.RandomState(seed),
                     n_points=N)[1]
    r = np.random.default_rng(seed)
    D, M = 3, 5
    Y = r.standard_normal((N, D))
    observed = r.random((N, D)) > missing
    observed[0] = True
    if missing:
        observed[5] = False  # a row with every entry missing
    observed[list(empty_rows)] = False  # (complete otherwise: one column group, summed Ψ)
    groups = column_groups(observed)
    mu = r.standard_normal((N, 2))
    S = r.uniform(0.1, 0.6, (N, 2))
    Z = r.standard_normal((M, 2))
    q_mu = r.standard_normal((M, D))
    q_sqrt = tril(0.3 * r.standard_normal((D, M, M))) + 0.8 * np.eye(M)

    shapes = None if hidden is None else encoder_shapes(D, hidden, 2)
    sizes = [] if hidden is None else [int(np.prod(sh)) for sh in shapes]

    def params(b, n):
        k = kernel.clone_with_theta(b["theta"])
        encoder = None
        if hidden is not None:
            parts = np.split(b["encoder"], np.cumsum(sizes)[:-1])
            encoder = [w.reshape(sh) for w, sh in zip(parts, shapes, strict=True)]
        return SviParams(k, b["Z"], float(b["noise"]), rule, groups, b["q_mu"],
                         tril(b["q_sqrt"]), scale, encoder=encoder)

    def grads(g):
        out = {"Z": g["Z"], "theta": g["theta"], "noise": g["noise"], "q_mu": g["q_mu"],
               "q_sqrt": g["q_sqrt"]}
        if hidden is not None:
            out["encoder"] = np.concatenate([np.ravel(w) for w in g["encoder"]])
        return out

    rows = {"Y": np.where(observed, Y, 0.0), "R": groups.member}
    blocks = {"Z": Z, "theta": kernel.theta.copy(), "noise": np.array(0.3), "q_mu": q_mu,
              "q_sqrt": q_sqrt}
    if hidden is not None:  # q(x_n) from an encoder: its weights are a global block
        weights = encoder_init(shapes, np.random.RandomState(seed), sigma_init=0.5)
        blocks["encoder"] = np.concatenate([np.ravel(w) for w in weights])
        return Problem(AmortisedUncollapsedPsi(), rows, blocks, (), params, grads)
    return Problem(UncollapsedPsi(), {**rows, "mu": mu, "S": S}, blocks, ("mu", "S"), params,
                   grads)


REGISTRY = {
    "svi-psi-analytic-rbf": lambda: _svi_problem(RBF(length_scale=[0.9, 1.2]), "analytic", 6,
                                                 0.0, 1.0),
    "svi-psi-analytic-rbf-masked": lambda: _svi_problem(RBF(length_scale=[0.9, 1.2]),
                                                        "analytic", 7, 0.3, 3.5),
    "svi-psi-unscented-matern32-masked":
        lambda: _svi_problem(Matern32(length_scale=[1.0, 0.7]), "unscented", 8, 0.3, 2.0),
    # Monte Carlo nodes per row: the rows left out of the summed Ψ leave their nodes out too
    "svi-psi-monte-carlo-rbf-empty-rows": lambda: _svi_problem(
        RBF(length_scale=[0.9, 1.2]), "monte_carlo", 10, 0.0, 2.0, empty_rows=(3, 7, 8)),
    "svi-psi-encoder-analytic-rbf-masked": lambda: _svi_problem(
        RBF(length_scale=[0.9, 1.2]), "analytic", 9, 0.3, 1.5, hidden=(4,)),
}
