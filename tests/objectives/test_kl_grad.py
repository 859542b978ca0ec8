"""The package's Gaussian KL divergences (one module): values and finite-difference VJPs.

The KL of an SVGP layer's ``q(u)`` is checked in ``tests/svgp/test_svgp_layer.py``."""

import numpy as np
import pytest

from sklearn_lvgp.utils.gradcheck import check_vjp
from sklearn_lvgp.variational._kl import (
    gaussian_kl,
    gaussian_kl_std,
    gaussian_kl_std_vjp,
    gaussian_kl_vjp,
    kl_divergence,
    kl_shared_covariance,
    kl_shared_covariance_vjp,
    standard_normal_kl_and_vjp,
    standard_normal_kl_std,
)


@pytest.mark.parametrize("prior_var", [1.0, 2.5])
def test_std_and_variance_parametrisations_agree(rng, prior_var):
    mu = rng.standard_normal((6, 3))
    sigma = 0.2 + rng.random((6, 3))
    assert gaussian_kl_std(mu, sigma, prior_var) == pytest.approx(
        gaussian_kl(mu, sigma ** 2, prior_var=prior_var), rel=1e-13)
    np.testing.assert_allclose(gaussian_kl_std(mu, sigma, prior_var, per_row=True),
                               gaussian_kl(mu, sigma ** 2, prior_var=prior_var, per_row=True))
    # one dimension against the textbook closed form
    m, s, v = 0.7, 0.4, prior_var
    ref = 0.5 * (np.log(v / s ** 2) + (s ** 2 + m ** 2) / v - 1.0)
    assert gaussian_kl_std(np.array([[m]]), np.array([[s]]), v) == pytest.approx(ref)


@pytest.mark.parametrize("prior_var", [1.0, 2.5])
def test_std_kl_vjp(rng, prior_var):
    inputs = {"mu": rng.standard_normal((5, 3)), "sigma": 0.2 + rng.random((5, 3))}

    def backward(w, mu, sigma):
        g_mu, g_sigma = gaussian_kl_std_vjp(mu, sigma, prior_var)
        return {"mu": w * g_mu, "sigma": w * g_sigma}

    check_vjp(lambda mu, sigma: np.array(gaussian_kl_std(mu, sigma, prior_var)), backward,
              inputs, rng, rtol=1e-6)


def test_variance_kl_vjp_and_fast_path(rng):
    inputs = {"mu": rng.standard_normal((5, 3)), "S": 0.1 + rng.random((5, 3))}

    def backward(w, mu, S):
        g_mu, g_S = gaussian_kl_vjp(mu, S, prior_mean=0.3, prior_var=1.7)
        return {"mu": w * g_mu, "S": w * g_S}

    check_vjp(lambda mu, S: np.array(gaussian_kl(mu, S, 0.3, 1.7)), backward, inputs, rng,
              rtol=1e-6)
    kl, dmu, dS = standard_normal_kl_and_vjp(inputs["mu"], inputs["S"])
    assert kl == pytest.approx(gaussian_kl(inputs["mu"], inputs["S"]))
    for got, want in zip((dmu, dS), gaussian_kl_vjp(inputs["mu"], inputs["S"]), strict=True):
        np.testing.assert_allclose(got, want)


def test_standard_normal_std_form_is_the_std_kl(rng):
    mu, sigma = rng.standard_normal((6, 3)), 0.2 + rng.random((6, 3))
    assert standard_normal_kl_std(mu, sigma) == pytest.approx(gaussian_kl_std(mu, sigma),
                                                              rel=1e-13)


def _shared_problem(rng, M=4, D=3):
    A = rng.standard_normal((M, M))
    K = A @ A.T + M * np.eye(M)
    L_q = np.tril(0.3 * rng.standard_normal((M, M)))
    L_q[np.diag_indices(M)] = 0.5 + rng.random(M)
    return K, rng.standard_normal((M, D)), L_q


def test_shared_covariance_kl_is_the_unwhitened_kl_of_repeated_columns(rng):
    K, mu, L_q = _shared_problem(rng)
    L_p = np.linalg.cholesky(K)
    ref = kl_divergence(mu, np.repeat(L_q[None], mu.shape[1], axis=0), L_p, whiten=False)[0]
    assert kl_shared_covariance(mu, L_q, L_p) == pytest.approx(ref, rel=1e-12)


def test_shared_covariance_kl_vjp(rng):
    K, mu, L_q = _shared_problem(rng)
    mask = np.tril(np.ones_like(L_q))

    def forward(mu, L_q):
        return np.array(kl_shared_covariance(mu, np.tril(L_q), np.linalg.cholesky(K)))

    def backward(w, mu, L_q):
        Kinv = np.linalg.inv(K)
        Lt = np.tril(L_q)
        _, dmu, dL = kl_shared_covariance_vjp(float(w), Kinv, Kinv @ mu, Lt @ Lt.T, Lt)
        return {"mu": dmu, "L_q": dL * mask}

    check_vjp(forward, backward, {"mu": mu, "L_q": L_q}, rng, rtol=1e-6)

    def forward_K(K):
        return np.array(kl_shared_covariance(mu, L_q, np.linalg.cholesky(0.5 * (K + K.T))))

    def backward_K(w, K):
        Kinv = np.linalg.inv(K)
        dK = kl_shared_covariance_vjp(float(w), Kinv, Kinv @ mu, L_q @ L_q.T, L_q)[0]
        return {"K": 0.5 * (dK + dK.T)}

    check_vjp(forward_K, backward_K, {"K": K}, rng, rtol=1e-6)
