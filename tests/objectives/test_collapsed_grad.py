"""Collapsed bound: finite differences per adjoint block, and its exact limits (Titsias 2009)."""

import math

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF as SkRBF
from sklearn.gaussian_process.kernels import ConstantKernel

from sklearn_lvgp.bounds._collapsed_global import (
    collapsed_bound,
    collapsed_bound_vjp,
    heldout_bound,
    predictive_moments,
)
from sklearn_lvgp.kernels import RBF
from sklearn_lvgp.utils.gradcheck import check_grad, fd_gradient
from sklearn_lvgp.variational._kl import (
    gaussian_kl,
    gaussian_kl_vjp,
    standard_normal_kl_and_vjp,
)

N, D, M, Q = 9, 3, 4, 2


@pytest.fixture
def problem(rng):
    X = rng.standard_normal((N, Q))
    Z = rng.standard_normal((M, Q))
    Y = rng.standard_normal((N, D))
    k = RBF(np.array([1.2, 0.8]), variance=1.5)
    Psi1 = k.K(X, Z) * 0.9
    Psi2 = Psi1.T @ Psi1 + 0.05 * np.eye(M)
    return {"Y": Y, "psi0": 1.5 * N, "Psi1": Psi1, "Psi2": Psi2, "Kuu": k.K(Z), "noise": 0.3}


def _F(p, **override):
    q = {**p, **override}
    return collapsed_bound(q["Y"], float(q["psi0"]), q["Psi1"], q["Psi2"], q["Kuu"],
                           float(q["noise"]))[0]


@pytest.mark.parametrize("name", ["psi0", "Psi1", "noise"])
def test_bound_adjoint_unstructured_blocks(problem, name):
    _, cache = collapsed_bound(problem["Y"], problem["psi0"], problem["Psi1"], problem["Psi2"],
                               problem["Kuu"], problem["noise"])
    adj = collapsed_bound_vjp(cache)
    analytic = {"psi0": adj.psi0, "Psi1": adj.Psi1, "noise": adj.noise_variance}[name]
    numeric = fd_gradient(lambda v: _F(problem, **{name: v}), np.asarray(problem[name], float))
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["Psi2", "Kuu"])
def test_bound_adjoint_symmetric_blocks(problem, name, rng):
    """Symmetric inputs: the adjoint is checked along random symmetric directions."""
    _, cache = collapsed_bound(problem["Y"], problem["psi0"], problem["Psi1"], problem["Psi2"],
                               problem["Kuu"], problem["noise"])
    adj = {"Psi2": collapsed_bound_vjp(cache).Psi2, "Kuu": collapsed_bound_vjp(cache).Kuu}[name]
    np.testing.assert_allclose(adj, adj.T, atol=1e-12)
    for _ in range(3):
        V = rng.standard_normal((M, M))
        V = V + V.T
        h = 1e-6
        numeric = (_F(problem, **{name: problem[name] + h * V})
                   - _F(problem, **{name: problem[name] - h * V})) / (2 * h)
        assert np.sum(adj * V) == pytest.approx(numeric, rel=1e-6)


def test_b_form_equals_a_form(problem):
    p = problem
    Kj = p["Kuu"] + 1e-6 * np.mean(np.diag(p["Kuu"])) * np.eye(M)
    s2 = p["noise"]
    A = s2 * Kj + p["Psi2"]
    Y, P1 = p["Y"], p["Psi1"]
    a_form = (-N * D / 2 * math.log(2 * math.pi) - D * (N - M) / 2 * math.log(s2)
              + D / 2 * np.linalg.slogdet(Kj)[1] - D / 2 * np.linalg.slogdet(A)[1]
              - np.sum(Y * Y) / (2 * s2)
              + np.trace(Y.T @ P1 @ np.linalg.solve(A, P1.T @ Y)) / (2 * s2)
              - D * p["psi0"] / (2 * s2)
              + D * np.trace(np.linalg.solve(Kj, p["Psi2"])) / (2 * s2))
    assert _F(p) == pytest.approx(a_form, rel=1e-10)


def _titsias_sgpr(Y, Knn, Knm, Kmm, s2):
    """Dense Titsias (2009) bound: log N(Y | 0, Qnn + s2 I) - tr(Knn - Qnn) / (2 s2), per column."""
    Qnn = Knm @ np.linalg.solve(Kmm, Knm.T)
    C = Qnn + s2 * np.eye(Y.shape[0])
    _, logdet = np.linalg.slogdet(C)
    quad = np.sum(Y * np.linalg.solve(C, Y))
    n, d = Y.shape
    return (-0.5 * n * d * math.log(2 * math.pi) - 0.5 * d * logdet - 0.5 * quad
            - d * np.trace(Knn - Qnn) / (2 * s2))


def test_zero_variance_limit_is_titsias_sgpr(rng):
    X = rng.standard_normal((N, Q))
    Z = rng.standard_normal((M, Q))
    Y = rng.standard_normal((N, D))
    k = RBF(np.array([1.1, 0.9]), variance=1.3)
    Knm, Kmm = k.K(X, Z), k.K(Z)
    F, _ = collapsed_bound(Y, float(np.sum(k.Kdiag(X))), Knm, Knm.T @ Knm, Kmm, 0.2, jitter=0.0)
    assert F == pytest.approx(_titsias_sgpr(Y, k.K(X), Knm, Kmm, 0.2), rel=1e-8)


def test_full_inducing_limit_is_exact_gp_marginal_likelihood(rng):
    X = rng.standard_normal((N, Q))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(N)
    k = RBF(np.array([1.1, 0.9]), variance=1.3)
    K = k.K(X)
    F, _ = collapsed_bound(y[:, None], float(np.trace(K)), K, K @ K, K, 0.2, jitter=1e-10)
    gpr = GaussianProcessRegressor(ConstantKernel(1.3) * SkRBF(np.array([1.1, 0.9])), alpha=0.2,
                                   optimizer=None).fit(X, y)
    assert F == pytest.approx(gpr.log_marginal_likelihood_value_, rel=1e-5)


def test_heldout_bound_adjoints_and_envelope(problem):
    """At the training data the per-point bound has the same Ψ adjoints as the collapsed one."""
    p = problem
    _, post = collapsed_bound(p["Y"], p["psi0"], p["Psi1"], p["Psi2"], p["Kuu"], p["noise"])
    value, adj = heldout_bound(p["Y"], p["psi0"], p["Psi1"], p["Psi2"], post)
    ref = collapsed_bound_vjp(post)
    np.testing.assert_allclose(adj.Psi1, ref.Psi1, atol=1e-12)
    np.testing.assert_allclose(adj.Psi2, ref.Psi2, atol=1e-10)
    assert adj.psi0 == pytest.approx(ref.psi0)

    def held(v):
        return heldout_bound(p["Y"], p["psi0"], v, p["Psi2"], post)[0]

    np.testing.assert_allclose(adj.Psi1, fd_gradient(held, p["Psi1"]), rtol=1e-6, atol=1e-8)


def test_heldout_per_point_values_sum_to_total(problem, rng):
    p = problem
    _, post = collapsed_bound(p["Y"], p["psi0"], p["Psi1"], p["Psi2"], p["Kuu"], p["noise"])
    per_psi2 = np.einsum("nm,nl->nml", p["Psi1"], p["Psi1"])
    per_psi0 = np.full(N, p["psi0"] / N)
    per, _ = heldout_bound(p["Y"], per_psi0, p["Psi1"], per_psi2, post)
    total, _ = heldout_bound(p["Y"], p["psi0"], p["Psi1"], per_psi2.sum(0), post)
    assert per.shape == (N,)
    assert np.sum(per) == pytest.approx(total, rel=1e-12)


def test_deterministic_moments_equal_per_point_psi2_form(problem):
    p = problem
    _, post = collapsed_bound(p["Y"], p["psi0"], p["Psi1"], p["Psi2"], p["Kuu"], p["noise"])
    psi0 = np.full(N, 1.5)
    m1, v1 = predictive_moments(post, psi0, p["Psi1"], None)
    per_psi2 = np.einsum("nm,nl->nml", p["Psi1"], p["Psi1"])
    m2, v2 = predictive_moments(post, psi0, p["Psi1"], per_psi2)
    np.testing.assert_allclose(m1, m2, rtol=1e-12)
    np.testing.assert_allclose(v1, v2, rtol=1e-10, atol=1e-12)
    _, c1 = predictive_moments(post, psi0, p["Psi1"], None, full_cov=True)
    np.testing.assert_allclose(np.diagonal(c1, axis1=1, axis2=2), v1, rtol=1e-12)


def test_kl_value_and_gradient(rng):
    mu = rng.standard_normal((4, 2))
    S = rng.uniform(0.2, 2.0, (4, 2))
    dmu, dS = gaussian_kl_vjp(mu, S)
    check_grad(lambda m: (gaussian_kl(m, S), gaussian_kl_vjp(m, S)[0]), mu)
    check_grad(lambda s: (gaussian_kl(mu, s), gaussian_kl_vjp(mu, s)[1]), S)
    assert gaussian_kl(np.zeros((3, 2)), np.ones((3, 2))) == 0.0
    # general diagonal prior
    m0, v0 = 0.3, 2.0
    check_grad(lambda m: (gaussian_kl(m, S, m0, v0), gaussian_kl_vjp(m, S, m0, v0)[0]), mu)
    check_grad(lambda s: (gaussian_kl(mu, s, m0, v0), gaussian_kl_vjp(mu, s, m0, v0)[1]), S)


def test_standard_normal_kl_and_vjp_equals_the_general_pair(rng):
    mu = rng.standard_normal((7, 3))
    S = rng.uniform(0.05, 3.0, (7, 3))
    kl, dmu, dS = standard_normal_kl_and_vjp(mu, S)
    assert kl == pytest.approx(gaussian_kl(mu, S), rel=1e-13)
    ref_mu, ref_S = gaussian_kl_vjp(mu, S)
    np.testing.assert_allclose(dmu, ref_mu, rtol=1e-14)
    np.testing.assert_allclose(dS, ref_S, rtol=1e-13)
    check_grad(lambda s: standard_normal_kl_and_vjp(mu, s)[::2], S)
