"""The DVMGP bound in the registry of the bound-protocol conformance test.

Two problems: the numpy chunk passes with a diagonal Σ_q, and the jitted chunk passes with a
full Cholesky factor of Σ_q. The bound has no local parameters; its rows are the inputs ``X``
and the targets ``Y``.
"""

import numpy as np
from conformance import N, Problem

from sklearn_lvgp.bounds._dvmgp import DVMGPBound, DVMGPParams

D, Q, M_V, M_U, D_Y = 3, 2, 4, 5, 2
BLOCKS = ("zeta", "Xi", "mu", "chol", "wtheta", "signal_std", "noise")


def _dvmgp_problem(seed, full, jitted):
    r = np.random.default_rng(seed)
    X = r.standard_normal((N, D))
    Y = r.standard_normal((N, D_Y))
    chol = (np.tril(0.2 * r.standard_normal((Q, M_V, M_V))) + np.eye(M_V) if full
            else 0.5 + r.random((Q, M_V)))
    blocks = {"zeta": r.standard_normal((M_U, Q)), "Xi": r.standard_normal((M_V, D)),
              "mu": 0.3 * r.standard_normal((Q, M_V, D)), "chol": chol,
              "wtheta": 0.2 * r.standard_normal((Q, 1 + D)), "signal_std": np.array(1.3),
              "noise": np.array(0.2)}

    def params(b, n):
        return DVMGPParams(b["zeta"], b["Xi"], b["mu"], b["chol"], b["wtheta"],
                           float(b["signal_std"]), float(b["noise"]), 1e-6, n, D_Y,
                           jitted=jitted)

    return Problem(DVMGPBound(), {"X": X, "Y": Y}, blocks, (), params,
                   lambda g: {name: g[name] for name in BLOCKS})


#: Name -> problem factory (each call a fresh problem).
REGISTRY = {
    "dvmgp-numpy-diag": lambda: _dvmgp_problem(11, full=False, jitted=None),
    "dvmgp-jitted-full": lambda: _dvmgp_problem(12, full=True, jitted=True),
}
