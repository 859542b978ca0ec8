"""The μ + σ ⊙ ξ expansion of every point-set rule and its VJP (one home: ``_psi._rules``)."""

import numpy as np
import pytest

from sklearn_lvgp.expectations._rules import expand_points, expand_points_vjp, unscented_rule
from sklearn_lvgp.utils.gradcheck import check_vjp


@pytest.mark.parametrize("shared", [True, False])
def test_expand_points_vjp(rng, shared):
    N, K, Q = 5, 4, 3
    nodes = rng.standard_normal((K, Q) if shared else (N, K, Q))
    inputs = {"mu": rng.standard_normal((N, Q)), "sd": 0.2 + rng.random((N, Q))}

    def backward(w, mu, sd):
        dmu, dsd = expand_points_vjp(w, nodes)
        return {"mu": dmu, "sd": dsd}

    check_vjp(lambda mu, sd: expand_points(mu, sd, nodes), backward, inputs, rng, rtol=1e-6)


def test_expanded_unscented_points_have_the_gaussians_moments(rng):
    mu, sd = rng.standard_normal((6, 2)), 0.1 + rng.random((6, 2))
    rule = unscented_rule(2)
    x = expand_points(mu, sd, rule.nodes)
    np.testing.assert_allclose(np.einsum("k,nkq->nq", rule.weights, x), mu)
    np.testing.assert_allclose(np.einsum("k,nkq->nq", rule.weights, (x - mu[:, None]) ** 2),
                               sd ** 2)
