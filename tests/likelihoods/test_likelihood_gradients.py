"""Finite differences of every likelihood's variational expectation: the adjoints of ``mu``,
``var`` and of each free hyperparameter, judged block by block."""

import numpy as np
import pytest
from likelihood_cases import CASES, IDS

from sklearn_lvgp.likelihoods import Bernoulli, Gaussian, Ordinal, Softmax, StudentT
from sklearn_lvgp.likelihoods import _quadrature_numba as _nb
from sklearn_lvgp.likelihoods._bernoulli import (
    bernoulli_probit_expectation,
    bernoulli_probit_expectation_vjp,
)
from sklearn_lvgp.likelihoods._gaussian import gaussian_expectation, gaussian_expectation_vjp
from sklearn_lvgp.utils.gradcheck import check_grad


def _objective(lik, y, mu, var, weights):
    """``x = [mu, var, theta] -> (sum(weights * E log p), gradient)`` and its blocks."""
    n = mu.size
    blocks = {"mu": slice(0, n), "var": slice(n, 2 * n)}
    i = 2 * n
    for h in lik.hyperparameters:
        if not h.fixed:
            blocks[h.name] = slice(i, i + h.n_elements)
            i += h.n_elements

    def fun(x):
        m, v = x[:n].reshape(mu.shape), x[n:2 * n].reshape(var.shape)
        current = lik.clone_with_theta(x[2 * n:])
        values, cache = current.variational_expectation_cached(y, m, v)
        adj = current.variational_expectation_vjp_cached(weights, cache)
        grad = np.concatenate([adj.mu.ravel(), adj.var.ravel(), adj.theta])
        return float(np.sum(weights * values)), grad

    return fun, np.concatenate([mu.ravel(), var.ravel(), lik.theta]), blocks


@pytest.mark.parametrize(("name", "factory", "make_data"), CASES, ids=IDS)
def test_expectation_gradients(name, factory, make_data, rng):
    lik = factory()
    y, mu, var = make_data(rng)
    weights = rng.standard_normal(lik.variational_expectation(y, mu, var).shape)
    fun, x0, blocks = _objective(lik, y, mu, var, weights)
    expected = {"mu", "var"} | {h.name for h in lik.hyperparameters if not h.fixed}
    assert set(blocks) == expected
    check_grad(fun, x0, blocks=blocks, rtol=1e-6)


@pytest.mark.parametrize(("name", "factory", "make_data"), CASES, ids=IDS)
def test_vjp_is_linear_in_the_upstream_adjoint(name, factory, make_data, rng):
    lik = factory()
    y, mu, var = make_data(rng)
    one = lik.variational_expectation_vjp(1.0, y, mu, var)
    w = rng.standard_normal(lik.variational_expectation(y, mu, var).shape)
    adj = lik.variational_expectation_vjp(w, y, mu, var)
    wb = w if w.ndim == mu.ndim else w[:, None]
    np.testing.assert_allclose(adj.mu, wb * one.mu, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(adj.var, wb * one.var, rtol=1e-12, atol=1e-14)
    assert adj.theta.shape == (lik.n_theta,)


def test_gaussian_object_is_the_closed_form_function(rng):
    y, mu, var = rng.standard_normal((3, 4, 2))
    var = np.abs(var)
    lik = Gaussian(noise_variance=0.4)
    np.testing.assert_array_equal(lik.variational_expectation(y, mu, var),
                                  gaussian_expectation(y, mu, var, 0.4))
    adj = lik.variational_expectation_vjp(1.0, y, mu, var)
    ref = gaussian_expectation_vjp(1.0, y, mu, var, 0.4)
    np.testing.assert_array_equal(adj.mu, ref.mu)
    np.testing.assert_array_equal(adj.var, ref.var)
    np.testing.assert_allclose(adj.theta, [ref.noise_variance * 0.4], rtol=1e-15)


def test_bernoulli_probit_object_is_the_ldgd_function(rng):
    mu = rng.standard_normal((5, 1))
    var = rng.uniform(0.1, 1.0, (5, 1))
    y = (rng.random((5, 1)) < 0.5).astype(float)
    values, cache = bernoulli_probit_expectation(y, mu, var)
    np.testing.assert_array_equal(Bernoulli().variational_expectation(y, mu, var), values)
    dmu, dvar = bernoulli_probit_expectation_vjp(np.ones_like(y), cache)
    adj = Bernoulli().variational_expectation_vjp(1.0, y, mu, var)
    np.testing.assert_array_equal(adj.mu, dmu)
    np.testing.assert_array_equal(adj.var, dvar)


@pytest.mark.parametrize("factory", [
    lambda: StudentT(df=3.0, scale=0.5),
    lambda: Ordinal(bin_edges=[-0.5, 0.5], scale=0.3),
    lambda: Bernoulli(link="logit"),
], ids=["student_t", "ordinal", "bernoulli_logit"])
def test_zero_variance_is_the_log_density_at_the_mean(factory, rng):
    lik = factory()
    mu = rng.normal(0, 1, (4, 1))
    y = np.zeros((4, 1)) if not lik.is_classification else np.array([[0], [1], [2], [1]])
    if isinstance(lik, Bernoulli):
        y = np.array([[0.0], [1.0], [1.0], [0.0]])
    var = np.zeros_like(mu)
    np.testing.assert_allclose(lik.variational_expectation(y, mu, var),
                               lik.predict_log_density(y, mu, var), rtol=1e-12)
    assert np.all(lik.variational_expectation_vjp(1.0, y, mu, var).var == 0)


def test_ordinal_tails_stay_finite():
    """Far in the tails ``Phi(a) - Phi(b)`` underflows; the log difference does not."""
    lik = Ordinal(bin_edges=[-1.0, 1.0], scale=0.1)
    mu = np.array([[40.0], [-40.0], [0.0]])
    var = np.full((3, 1), 1e-4)
    y = np.array([[0], [2], [1]])
    values = lik.variational_expectation(y, mu, var)
    adj = lik.variational_expectation_vjp(1.0, y, mu, var)
    assert np.all(np.isfinite(values)) and np.all(np.isfinite(adj.mu))
    assert values[0, 0] < -1e4 and abs(values[2, 0]) < 1e-6
    assert np.all(np.isfinite(lik.predict_log_density(y, mu, var)))


def test_serial_and_parallel_twins_agree_bit_for_bit(rng):
    """Each loop writes only its own entries: the parallel twins return the serial bits."""
    n = 3000
    y, mu = rng.standard_normal((2, n))
    var = rng.uniform(0.1, 1.0, n)
    x, w = np.polynomial.hermite_e.hermegauss(20)
    w = w / w.sum()
    params = StudentT(df=3.0, scale=0.5)._node_params()[0]
    outs = []
    for twin in (_nb.gh_expectation.serial, _nb.gh_expectation.parallel):
        out = (np.empty(n), np.empty(n), np.empty(n), np.empty((n, 3)))
        twin(_nb.STUDENT_T, y, mu, var, params, np.zeros(0), x, w, *out)
        outs.append(out)
    for a, b in zip(*outs, strict=True):
        np.testing.assert_array_equal(a, b)
    yk = rng.integers(0, 4, 2000)
    muk = rng.standard_normal((2000, 4))
    sdk = rng.uniform(0.3, 1.0, (2000, 4))
    outs = []
    for twin in (_nb.robust_max_prob.serial, _nb.robust_max_prob.parallel):
        out = (np.empty(2000), np.empty((2000, 4)), np.empty((2000, 4)))
        twin(yk, muk, sdk, x, w, *out)
        outs.append(out)
    for a, b in zip(*outs, strict=True):
        np.testing.assert_array_equal(a, b)
    yk = rng.integers(0, 4, 500)
    muk = rng.standard_normal((500, 4))
    sdk = rng.uniform(0.3, 1.0, (500, 4))
    eps = Softmax()._eps(4)
    outs = []
    for twin in (_nb.softmax_expectation.serial, _nb.softmax_expectation.parallel):
        out = (np.empty(500), np.empty((500, 4)), np.empty((500, 4)))
        twin(yk, muk, sdk, eps, *out)
        outs.append(out)
    for a, b in zip(*outs, strict=True):
        np.testing.assert_array_equal(a, b)
