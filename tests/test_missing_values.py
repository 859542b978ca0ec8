"""Missing values in the collapsed GPLVM bound and in UnscentedGPLVM (NaN = missing at random)."""

import numpy as np
import pytest

from sklearn_lvgp._core.params import ParamPacker
from sklearn_lvgp.bounds._collapsed import CollapsedPsiBound
from sklearn_lvgp.bounds._collapsed_masked import MaskedPsiBound, column_groups
from sklearn_lvgp.expectations import make_rule
from sklearn_lvgp.kernels import RBF, Matern32
from sklearn_lvgp.utils.gradcheck import check_grad


def _problem(seed=0, N=17, D=4, Q=2, M=5, missing=0.3):
    r = np.random.default_rng(seed)
    Y = r.standard_normal((N, D))
    Y[r.random((N, D)) < missing] = np.nan
    Y[3] = np.nan  # a row with every entry missing
    Y[:, 1] = np.where(np.isnan(Y[:, 0]), np.nan, np.nan_to_num(Y[:, 1], nan=0.7))  # columns 0, 1 share a pattern
    Y[0, :2] = 0.5
    return Y, r.standard_normal((N, Q)), r.uniform(0.1, 0.6, (N, Q)), r.standard_normal((M, Q))


def _kernel(name, Q=2):
    k = (RBF(length_scale=[0.9, 1.2]) if name == "analytic" else Matern32(length_scale=[1.0, 0.7]))
    k = k.initialize(Q, np.random.RandomState(0))
    return k, make_rule(name, k, Q)[1]


@pytest.mark.parametrize("rule_name", ["analytic", "unscented"])
def test_masked_bound_is_the_sum_of_column_bounds(rule_name):
    Y, mu, S, Z = _problem()
    kernel, rule = _kernel(rule_name)
    F, grads, post = MaskedPsiBound(Y, chunk_rows=4).evaluate(kernel, Z, mu, S, 0.3, rule)
    F_ref, dmu, dS = 0.0, np.zeros_like(mu), np.zeros_like(S)
    dZ, dtheta, dnoise = 0.0, 0.0, 0.0
    for d in range(Y.shape[1]):
        o = ~np.isnan(Y[:, d])
        f, g, _ = CollapsedPsiBound(Y[o, d:d + 1]).evaluate(kernel, Z, mu[o], S[o], 0.3, rule)
        F_ref += f
        dmu[o] += g["mu"]
        dS[o] += g["S"]
        dZ, dtheta, dnoise = dZ + g["Z"], dtheta + g["theta"], dnoise + g["noise"]
    np.testing.assert_allclose(F, F_ref, rtol=1e-10)
    for got, ref in [(grads["mu"], dmu), (grads["S"], dS), (grads["Z"], dZ),
                     (grads["theta"], dtheta), (grads["noise"], dnoise)]:
        np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-10)
    assert np.all(grads["mu"][3] == 0) and np.all(grads["S"][3] == 0)  # the empty row
    assert len(post.groups) == len(column_groups(~np.isnan(Y)).columns) < Y.shape[1]


def test_masked_bound_on_complete_data_is_the_collapsed_bound():
    Y, mu, S, Z = _problem(missing=0.0)
    Y = np.nan_to_num(Y, nan=0.25)
    kernel, rule = _kernel("analytic")
    F, g, _ = MaskedPsiBound(Y).evaluate(kernel, Z, mu, S, 0.3, rule)
    F0, g0, _ = CollapsedPsiBound(Y).evaluate(kernel, Z, mu, S, 0.3, rule)
    np.testing.assert_allclose(F, F0, rtol=1e-10)
    for k in ("mu", "S", "Z", "theta", "noise"):
        np.testing.assert_allclose(g[k], g0[k], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("rule_name", ["analytic", "unscented"])
def test_masked_elbo_gradient_blocks_match_finite_differences(rule_name):
    Y, mu, S, Z = _problem(seed=1)
    kernel, rule = _kernel(rule_name)
    bound = MaskedPsiBound(Y, chunk_rows=5)
    packer = ParamPacker([("mu", mu.shape), ("S", S.shape, "log"), ("Z", Z.shape),
                          ("theta", (kernel.n_theta,)), ("noise", (), "log")])

    def fun(flat):
        p = packer.unpack(flat)
        k = kernel.clone_with_theta(p["theta"])
        value, grads, _ = bound.elbo(k, p["Z"], p["mu"], p["S"], float(p["noise"]), rule)
        return value, packer.pack_grad(grads, p)

    x = packer.pack({"mu": mu, "S": S, "Z": Z, "theta": kernel.theta, "noise": 0.3})
    check_grad(fun, x, rtol=1e-5, blocks=packer)


def test_column_without_observations_is_refused():
    Y = np.ones((5, 3))
    Y[:, 1] = np.nan
    with pytest.raises(ValueError, match=r"Column\(s\) \[1\] of X have no observed value"):
        MaskedPsiBound(Y)
