"""LDGD's data terms through the chunk engine: equal to the one-piece pass, thread-proof, exact."""

import numpy as np
import pytest

from sklearn_lvgp._core.parallel import threads
from sklearn_lvgp.bounds._ldgd import ldgd_forward, ldgd_value_and_vjp, ldgd_vjp
from sklearn_lvgp.bounds._ldgd_objective import Globals
from sklearn_lvgp.expectations import unscented_rule
from sklearn_lvgp.kernels import RBF, Matern32

B, D, K, Q, M = 23, 4, 3, 2, 5


def _batch(seed=0, classify=True, per_row_nodes=False):
    r = np.random.default_rng(seed)
    kr = RBF(length_scale=[0.9, 1.2]).initialize(Q, np.random.RandomState(0))
    kc = Matern32(length_scale=[1.1, 0.8]).initialize(Q, np.random.RandomState(1))
    glob = Globals(kr, r.standard_normal((M, Q)), r.standard_normal((M, D)),
                   np.tril(0.3 * r.standard_normal((D, M, M))) + np.eye(M), 0.3 + r.random(D),
                   kc, r.standard_normal((M, Q)), r.standard_normal((M, K)),
                   np.tril(0.3 * r.standard_normal((K, M, M))) + np.eye(M))
    Yr = r.standard_normal((B, D))
    Yc = np.eye(K)[np.arange(B) % K] if classify else None
    mu, sigma = r.standard_normal((B, Q)), 0.3 + r.random((B, Q))
    if per_row_nodes:
        nodes, weights = r.standard_normal((B, 3, Q)), np.full(3, 1.0 / 3)
    else:
        rule = unscented_rule(Q)
        nodes, weights = rule.nodes, rule.weights
    return glob, Yr, Yc, mu, sigma, nodes, weights


KW = {"scale": 2.5, "factors": (0.9, 1.3, 1.1), "kl_factors": (0.5, 0.7)}
CASES = [(True, False), (True, True), (False, False)]


@pytest.mark.parametrize("classify,per_row_nodes", CASES)
@pytest.mark.parametrize("chunk_rows", [1, 7, B])
def test_chunked_ldgd_equals_one_piece(classify, per_row_nodes, chunk_rows):
    glob, Yr, Yc, mu, sigma, nodes, weights = _batch(classify=classify,
                                                     per_row_nodes=per_row_nodes)
    ref_value, cache = ldgd_forward(glob, Yr, Yc, mu, sigma, nodes, weights, **KW)
    ref = ldgd_vjp(cache)
    value, adj = ldgd_value_and_vjp(glob, Yr, Yc, mu, sigma, nodes, weights, **KW,
                                    chunk_rows=chunk_rows)
    assert value == pytest.approx(ref_value, rel=1e-10)
    for name, a, b in zip(ref._fields, adj, ref, strict=True):
        if b is None:
            assert a is None, name
        else:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * np.max(np.abs(b)),
                                       err_msg=name)


@pytest.mark.parametrize("classify,per_row_nodes", CASES[:2])
def test_chunked_ldgd_bit_identical_for_every_thread_count(classify, per_row_nodes):
    batch = _batch(seed=1, classify=classify, per_row_nodes=per_row_nodes)
    results = []
    for n_jobs in (1, 2, 3):
        with threads(n_jobs):
            results.append(ldgd_value_and_vjp(*batch, **KW, chunk_rows=4))
    for value, adj in results[1:]:
        assert value == results[0][0]
        for a, b in zip(adj, results[0][1], strict=True):
            if b is not None:
                np.testing.assert_array_equal(a, b)


def test_training_objective_gradient_through_chunks():
    """The LDGD training objective, rows in chunks of 3, against finite differences."""
    from sklearn_lvgp.bounds._ldgd_objective import preset_factors
    from sklearn_lvgp.bounds._ldgd_problem import TrainingProblem
    from sklearn_lvgp.utils.gradcheck import check_grad

    glob, Yr, Yc, mu, sigma, nodes, weights = _batch(seed=2)
    prob = TrainingProblem(Yr, Yc, glob.kernel_r, glob.kernel_c, M, M, Q,
                           (0.9, 1.3) + preset_factors("paper", D, K), None)
    prob.chunk_rows = 3
    x = prob.pack({"theta_r": glob.kernel_r.theta, "theta_c": glob.kernel_c.theta,
                   "Z_r": glob.Z_r, "Z_c": glob.Z_c, "qmu_r": glob.qmu_r, "qmu_c": glob.qmu_c,
                   "qsqrt_r": glob.qsqrt_r, "qsqrt_c": glob.qsqrt_c, "noise": glob.noise,
                   "mu": mu, "sigma": sigma})
    idx = np.arange(0, B, 2)
    with threads(2):
        check_grad(lambda v: prob.value_and_grad(v, idx, nodes, weights), x, rtol=1e-5)
