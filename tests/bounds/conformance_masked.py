"""The masked collapsed bound (NaN entries of ``Y`` missing at random) in the conformance test."""

import numpy as np
from conformance import N, Problem

from sklearn_lvgp.bounds._collapsed_masked import MaskedParams, MaskedPsi, column_groups
from sklearn_lvgp.expectations import make_rule
from sklearn_lvgp.kernels import RBF, Matern32


def _masked_problem(kernel, rule_name, seed):
    kernel = kernel.initialize(2, np.random.RandomState(0))
    rule = make_rule(rule_name, kernel, 2)[1]
    r = np.random.default_rng(seed)
    Y = r.standard_normal((N, 3))
    observed = r.random((N, 3)) > 0.3
    observed[0] = True
    observed[5] = False  # a row with every entry missing
    groups = column_groups(observed)
    mu = r.standard_normal((N, 2))
    S = r.uniform(0.1, 0.6, (N, 2))
    Z = r.standard_normal((5, 2))

    def params(b, n):
        k = kernel.clone_with_theta(b["theta"])
        return MaskedParams(k, b["Z"], float(b["noise"]), rule, groups)

    return Problem(MaskedPsi(), {"Y": np.where(observed, Y, 0.0), "R": groups.member,
                                 "mu": mu, "S": S},
                   {"Z": Z, "theta": kernel.theta.copy(), "noise": np.array(0.3)}, ("mu", "S"),
                   params, lambda g: {"Z": g["Z"], "theta": g["theta"], "noise": g["noise"]})


REGISTRY = {
    "masked-psi-analytic-rbf": lambda: _masked_problem(RBF(length_scale=[0.9, 1.2]), "analytic", 4),
    "masked-psi-unscented-matern32":
        lambda: _masked_problem(Matern32(length_scale=[1.0, 0.7]), "unscented", 5),
}
