"""Conformance registry entries of the LDGD bound (:class:`~sklearn_lvgp.bounds._ldgd.LDGDBound`).

Three problems: both paths with the unscented rule's shared sigma points; both paths with per-row
Monte Carlo draws held fixed as a row array (so the evaluation is deterministic); and the
regression path alone (test time: no labels, no KL_u terms).
"""

import numpy as np
from conformance import N, Problem

from sklearn_lvgp.bounds._ldgd import LDGDBound, LDGDParams
from sklearn_lvgp.bounds._ldgd_objective import Globals
from sklearn_lvgp.expectations import unscented_rule
from sklearn_lvgp.kernels import RBF, Matern32
from sklearn_lvgp.variational import tril_pack, tril_unpack

D, K, Q, M_R, M_C, P_MC = 4, 3, 2, 5, 4, 3
GLOBAL_BLOCKS = ("theta_r", "Z_r", "qmu_r", "qsqrt_r", "noise", "theta_c", "Z_c", "qmu_c",
                 "qsqrt_c")


def _ldgd_problem(seed, classify, per_row_nodes):
    r = np.random.default_rng(seed)
    kr = RBF(length_scale=[0.9, 1.2]).initialize(Q, np.random.RandomState(0))
    kc = Matern32(length_scale=[1.1, 0.8]).initialize(Q, np.random.RandomState(1))
    blocks = {"theta_r": kr.theta.copy(), "Z_r": r.standard_normal((M_R, Q)),
              "qmu_r": r.standard_normal((M_R, D)),
              "qsqrt_r": tril_pack(np.tril(0.3 * r.standard_normal((D, M_R, M_R))) + np.eye(M_R)),
              "noise": 0.3 + r.random(D), "theta_c": kc.theta.copy(),
              "Z_c": r.standard_normal((M_C, Q)), "qmu_c": r.standard_normal((M_C, K)),
              "qsqrt_c": tril_pack(np.tril(0.3 * r.standard_normal((K, M_C, M_C)))
                                   + np.eye(M_C))}
    rows = {"Yr": r.standard_normal((N, D)), "mu": r.standard_normal((N, Q)),
            "sigma": 0.3 + r.random((N, Q))}
    if classify:
        rows["Yc"] = np.eye(K)[np.arange(N) % K]
    if per_row_nodes:
        rows["nodes"] = r.standard_normal((N, P_MC * Q))
        nodes, weights = None, np.full(P_MC, 1.0 / P_MC)
    else:
        rule = unscented_rule(Q)
        nodes, weights = rule.nodes, rule.weights

    # the test-time bound has no classification blocks: they stay fixed
    fixed = {} if classify else {k: blocks.pop(k) for k in GLOBAL_BLOCKS[5:]}

    def params(b, n):
        b = {**b, **fixed}
        glob = Globals(kr.clone_with_theta(b["theta_r"]), b["Z_r"], b["qmu_r"],
                       tril_unpack(b["qsqrt_r"], M_R), b["noise"],
                       kc.clone_with_theta(b["theta_c"]), b["Z_c"], b["qmu_c"],
                       tril_unpack(b["qsqrt_c"], M_C))
        return LDGDParams(glob, nodes, weights, n / 10.0, (0.9, 1.3, 1.1), (0.5, 0.7))

    def grads(g):
        out = {"theta_r": g.theta_r, "Z_r": g.Z_r, "qmu_r": g.qmu_r,
               "qsqrt_r": tril_pack(g.qsqrt_r), "noise": g.noise}
        if classify:
            out.update(theta_c=g.theta_c, Z_c=g.Z_c, qmu_c=g.qmu_c,
                       qsqrt_c=tril_pack(g.qsqrt_c))
        return out

    bound = LDGDBound(classify, per_row_nodes)
    return Problem(bound, {k: rows[k] for k in bound.row_names}, blocks, ("mu", "sigma"),
                   params, grads)


#: Name -> problem factory (each call a fresh problem).
REGISTRY = {
    "ldgd-unscented": lambda: _ldgd_problem(11, True, False),
    "ldgd-monte-carlo-draws": lambda: _ldgd_problem(12, True, True),
    "ldgd-regression-path": lambda: _ldgd_problem(13, False, False),
}
