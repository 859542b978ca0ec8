"""GPCDE's bound (:class:`~sklearn_lvgp.bounds._gpcde.CDEBound`) in the conformance registry.

One problem per code path of its chunks: the quadrature bound over Gauss–Hermite nodes (with
output mixing), a free Gaussian ``q(w_n)`` with Monte Carlo draws (local blocks ``w_mean`` and
``w_rho``; the draws are rows), and the amortised ``q(w_n)`` with sigma points and a Bayesian input
projection (its draws are rows too), so every evaluation is deterministic.
"""

import numpy as np
from conformance import N, Problem

from sklearn_lvgp.bounds._gpcde import CDEModel, CDEParams
from sklearn_lvgp.kernels import RBF
from sklearn_lvgp.nn._cde_encoder import encoder_init
from sklearn_lvgp.variational import tril_pack, tril_unpack

M, DX, S = 5, 2, 3


def _cde_problem(seed, q_w, expectation="monte_carlo", Dw=1, proj=None, mixing=False, L=None,
                 Dy=2, whiten=True):
    r = np.random.RandomState(seed)
    Dh = proj or DX
    L = L or Dy
    kernel = RBF(length_scale=np.full(Dh + Dw, 1.2), variance=0.8)
    model = CDEModel(kernel, DX, proj, Dw, L, Dy, M, mixing, q_w, expectation, S, 4, N, (4, 3),
                     whiten, 1e-8)
    bound = model.bound
    rows = {"X": r.standard_normal((N, DX)), "y": r.standard_normal((N, Dy))}
    blocks = {"q_mu": r.standard_normal((M, L)),
              "q_sqrt": tril_pack(0.3 * np.tril(r.standard_normal((L, M, M))) + np.eye(M)),
              "Z": r.standard_normal((M, Dh + Dw)), "theta": kernel.theta.copy(),
              "noise_variance": np.array([0.3])}
    if mixing:
        blocks["P"] = r.standard_normal((L, Dy))
    if proj:
        blocks["A_mu"], blocks["A_s"] = r.standard_normal((DX, Dh)), 0.1 + r.rand(DX, Dh)
        rows["eps_A"] = r.standard_normal((N, Dh))
    if q_w == "gaussian":
        rows["w_mean"], rows["w_rho"] = r.standard_normal((N, Dw)), r.standard_normal((N, Dw)) + 3
    if q_w == "amortized":
        ps = encoder_init(model.enc_shapes, r)
        for i in range(len(model.enc_shapes)):
            blocks[f"enc_W{i}"] = ps[2 * i]
            blocks[f"enc_b{i}"] = ps[2 * i + 1] + 0.1 * r.standard_normal(ps[2 * i + 1].shape)
    if "eps_w" in bound.row_names:
        rows["eps_w"] = r.standard_normal((N, S * Dw))
    local = ("w_mean", "w_rho") if q_w == "gaussian" else ()

    def params(b, n):
        values = {**b, "kernel": kernel.clone_with_theta(b["theta"]),
                  "q_sqrt": tril_unpack(b["q_sqrt"], M),
                  "noise_variance": float(b["noise_variance"][0])}
        for name in local:  # the free q(w_n) are rows: their entries of x are not read
            values[name] = np.zeros((n, Dw))
        return CDEParams(model.pack(values), 1.5)

    return Problem(bound, {k: rows[k] for k in bound.row_names}, blocks, local, params,
                   lambda g: {k: g[k] for k in blocks})


#: Name -> problem factory (merged into ``conformance.REGISTRY``).
REGISTRY = {
    "gpcde-quadrature-mixing":
        lambda: _cde_problem(11, "quadrature", mixing=True, L=2, Dy=3),
    "gpcde-free-monte-carlo":
        lambda: _cde_problem(12, "gaussian", Dw=2, whiten=False),
    "gpcde-amortized-unscented-projection":
        lambda: _cde_problem(13, "amortized", expectation="unscented", proj=2),
}
