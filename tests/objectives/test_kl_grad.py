"""The package's one Gaussian KL (both parametrisations): values and finite-difference VJPs."""

import numpy as np
import pytest

from sklearn_lvgp.utils.gradcheck import check_vjp
from sklearn_lvgp.variational._kl_diagonal import (
    gaussian_kl,
    gaussian_kl_std,
    gaussian_kl_std_vjp,
    gaussian_kl_vjp,
    standard_normal_kl_and_vjp,
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
