"""Finite-difference checks of every DVMGP backward pass (de Souza 2020, §4.3.1 and app. A).

The collapsed bound's own adjoints (ψ0, Ψ1, Ψ2, K_u, σ²) are shared with the GPLVM and
checked in ``test_collapsed_grad.py``.
"""

import numpy as np
import pytest

from sklearn_lvgp.bounds._dvmgp import dvmgp_objective
from sklearn_lvgp.kernels import RBF
from sklearn_lvgp.models._dvmgp import DVMGP
from sklearn_lvgp.utils.gradcheck import check_grad, check_vjp
from sklearn_lvgp.variational._projection import (
    _row_forward,
    _row_vjp,
    latent_moments,
    latent_moments_vjp,
    output_psi,
    output_psi_vjp,
    projection_forward,
    projection_kernels,
    projection_vjp,
)

N, D, Q, M_U, M_V = 20, 2, 2, 6, 4


def _chol(rng, kind, q=Q, m=M_V):
    if kind == "diag":
        return 0.4 + rng.random((q, m))
    L = np.tril(0.3 * rng.standard_normal((q, m, m)), -1)
    L[:, np.arange(m), np.arange(m)] = 0.4 + rng.random((q, m))
    return L


def _layer_inputs(rng, kind, q=3):
    return {"Xi": rng.standard_normal((M_V, D)), "mu": rng.standard_normal((q, M_V, D)),
            "chol": _chol(rng, kind, q), "wtheta": 0.3 * rng.standard_normal((q, 1 + D))}


@pytest.mark.parametrize("kind", ["diag", "full"])
def test_projection_layer_vjp(rng, kind):
    """a, b and KL(q(V)‖p(V)) wrt Ξ, μ, the q(V) Cholesky, κ_q² and ℓ_qd."""
    X = rng.standard_normal((N, D))

    def fwd(Xi, mu, chol, wtheta):
        chol = chol if kind == "diag" else np.tril(chol)
        a, b, kl, _ = projection_forward(X, Xi, mu, chol, projection_kernels(wtheta))
        return a, b, kl

    def bwd(w, Xi, mu, chol, wtheta):
        chol = chol if kind == "diag" else np.tril(chol)
        *_, cache = projection_forward(X, Xi, mu, chol, projection_kernels(wtheta))
        g = projection_vjp(w[0], w[1], float(w[2]), cache)
        return {"Xi": g.Xi, "mu": g.mu, "chol": g.chol, "wtheta": g.theta}

    check_vjp(fwd, bwd, _layer_inputs(rng, kind), rng)


@pytest.mark.parametrize("kind", ["diag", "full"])
def test_kl_alone_vjp(rng, kind):
    """KL(q(V)‖p(V)) by itself wrt μ, Cholesky, Ξ and the W-kernel hyperparameters."""
    X = rng.standard_normal((N, D))
    zero_a, zero_b = np.zeros((N, 3, D)), np.zeros((N, 3))

    def fwd(Xi, mu, chol, wtheta):
        chol = chol if kind == "diag" else np.tril(chol)
        return projection_forward(X, Xi, mu, chol, projection_kernels(wtheta))[2]

    def bwd(w, Xi, mu, chol, wtheta):
        chol = chol if kind == "diag" else np.tril(chol)
        *_, cache = projection_forward(X, Xi, mu, chol, projection_kernels(wtheta))
        g = projection_vjp(zero_a, zero_b, float(w), cache)
        return {"Xi": g.Xi, "mu": g.mu, "chol": g.chol, "wtheta": g.theta}

    check_vjp(fwd, bwd, _layer_inputs(rng, kind), rng)


def test_kl_closed_form_gradients(rng):
    """Closed-form gradients of KL(q(V) ‖ p(V)).

    ∂KL/∂μ_q = K_v⁻¹μ_q and ∂KL/∂c_qj = D(c_qj [K_v⁻¹]_jj − 1/c_qj).
    """
    inp = _layer_inputs(rng, "diag")
    kernels = projection_kernels(inp["wtheta"])
    X = rng.standard_normal((N, D))
    *_, cache = projection_forward(X, inp["Xi"], inp["mu"], inp["chol"], kernels, jitter=0.0)
    g = projection_vjp(np.zeros((N, 3, D)), np.zeros((N, 3)), 1.0, cache)
    for q, k in enumerate(kernels):
        Kinv = np.linalg.inv(k.K(inp["Xi"]))
        np.testing.assert_allclose(g.mu[q], Kinv @ inp["mu"][q], rtol=1e-8, atol=1e-10)
        c = inp["chol"][q]
        np.testing.assert_allclose(g.chol[q], D * (c * np.diag(Kinv) - 1.0 / c), rtol=1e-8)


@pytest.mark.parametrize("kind", ["diag", "full"])
def test_row_vjp_including_symmetric_Kv(rng, kind):
    """One row's marginals and KL wrt K_v (symmetric directions only), K_vw, k(x,x), μ_q, L_q."""
    n = 7
    Xi = rng.standard_normal((M_V, D))
    X = rng.standard_normal((n, D))
    k = RBF(length_scale=np.array([0.9, 1.3]), variance=1.4)
    Kv0 = k.K(Xi) + 1e-3 * np.eye(M_V)
    L = _chol(rng, kind, 1)[0]
    L = np.diag(L) if kind == "diag" else L

    def fwd(H, Kvw, kdiag, mu, Lsig):
        a, b, kl, _ = _row_forward(Kv0 + H + H.T, Kvw, kdiag, mu, np.tril(Lsig))
        return a, b, kl

    def bwd(w, H, Kvw, kdiag, mu, Lsig):
        *_, row = _row_forward(Kv0 + H + H.T, Kvw, kdiag, mu, np.tril(Lsig))
        dKv, dKvw, dkd, dmu, dL = _row_vjp(w[0], w[1], float(w[2]), row)
        np.testing.assert_allclose(dKv, dKv.T)
        return {"H": 2.0 * dKv, "Kvw": dKvw, "kdiag": dkd, "mu": dmu, "Lsig": dL}

    inputs = {"H": np.zeros((M_V, M_V)), "Kvw": k.K(Xi, X), "kdiag": k.Kdiag(X) + 0.5,
              "mu": rng.standard_normal((M_V, D)), "Lsig": L}
    check_vjp(fwd, bwd, inputs, rng)


def test_latent_moments_vjp(rng):
    """(h, η) wrt (a, b)."""
    X = rng.standard_normal((N, D))

    def fwd(a, b):
        return latent_moments(a, b, X)

    def bwd(w, a, b):
        da, db = latent_moments_vjp(w[0], w[1], b, X)
        return {"a": da, "b": db}

    check_vjp(fwd, bwd, {"a": rng.standard_normal((N, Q, D)), "b": 0.1 + rng.random((N, Q))},
              rng)


@pytest.mark.parametrize("per_point", [False, True])
def test_output_psi_vjp(rng, per_point):
    """ψ0, Ψ1, Ψ2 (summed and per point) wrt h, η, ζ and σ_f."""

    def fwd(h, eta, zeta, sf):
        s = output_psi(zeta, h, eta, float(sf), per_point=per_point)[0]
        return np.asarray(s.psi0, dtype=float), s.Psi1, s.Psi2

    def bwd(w, h, eta, zeta, sf):
        _, cache = output_psi(zeta, h, eta, float(sf), per_point=per_point)
        w0 = w[0] if per_point else float(w[0])
        dh, deta, dzeta, dsf = output_psi_vjp(w0, w[1], w[2], cache)
        return {"h": dh, "eta": deta, "zeta": dzeta, "sf": np.array(dsf)}

    inputs = {"h": rng.standard_normal((8, Q)), "eta": 0.05 + 0.5 * rng.random((8, Q)),
              "zeta": rng.standard_normal((M_U, Q)), "sf": np.array(1.3)}
    check_vjp(fwd, bwd, inputs, rng)


def _packed_problem(rng, kind):
    X = rng.standard_normal((N, D))
    Y = np.column_stack([np.sin(2 * X[:, 0]), X[:, 1] ** 2]) + 0.1 * rng.standard_normal((N, 2))
    est = DVMGP(qv_covariance=kind)
    packer = est._packer(Q, D, M_U, M_V)
    p = {"zeta": rng.standard_normal((M_U, Q)), "Xi": rng.standard_normal((M_V, D)),
         "mu": rng.standard_normal((Q, M_V, D)), "c_diag": 0.3 + rng.random((Q, M_V)),
         "c_off": 0.2 * rng.standard_normal((Q, M_V * (M_V - 1) // 2)),
         "wtheta": 0.2 * rng.standard_normal((Q, 1 + D)), "signal_std": 1.3, "noise": 0.1}
    return X, Y, packer, packer.pack(p)


@pytest.mark.parametrize("kind", ["diag", "full"])
def test_full_objective_gradient(rng, kind):
    """The packed unconstrained vector (ζ, Ξ, μ, log c, [L_off], log κ², log ℓ, log σ_f, log σ²),
    n=20, D=Q=2, m_u=6, m_v=4, two outputs."""
    X, Y, packer, x = _packed_problem(rng, kind)

    def fun(flat):
        p = packer.unpack(flat)
        value, grads, _ = dvmgp_objective(X, Y, p, 1e-6, kind)
        return value, packer.pack_grad(grads, p)

    check_grad(fun, x)
    # every block gets a non-trivial gradient (nothing silently detached)
    _, g = fun(x)
    for block in packer.blocks:
        assert np.any(g[packer.slice(block.name)] != 0.0), block.name
