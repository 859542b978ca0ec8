"""DeepGP with a likelihood object in the last layer, and natural-gradient steps for a
non-conjugate likelihood (Salimbeni 2020, ch. 3)."""

import numpy as np
import pytest

from sklearn_lvgp import DeepGP
from sklearn_lvgp.bounds._dsvi_init import build_model, initial_layers
from sklearn_lvgp.likelihoods import Bernoulli, Beta, Gaussian, Poisson, StudentT
from sklearn_lvgp.variational import tril_unpack


def _problem(likelihood, n_layers=1, expectation="monte_carlo", seed=0, n=40):
    r = np.random.default_rng(seed)
    X = r.uniform(-2, 2, (n, 2))
    f = np.sin(X[:, :1]) + 0.3 * X[:, 1:]
    y = f + 0.1 * r.standard_normal(f.shape)
    if isinstance(likelihood, Bernoulli):
        y = (y > 0).astype(float)
    dims = [2] + [2] * (n_layers - 1) + [1]
    rs = np.random.RandomState(seed)
    initial = initial_layers(X, dims, [None] * n_layers, 6, True, 1e-6, 0, rs)
    params = {"n_inducing": 6, "whiten": True, "jitter": 1e-6, "expectation": expectation,
              "positive_transform": "softplus", "noise_variance_init": 0.3,
              "likelihood": likelihood}
    model, x0 = build_model(initial, dims, params, None, rs)
    return model, x0, X, y


def _q(model, x):
    p = model.packer.unpack(x)
    last = model.n_layers - 1
    return p[f"q_mu{last}"], tril_unpack(p[f"q_sqrt{last}"], model.M)


def test_gaussian_object_matches_the_noise_path():
    """The bound of a Gaussian likelihood object equals the default noise path's."""
    model_g, x_g, X, y = _problem(Gaussian(noise_variance=0.3))
    model_n, x_n, _, _ = _problem(None)
    f_g, _ = model_g.elbo(x_g, X, y, 1.0, 1)
    f_n, _ = model_n.elbo(x_n, X, y, 1.0, 1)
    assert f_g == pytest.approx(f_n, rel=1e-12)


@pytest.mark.parametrize("n_layers, expectation", [(1, "monte_carlo"), (2, "unscented")])
def test_generic_natgrad_gamma_one_is_the_gaussian_closed_form(n_layers, expectation):
    """With a Gaussian likelihood object, the generic step (gradients of the expected
    log-likelihood in q(u)'s expectation parameters) at γ = 1 is the closed-form optimum."""
    model_g, x_g, X, y = _problem(Gaussian(noise_variance=0.3), n_layers, expectation)
    model_n, x_n, _, _ = _problem(None, n_layers, expectation)
    # move q(u) away from the prior first: the closed form does not depend on it
    x_g = model_g.natgrad(x_g, X, y, 1.0, 1, 0.3, None)
    x_n = model_n.natgrad(x_n, X, y, 1.0, 1, 0.3, None)
    for a, b in zip(_q(model_g, x_g), _q(model_n, x_n), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)
    x1_g = model_g.natgrad(x_g, X, y, 1.0, 1, 1.0, None)
    x1_n = model_n.natgrad(x_n, X, y, 1.0, 1, 1.0, None)
    for a, b in zip(_q(model_g, x1_g), _q(model_n, x1_n), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)
    # and γ = 1 is a fixed point (the optimum of the bound in q(u))
    x2_g = model_g.natgrad(x1_g, X, y, 1.0, 1, 1.0, None)
    for a, b in zip(_q(model_g, x1_g), _q(model_g, x2_g), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("likelihood", [Bernoulli(), StudentT(df=4.0, scale=0.3),
                                        Poisson()], ids=["bernoulli", "student-t", "poisson"])
def test_small_natgrad_steps_increase_the_bound(likelihood):
    """Repeated small steps on a non-conjugate likelihood increase the (deterministic) bound."""
    model, x, X, y = _problem(likelihood)
    if isinstance(likelihood, Poisson):
        y = np.floor(np.exp(y))
    values = [model.elbo(x, X, y, 1.0, 1)[0]]
    for _ in range(15):
        x = model.natgrad(x, X, y, 1.0, 1, 0.1, None)
        values.append(model.elbo(x, X, y, 1.0, 1)[0])
    assert np.all(np.diff(values) > 0), values


@pytest.mark.parametrize("likelihood, make_y", [
    (StudentT(scale=0.3), lambda f, r: f + 0.1 * r.standard_normal(f.shape)),
    (Poisson(), lambda f, r: r.poisson(np.exp(f)).astype(float)),
    (Beta(scale=10.0), lambda f, r: np.clip(1 / (1 + np.exp(-f)), 0.02, 0.98)),
], ids=["student-t", "poisson", "beta"])
def test_deep_gp_with_a_likelihood_fits_and_predicts(likelihood, make_y):
    r = np.random.RandomState(0)
    X = r.uniform(-2, 2, (80, 1))
    y = make_y(np.sin(2 * X[:, 0]), r)
    m = DeepGP(n_layers=2, n_inducing=10, max_iter=150, random_state=0,
               likelihood=likelihood, n_predict_samples=20).fit(X, y)
    mean, std = m.predict(X, return_std=True)
    assert mean.shape == std.shape == (80,)
    assert np.all(np.isfinite(mean)) and np.all(std > 0)
    assert np.all(np.isfinite(m.predict_log_density(X, y)))
    assert type(m.likelihood_) is type(likelihood) and m.noise_variance_ is None
    assert np.isfinite(m.elbo_)


def test_student_t_is_robust_to_outliers():
    r = np.random.RandomState(1)
    X = r.uniform(-2, 2, (150, 1))
    clean = np.sin(2 * X[:, 0])
    y = clean + 0.05 * r.randn(150)
    y[:8] += 10.0
    kw = dict(n_layers=1, n_inducing=15, max_iter=400, random_state=0)
    rmse = {}
    for name, lik in (("gauss", None), ("t", StudentT(scale=0.3))):
        pred = DeepGP(likelihood=lik, **kw).fit(X, y).predict(X)
        rmse[name] = np.sqrt(np.mean((pred - clean) ** 2))
    assert rmse["t"] < 0.5 * rmse["gauss"], rmse


def test_natgrad_with_a_likelihood_trains():
    r = np.random.RandomState(2)
    X = r.uniform(-2, 2, (100, 1))
    y = np.sin(2 * X[:, 0]) + 0.05 * r.randn(100)
    m = DeepGP(n_layers=2, n_inducing=10, max_iter=120, random_state=0,
               likelihood=StudentT(scale=0.3), natgrad_gamma=(1e-3, 0.1, 20)).fit(X, y)
    assert m.elbo_history_[-1] > m.elbo_history_[0]


@pytest.mark.parametrize("kwargs, match", [
    ({"likelihood": Bernoulli()}, "DeepGPClassifier"),
    ({"likelihood": "t"}, "regression likelihood"),
    ({"likelihood": StudentT(), "latent_dim": 1},
     r"latent_dim=1 \(latent covariates\) needs the default Gaussian likelihood "
     r"\(likelihood=None\), got likelihood=StudentT"),
    ({"likelihood": Poisson(), "latent_dim": 2, "inference": "iwvi"},
     r"latent_dim=2 .*likelihood=None.*likelihood=Poisson"),
])
def test_likelihood_errors(kwargs, match):
    X = np.random.RandomState(0).randn(20, 1)
    with pytest.raises(ValueError, match=match):
        DeepGP(n_inducing=5, max_iter=2, **kwargs).fit(X, X[:, 0])


def test_gaussian_only_methods_raise_with_a_likelihood():
    X = np.random.RandomState(0).randn(20, 1)
    m = DeepGP(n_inducing=5, max_iter=2, likelihood=StudentT()).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="Gaussian likelihood"):
        m.sample_y(X)
    with pytest.raises(ValueError, match="Gaussian likelihood"):
        m.predict(X, return_cov=True)
    with pytest.raises(ValueError, match=r"method='kde' .*likelihood=None.*not StudentT"):
        m.predict_log_density(X, X[:, 0], method="kde")


@pytest.mark.parametrize("natgrad_gamma", [None, 0.1], ids=["adam", "ngd"])
def test_dask_fit_with_a_likelihood_equals_in_memory(client, natgrad_gamma):
    """A likelihood object's data term and natural-gradient sums on the partitions holding a
    minibatch's rows: the same fit as in memory, up to rounding."""
    da = pytest.importorskip("dask.array")
    r = np.random.default_rng(3)
    X = r.uniform(-2, 2, (300, 3))
    y = np.sin(X[:, 0]) + 0.1 * r.standard_normal(300)
    kw = {"n_layers": 2, "n_inducing": 8, "max_iter": 12, "batch_size": 64, "random_state": 0,
          "likelihood": StudentT(scale=0.3), "natgrad_gamma": natgrad_gamma}
    mem = DeepGP(**kw).fit(X, y)
    dsk = DeepGP(**kw).fit(da.from_array(X, chunks=(75, 3)), da.from_array(y, chunks=75))
    np.testing.assert_allclose(dsk._x, mem._x, rtol=1e-8, atol=1e-8 * np.max(np.abs(mem._x)))
    np.testing.assert_allclose(dsk.elbo_history_, mem.elbo_history_, rtol=1e-8)
