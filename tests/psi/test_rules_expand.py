"""The reparameterisation μ + σ ⊙ ξ, its expansion over every point-set rule and their VJPs
(one home: ``expectations._rules``)."""

import numpy as np
import pytest

from sklearn_lvgp.expectations._rules import (
    expand_points,
    expand_points_vjp,
    reparameterise,
    reparameterise_vjp,
    unscented_rule,
)
from sklearn_lvgp.utils.gradcheck import check_vjp


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("variance", [False, True])
def test_expand_points_vjp(rng, shared, variance):
    """Adjoints of the means and of the standard deviations (or of the variances)."""
    N, K, Q = 5, 4, 3
    nodes = rng.standard_normal((K, Q) if shared else (N, K, Q))
    inputs = {"mu": rng.standard_normal((N, Q)), "s": 0.2 + rng.random((N, Q))}

    def sd(s):
        return np.sqrt(s) if variance else s

    def backward(w, mu, s):
        dmu, ds = expand_points_vjp(w, nodes, sd(s) if variance else None)
        return {"mu": dmu, "s": ds}

    check_vjp(lambda mu, s: expand_points(mu, sd(s), nodes), backward, inputs, rng, rtol=1e-6)


def test_reparameterise_vjp(rng):
    eps = rng.standard_normal((6, 2))
    inputs = {"mu": rng.standard_normal((6, 2)), "sd": 0.2 + rng.random((6, 2))}

    def backward(w, mu, sd):
        dmu, dsd = reparameterise_vjp(w, eps)
        return {"mu": dmu, "sd": dsd}

    check_vjp(lambda mu, sd: reparameterise(mu, sd, eps), backward, inputs, rng, rtol=1e-6)


def test_variance_adjoint_of_a_point_mass_is_zero():
    dmu, dvar = reparameterise_vjp(np.ones(3), np.ones(3), np.array([0.0, 1.0, 2.0]))
    np.testing.assert_array_equal(dmu, np.ones(3))
    np.testing.assert_array_equal(dvar, [0.0, 0.5, 0.25])


def test_expanded_unscented_points_have_the_gaussians_moments(rng):
    mu, sd = rng.standard_normal((6, 2)), 0.1 + rng.random((6, 2))
    rule = unscented_rule(2)
    x = expand_points(mu, sd, rule.nodes)
    np.testing.assert_allclose(np.einsum("k,nkq->nq", rule.weights, x), mu)
    np.testing.assert_allclose(np.einsum("k,nkq->nq", rule.weights, (x - mu[:, None]) ** 2),
                               sd ** 2)
