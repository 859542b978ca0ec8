"""DeepGP: exact identities, bound gradients, small reproductions (diabetes and the step function
at reduced size), bad input, reproducibility; UCI reproduction (Salimbeni 2020, Fig. 2.4 protocol)
under ``-m slow``.
"""

import warnings

import numpy as np
import pytest
from reference import diabetes_split, exact_gp_log_density  # tests/ is on sys.path
from scipy.special import logsumexp
from scipy.stats import norm
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF as SkRBF
from sklearn.gaussian_process.kernels import ConstantKernel, WhiteKernel

from sklearn_lvgp import DeepGP, SparseGPRegressor
from sklearn_lvgp._core.linalg import JitterWarning
from sklearn_lvgp._core.parallel import threads
from sklearn_lvgp.datasets import uci_hl_splits
from sklearn_lvgp.kernels import RBF
from sklearn_lvgp.optim._adam import DivergenceError, run_adam
from sklearn_lvgp.utils.gradcheck import check_grad
from sklearn_lvgp.variational import IdentityMean, tril_pack, tril_unpack


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """Direct calls of the bound run outside ``fit``'s thread context: hold BLAS at one thread."""
    with threads(1):
        yield


def _toy(n=20, d=3, seed=0):
    rs = np.random.RandomState(seed)
    X = rs.randn(n, d)
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.1 * rs.randn(n)
    return X, y


def _fitted(X, y, **kw):
    params = dict(n_inducing=5, max_iter=3, random_state=0)
    params.update(kw)
    return DeepGP(**params).fit(X, y)


def _standardised(m, X, y):
    Xs = (X - m.X_mean_) / m.X_scale_
    Ys = ((np.reshape(y, (len(y), -1))) - m.y_mean_) / m.y_scale_
    return Xs, Ys


def _perturbed(m, rng, scale=0.1):
    """The fitted flat parameters with a random perturbation (lower triangles kept lower)."""
    return m._x + scale * rng.standard_normal(m._x.size)


# ------------------------------------------------------------------------------ identities
def _dense_svgp_elbo(kernel, Z, q_mu, q_sqrt, X, Y, noise, whiten, rel_jitter):
    """Independent dense SVGP bound in u-space: sum E log N(y|f, s2) - KL(N(m, S) || N(0, Kuu))."""
    Kzz = kernel.K(Z)
    Kuu = Kzz + rel_jitter * np.mean(np.diag(Kzz)) * np.eye(Z.shape[0])
    Lu = np.linalg.cholesky(Kuu)
    Kuf = kernel.K(Z, X)
    Kff = kernel.K(X)
    total = 0.0
    M = Z.shape[0]
    for d in range(Y.shape[1]):
        Lq = np.tril(q_sqrt[d])
        m, S = (Lu @ q_mu[:, d], Lu @ Lq @ Lq.T @ Lu.T) if whiten else (q_mu[:, d], Lq @ Lq.T)
        Kinv = np.linalg.inv(Kuu)
        mean = Kuf.T @ Kinv @ m
        cov = Kff - Kuf.T @ Kinv @ Kuf + Kuf.T @ Kinv @ S @ Kinv @ Kuf
        var = np.diag(cov)
        ell = np.sum(-0.5 * np.log(2 * np.pi * noise) - 0.5 * ((Y[:, d] - mean) ** 2 + var)
                     / noise)
        kl = 0.5 * (np.trace(Kinv @ S) + m @ Kinv @ m - M + np.linalg.slogdet(Kuu)[1]
                    - np.linalg.slogdet(S)[1])
        total += ell - kl
    return total


@pytest.mark.parametrize("whiten", [True, False])
def test_single_layer_equals_dense_svgp(rng, whiten):
    """n_layers=1 is deterministic and equals a dense-numpy SVGP bound."""
    X, y = _toy()
    Y2 = np.column_stack([y, np.cos(X[:, 2])])
    m = _fitted(X, Y2, n_layers=1, whiten=whiten)
    model = m._model
    x = _perturbed(m, rng)
    Xs, Ys = _standardised(m, X, Y2)
    f1, _ = model.elbo(x, Xs, Ys, 1.0, 7, np.random.RandomState(1))
    f2, _ = model.elbo(x, Xs, Ys, 1.0, 7, np.random.RandomState(2))
    assert f1 == f2  # no sampling with one layer
    layers, noise, _ = model.unpack(x)
    lay = layers[0]
    dense = _dense_svgp_elbo(lay.kernel, lay.Z, lay.q_mu, lay.q_sqrt, Xs, Ys, noise, whiten,
                             m.jitter)
    assert abs(f1 - dense) <= 1e-10 * abs(dense)


def _unwhiten(model_w, model_u, x_w):
    """Map whitened parameters to the unwhitened parameterisation, layer by layer."""
    from sklearn_lvgp.variational import prior_factor

    layers, _, values = model_w.unpack(x_w)
    x_u = x_w.copy()
    for ell, lay in enumerate(layers):
        Lu = prior_factor(lay.kernel, lay.Z, model_w.jitter).Lu
        x_u[model_u.packer.slice(f"q_mu{ell}")] = (Lu @ lay.q_mu).ravel()
        x_u[model_u.packer.slice(f"q_sqrt{ell}")] = tril_pack(
            np.einsum("ij,djk->dik", Lu, lay.q_sqrt)).ravel()
    return x_u


@pytest.mark.parametrize("expectation", ["monte_carlo", "unscented"])
def test_whitened_equals_unwhitened_deep(rng, expectation):
    """Whitened ≡ unwhitened for a 3-layer model: the mapped parameters give the same bound."""
    X, y = _toy()
    mw = _fitted(X, y, n_layers=3, hidden_dims=2, whiten=True, expectation=expectation)
    mu_ = _fitted(X, y, n_layers=3, hidden_dims=2, whiten=False, expectation=expectation)
    x_w = _perturbed(mw, rng)
    x_u = _unwhiten(mw._model, mu_._model, x_w)
    Xs, Ys = _standardised(mw, X, y)
    eps = [rng.standard_normal((2 * 20, 2)) for _ in range(2)]
    fw, _ = mw._model.elbo(x_w, Xs, Ys, 1.0, 2, eps=eps)
    fu, _ = mu_._model.elbo(x_u, Xs, Ys, 1.0, 2, eps=eps)
    assert abs(fw - fu) < 1e-8


def test_titsias_optimum_with_z_equal_x_is_exact_gp(rng):
    """Z = X, one γ = 1 step (Salimbeni 2020, §3.4.1): the bound is the exact log marginal
    likelihood and the predictions are exact GP regression (sklearn, fixed kernel)."""
    X, y = _toy(n=25, d=2)
    m = DeepGP(n_layers=1, n_inducing=25, max_iter=1, jitter=1e-10, normalize_y=False,
               noise_variance_init=0.05, random_state=0).fit(X, y)
    model = m._model
    Xs, Ys = _standardised(m, X, y)
    x = m._x.copy()
    x[model.packer.slice("Z0")] = Xs.ravel()
    x = model.natgrad(x, Xs, Ys, 1.0, 1, 1.0, None)
    f, _ = model.elbo(x, Xs, Ys, 1.0, 1)
    layers, noise, _ = model.unpack(x)
    k = layers[0].kernel
    sk_kernel = (ConstantKernel(k.variance, "fixed") * SkRBF(k.length_scale, "fixed")
                 + WhiteKernel(noise, "fixed"))
    gpr = GaussianProcessRegressor(sk_kernel, optimizer=None, normalize_y=False).fit(Xs, y)
    assert abs(f - gpr.log_marginal_likelihood_value_) < 1e-5
    m._x = x
    mean, std = m.predict(X[:7], return_std=True)
    ref_mean, ref_std = gpr.predict(Xs[:7], return_std=True)
    np.testing.assert_allclose(mean, ref_mean, atol=1e-5)
    np.testing.assert_allclose(std, ref_std, atol=1e-5)


def _switch_off_inner(m):
    """Inner layer: tiny kernel variance, q_mu = 0, q_sqrt = I (whitened), identity mean."""
    model = m._model
    M = model.M
    k0 = model.unpack(m._x)[0][0].kernel
    k0.variance = 1e-12
    x = model.with_theta(m._x, 0, k0.theta)
    x[model.packer.slice("q_mu0")] = 0.0
    D = model.dims[1]
    x[model.packer.slice("q_sqrt0")] = tril_pack(np.repeat(np.eye(M)[None], D, 0)).ravel()
    return x


def test_switched_off_inner_layer_equals_svgp(rng):
    """A 2-layer DGP whose inner layer is the identity equals the 1-layer SVGP."""
    X, y = _toy()
    m2 = _fitted(X, y, n_layers=2, hidden_dims=3, n_samples=1)
    assert isinstance(m2._model.means[0], IdentityMean)
    m1 = _fitted(X, y, n_layers=1)
    x2 = _switch_off_inner(m2)
    x1 = m1._x.copy()
    for name in ("q_mu0", "q_sqrt0", "Z0", "pos0", "free0"):
        x1[m1._model.packer.slice(name)] = x2[m2._model.packer.slice(name.replace("0", "1"))]
    x1[m1._model.packer.slice("noise_variance")] = x2[m2._model.packer.slice("noise_variance")]
    Xs, Ys = _standardised(m2, X, y)
    f1, _ = m1._model.elbo(x1, Xs, Ys, 1.0, 1)
    # with eps = 0 the identity is exact; with random eps the samples still move by
    # sqrt(delta) = 1e-3 (the jitter under the root of Salimbeni 2020, eq. 2.12), which changes
    # this bound by about 2e-5 of its value
    f0, _ = m2._model.elbo(x2, Xs, Ys, 1.0, 1, eps=[np.zeros((20, 3))])
    assert abs(f0 - f1) < 1e-8 * abs(f1)
    fr, _ = m2._model.elbo(x2, Xs, Ys, 1.0, 1, eps=[rng.standard_normal((20, 3))])
    assert abs(fr - f1) < 1e-4 * abs(f1)


def _bound_value(model, x, Xs, Ys, scale, S, rs):
    """Forward-only minibatch bound (eq. 2.19), for the many-draw statistical tests."""
    from sklearn_lvgp.likelihoods._gaussian import gaussian_expectation

    layers, noise, _ = model.unpack(x)
    mu, var, w, kl, _ = model.propagate(layers, Xs, S, rs)
    Yt = np.tile(Ys, (mu.shape[0] // Xs.shape[0], 1))
    return scale * float(w @ gaussian_expectation(Yt, mu, var, noise)[:, 0]) - kl


def test_minibatch_estimator_is_unbiased_and_variance_scales(rng):
    """Unbiased minibatch estimator (Salimbeni 2020, eq. 2.19): 2000 minibatch draws vs a
    full-batch S = 10^4 estimate; variance ∝ 1/S."""
    X, y = _toy(n=30, d=2)
    m = _fitted(X, y, n_layers=2, hidden_dims=2, n_inducing=4)
    model = m._model
    x = _perturbed(m, rng, 0.3)
    x[model.packer.slice("q_sqrt0")] = tril_pack(np.repeat(0.5 * np.eye(4)[None], 2, 0)).ravel()
    Xs, Ys = _standardised(m, X, y)
    rs = np.random.RandomState(0)
    draws = np.array([_bound_value(model, x, Xs[idx], Ys[idx], 3.0, 1, rs)
                      for idx in (rs.choice(30, 10, replace=False) for _ in range(2000))])
    full = _bound_value(model, x, Xs, Ys, 1.0, 10_000, rs)
    se = draws.std(ddof=1) / np.sqrt(draws.size)
    assert abs(draws.mean() - full) < 3 * se
    v1 = np.var([_bound_value(model, x, Xs, Ys, 1.0, 1, rs) for _ in range(400)], ddof=1)
    v16 = np.var([_bound_value(model, x, Xs, Ys, 1.0, 16, rs) for _ in range(400)], ddof=1)
    assert 10 <= v1 / v16 <= 25


def test_monte_carlo_matches_gauss_hermite_for_1d_hidden_layer(rng):
    """MC data term vs 100-point Gauss–Hermite over the hidden layer's noise."""
    from numpy.polynomial.hermite_e import hermegauss

    from sklearn_lvgp.likelihoods._gaussian import gaussian_expectation

    X, y = _toy(n=10, d=2)
    m = _fitted(X, y, n_layers=2, hidden_dims=1, n_inducing=4)
    model = m._model
    x = _perturbed(m, rng, 0.3)
    x[model.packer.slice("q_sqrt0")] = tril_pack(0.7 * np.eye(4)[None]).ravel()
    Xs, Ys = _standardised(m, X, y)
    nodes, w = hermegauss(100)
    w = w / w.sum()
    layers, noise, _ = model.unpack(x)

    def data_terms(S, **kw):
        mu, var, _, _, _ = model.propagate(layers, Xs, S, with_kl=False, **kw)
        return gaussian_expectation(np.tile(Ys, (S, 1)), mu, var, noise).reshape(S, 10).sum(1)

    gh = float(w @ data_terms(100, eps=[np.repeat(nodes, 10)[:, None]]))
    per_mc = data_terms(100_000, random_state=np.random.RandomState(3))
    se = per_mc.std(ddof=1) / np.sqrt(per_mc.size)
    assert se > 1e-4  # the hidden layer is really random
    assert abs(per_mc.mean() - gh) < 3 * se


# ------------------------------------------------------------------------- bound gradients
@pytest.mark.parametrize("n_layers,whiten,expectation,transform", [
    (2, True, "monte_carlo", "softplus"), (2, False, "monte_carlo", "log"),
    (2, True, "unscented", "log"), (2, False, "unscented", "softplus"),
    (3, True, "monte_carlo", "log"), (3, False, "monte_carlo", "softplus"),
    (3, True, "unscented", "softplus"), (3, False, "unscented", "log")])
def test_full_bound_gradient(rng, n_layers, whiten, expectation, transform):
    """Every parameter block of every layer and the noise, fixed eps and minibatch (c = N/|B|)."""
    X, y = _toy(n=12)
    m = _fitted(X, y, n_layers=n_layers, hidden_dims=2, n_inducing=4, whiten=whiten,
                expectation=expectation, n_samples=2, positive_transform=transform)
    model = m._model
    x = _perturbed(m, rng)
    Xs, Ys = _standardised(m, X, y)
    idx = np.array([1, 4, 5, 7, 9])
    eps = [rng.standard_normal((2 * 5, 2)) for _ in range(n_layers - 1)]
    check_grad(lambda z: model.elbo(z, Xs[idx], Ys[idx], 12 / 5, 2, eps=eps), x, rtol=1e-6,
               blocks=model.packer)


def test_full_bound_gradient_with_mixed_kernel_parameters(rng):
    """A kernel with both positive (softplus-mapped) and unconstrained hyperparameters."""
    from sklearn_lvgp.kernels import MLPKernel

    X, y = _toy(n=10, d=2)
    kernel = MLPKernel(hidden_units=3, output_units=2)
    m = _fitted(X, y, n_layers=2, hidden_dims=2, n_inducing=4, kernel=kernel)
    model = m._model
    assert model.pos_mask[0].sum() > 0 and (~model.pos_mask[0]).sum() > 0
    x = _perturbed(m, rng, 0.05)
    Xs, Ys = _standardised(m, X, y)
    eps = [rng.standard_normal((10, 2))]
    check_grad(lambda z: model.elbo(z, Xs, Ys, 1.0, 1, eps=eps), x, rtol=1e-6,
               blocks=model.packer)


def test_positive_transform_does_not_change_the_bound(rng):
    X, y = _toy()
    ms = _fitted(X, y, positive_transform="softplus")
    ml = _fitted(X, y, positive_transform="log")
    layers, noise, _ = ms._model.unpack(_perturbed(ms, rng))
    xs, xl = ms._model.pack(layers, noise), ml._model.pack(layers, noise)
    Xs, Ys = _standardised(ms, X, y)
    eps = [rng.standard_normal((20, 3))]
    assert ms._model.elbo(xs, Xs, Ys, 1.0, 1, eps=eps)[0] == pytest.approx(
        ml._model.elbo(xl, Xs, Ys, 1.0, 1, eps=eps)[0], rel=1e-12)


def test_natgrad_driver_step_matches_direct_update(rng):
    """The estimator's natgrad step on a 1-layer model, full batch, γ = 1, is a fixed point."""
    X, y = _toy(n=15, d=2)
    m = _fitted(X, y, n_layers=1)
    model = m._model
    Xs, Ys = _standardised(m, X, y)
    x1 = model.natgrad(m._x, Xs, Ys, 1.0, 1, 1.0, None)
    x2 = model.natgrad(x1, Xs, Ys, 1.0, 1, 1.0, None)
    f1, g1 = model.elbo(x1, Xs, Ys, 1.0, 1)
    f2, _ = model.elbo(x2, Xs, Ys, 1.0, 1)
    assert abs(f1 - f2) < 1e-10 * abs(f1)
    q = model.packer.slice("q_mu0")
    assert np.max(np.abs(g1[q])) < 1e-6


@pytest.mark.parametrize("expectation", ["monte_carlo", "unscented"])
@pytest.mark.parametrize("whiten", [True, False])
def test_deep_natgrad_gamma_one_is_optimal_for_fixed_samples(expectation, whiten):
    """Natural-gradient closed form (Salimbeni 2020, ch. 3) for a 2-layer model: with the samples
    (or sigma points) held fixed, one γ = 1 step maximises the bound over the last layer's q(u), so
    its gradient there vanishes."""
    X, y = _toy(n=15, d=2)
    m = _fitted(X, y, n_layers=2, hidden_dims=2, expectation=expectation, whiten=whiten)
    model = m._model
    Xs, Ys = _standardised(m, X, y)
    x = _perturbed(m, np.random.default_rng(0), 0.05)
    x1 = model.natgrad(x, Xs, Ys, 2.0, 3, 1.0, np.random.RandomState(5))
    f0, _ = model.elbo(x, Xs, Ys, 2.0, 3, np.random.RandomState(5))
    f1, g1 = model.elbo(x1, Xs, Ys, 2.0, 3, np.random.RandomState(5))
    assert f1 > f0
    for name in ("q_mu1", "q_sqrt1"):
        assert np.max(np.abs(g1[model.packer.slice(name)])) < 1e-6 * max(1.0, abs(f1))


# ----------------------------------------------------------------------------- prediction
def test_predict_log_density_is_logsumexp_over_paths_and_scale_equivariant():
    """predict_log_density is a logsumexp over the stored paths (Salimbeni 2020, eq. 2.21) in
    original units, and an affine change of y shifts it by -log|a|."""
    X, y = _toy()
    m = _fitted(X, y, n_layers=2, max_iter=20, n_predict_samples=13)
    mu, var, noise = m._components(X[:5])
    assert mu.shape == (13, 5, 1)
    mo = m.y_mean_ + m.y_scale_ * mu[..., 0]
    vo = m.y_scale_ ** 2 * (var[..., 0] + noise)
    direct = logsumexp(-0.5 * np.log(2 * np.pi * vo) - 0.5 * (y[:5] - mo) ** 2 / vo, axis=0)
    np.testing.assert_allclose(m.predict_log_density(X[:5], y[:5]), direct - np.log(13), rtol=1e-12)
    a, b = -3.5, 7.0
    m2 = _fitted(X, a * y + b, n_layers=2, max_iter=20, n_predict_samples=13)
    np.testing.assert_allclose(m2.predict_log_density(X, a * y + b),
                               m.predict_log_density(X, y) - np.log(abs(a)), rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(m2.predict(X), a * m.predict(X) + b, rtol=1e-8, atol=1e-8)


def test_predict_mixture_moments_and_sample_y():
    X, y = _toy()
    m = _fitted(X, y, n_layers=2, max_iter=50, n_predict_samples=40)
    mean, std = m.predict(X[:4], return_std=True)
    mu, var, noise = m._components(X[:4])
    mo = m.y_mean_ + m.y_scale_ * mu[..., 0]
    vo = m.y_scale_ ** 2 * (var[..., 0] + noise)
    np.testing.assert_allclose(mean, mo.mean(axis=0))
    np.testing.assert_allclose(std ** 2, np.mean(vo + mo ** 2, axis=0) - mo.mean(axis=0) ** 2)
    s = m.sample_y(X[:4], n_samples=4000, random_state=1)
    assert s.shape == (4, 4000)
    np.testing.assert_allclose(s.mean(axis=1), mean, atol=4 * std.max() / np.sqrt(4000) * 3)
    np.testing.assert_allclose(s.std(axis=1), std, rtol=0.1)


def test_multi_output_shapes():
    X, y = _toy()
    Y = np.column_stack([y, -y])
    m = _fitted(X, Y, n_layers=2, max_iter=5)
    assert m.predict(X).shape == (20, 2)
    assert m.predict(X, return_std=True)[1].shape == (20, 2)
    assert m.predict_log_density(X, Y).shape == (20,)
    assert m.sample_y(X, 3).shape == (20, 2, 3)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_unscented_prediction_is_deterministic_gaussian():
    X, y = _toy()
    m = _fitted(X, y, n_layers=3, hidden_dims=2, expectation="unscented", max_iter=20)
    mu, _, _ = m._components(X)
    assert mu.shape[0] == 1
    m2 = _fitted(X, y, n_layers=3, hidden_dims=2, expectation="unscented", max_iter=20,
                 optimizer="lbfgs")
    assert np.isfinite(m2.elbo_) and m2.elbo_ == pytest.approx(m2.elbo_history_[-1])


# ------------------------------------------------------------- reproducibility, streaming
def test_reproducible_and_thread_count_invariant():
    X, y = _toy()
    p1 = _fitted(X, y, max_iter=30, n_jobs=1).predict(X)
    p2 = _fitted(X, y, max_iter=30, n_jobs=1).predict(X)
    p3 = _fitted(X, y, max_iter=30, n_jobs=2).predict(X)
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_allclose(p1, p3, rtol=1e-10, atol=1e-12)


def test_warm_start_continues_and_partial_fit_streams():
    X, y = _toy(n=40)
    m = DeepGP(n_inducing=5, max_iter=20, random_state=0, warm_start=True).fit(X, y)
    x_first = m._x.copy()
    m.fit(X, y)
    assert m.n_iter_ == 40 and m.elbo_history_.shape == (40,)
    assert not np.array_equal(m._x, x_first)
    cold = DeepGP(n_inducing=5, max_iter=20, random_state=0).fit(X, y)
    np.testing.assert_array_equal(cold._x, x_first)  # a cold refit starts over
    m.set_params(n_layers=3).fit(X, y)  # a changed architecture cannot continue: starts over
    assert m.n_iter_ == 20 and len(m.layers_) == 3
    s = DeepGP(n_inducing=5, batch_size=10, learning_rate=0.05, random_state=0)
    s.partial_fit(X[:20], y[:20])
    assert s.n_iter_ == 2 and s.n_samples_seen_ == 20
    for _ in range(30):
        s.partial_fit(X[20:], y[20:])
    assert s.n_samples_seen_ == 620 and s.n_iter_ == 62
    assert s.score(X, y) > 0.3


def test_early_stopping_restores_best(rng):
    X, y = _toy(n=60)
    m = DeepGP(n_inducing=5, max_iter=3000, learning_rate=0.05, early_stopping=True,
               n_iter_no_change=2, random_state=0).fit(X, y)
    assert m.n_iter_ < 3000


def test_natgrad_interleave_keeps_last_q_out_of_adam():
    X, y = _toy(n=40)
    m = DeepGP(n_layers=2, n_inducing=5, max_iter=60, natgrad_gamma=(1e-3, 0.1, 10),
               random_state=0).fit(X, y)
    assert np.isfinite(m.elbo_)
    assert m.score(X, y) > 0.5


# ------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_rejects_non_finite(bad):
    X, y = _toy()
    Xb = X.copy()
    Xb[3, 1] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        DeepGP(n_inducing=5, max_iter=2).fit(Xb, y)
    yb = y.copy()
    yb[0] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        DeepGP(n_inducing=5, max_iter=2).fit(X, yb)
    m = _fitted(X, y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        m.predict(Xb)
    with pytest.raises(ValueError, match="NaN|infinity"):
        m.predict_log_density(X, yb)


def test_rejects_bad_shapes():
    X, y = _toy()
    with pytest.raises(ValueError):
        DeepGP(max_iter=2).fit(X[:, 0], y)
    with pytest.raises(ValueError, match="inconsistent"):
        DeepGP(max_iter=2).fit(X, y[:-1])
    m = _fitted(X, y)
    with pytest.raises(ValueError, match="features"):
        m.predict(X[:, :2])
    with pytest.raises(ValueError, match="shape"):
        m.predict_log_density(X, np.column_stack([y, y]))


@pytest.mark.parametrize("params,match", [
    ({"n_layers": 3, "hidden_dims": [2]}, "n_layers - 1 = 2 entries"),
    ({"learning_rate": 0.0}, "learning_rate must be > 0"),
    ({"learning_rate": -1.0}, "learning_rate must be > 0"),
    ({"natgrad_gamma": 1.5}, "natgrad_gamma"),
    ({"natgrad_gamma": (0.0, 0.1, 40)}, "gamma0 must be > 0"),
    ({"natgrad_gamma": (1e-4, 2.0, 40)}, r"gamma1 must be in \(0, 1\]"),
    ({"natgrad_gamma": (1e-4, 0.1, 0)}, "K must be >= 1"),
    ({"natgrad_gamma": (0.1, 0.2)}, r"\(gamma0, gamma1, K\)"),
    ({"optimizer": "lbfgs", "n_layers": 2}, "deterministic"),
    ({"expectation": "sigma"}, "expectation"),
    ({"kernel": [RBF()], "n_layers": 2}, "one per layer"),
])
def test_rejects_bad_parameters(params, match):
    X, y = _toy()
    with pytest.raises(ValueError, match=match):
        DeepGP(max_iter=2, **params).fit(X, y)


def test_batch_size_larger_than_data_is_clipped_to_full_batch():
    """Documented choice: batch_size > n_samples means the full batch (no error)."""
    X, y = _toy()
    a = _fitted(X, y, max_iter=10, batch_size=10_000).predict(X)
    b = _fitted(X, y, max_iter=10, batch_size=None).predict(X)
    np.testing.assert_array_equal(a, b)


def test_more_inducing_points_than_samples_is_refused():
    """As every estimator: k-means cannot place more inducing inputs than there are rows."""
    X, y = _toy(n=8)
    with pytest.raises(ValueError, match="DeepGP needs at least n_inducing=12 samples"):
        _fitted(X, y, n_layers=2, n_inducing=12, max_iter=20)
    with pytest.raises(ValueError, match="n_samples = 8"):
        DeepGP(n_inducing=12).partial_fit(X, y)


class _ExplodingRBF(RBF):
    """An RBF kernel whose cross-covariance turns NaN after a number of calls."""

    calls = 0

    def K_cached(self, X, Z=None):
        type(self).calls += 1
        K, cache = super().K_cached(X, Z)
        if type(self).calls > 12:
            K = K * np.nan
        return K, cache


def test_divergence_raises_naming_the_step():
    X, y = _toy()
    _ExplodingRBF.calls = 0
    with pytest.raises(DivergenceError, match=r"optimisation step \d+"):
        DeepGP(n_layers=1, kernel=_ExplodingRBF(length_scale=np.ones(3)), n_inducing=5,
               max_iter=50, random_state=0).fit(X, y)


def test_driver_divergence_message():
    calls = []

    def objective(x, idx):
        calls.append(1)
        f = np.nan if len(calls) == 3 else float(x @ x)
        return f, 2 * x

    with pytest.raises(DivergenceError, match="ELBO estimate is nan at optimisation step 3"):
        run_adam(objective, np.ones(3), n_data=5, batch_size=5, max_iter=10,
                 learning_rate=0.1, random_state=np.random.RandomState(0))


def test_driver_names_the_step_of_a_python_float_exception():
    def objective(x, idx):
        if objective.calls == 4:
            raise ZeroDivisionError("division by zero")
        objective.calls += 1
        return float(x @ x), 2 * x

    objective.calls = 0
    with pytest.raises(DivergenceError, match=r"a floating-point operation failed at "
                                              r"optimisation step 5 \(ZeroDivisionError"):
        run_adam(objective, np.ones(3), n_data=5, batch_size=5, max_iter=10,
                 learning_rate=0.1, random_state=np.random.RandomState(0))


def _wandering_objective(x, idx):
    # minimum at 0 in x[0]; x[1] drifts at a constant gradient, so the held-out score below
    # peaks mid-run (at x[1] = -1) and the last iterate is worse
    return float(x[0] ** 2 + x[1]), np.array([2 * x[0], 1.0])


def _peaked_score(x):
    return -float((x[1] + 1.0) ** 2)


@pytest.mark.parametrize("max_iter", [300, 250])  # last step is a check / is not
def test_run_adam_keeps_best_checked_state_when_max_iter_ends_the_run(max_iter):
    checks = []

    def validation(x):
        checks.append(x.copy())
        return _peaked_score(x)

    res = run_adam(_wandering_objective, np.array([0.0, 0.0]), n_data=4, batch_size=4,
                   max_iter=max_iter, learning_rate=0.01, random_state=np.random.RandomState(0),
                   validation=validation, n_iter_no_change=100)
    assert not res.stopped_early and res.n_iter == max_iter
    scores = [_peaked_score(c) for c in checks]
    assert len(checks) == 3  # steps 100, 200 (, 300), and the last iterate when off a check
    np.testing.assert_array_equal(res.x, checks[int(np.argmax(scores))])
    assert res.x[1] == pytest.approx(-1.0, abs=0.05)  # after ~100 steps of 0.01


def test_run_adam_keeps_last_iterate_when_it_scores_best():
    res = run_adam(_wandering_objective, np.array([0.0, 0.0]), n_data=4, batch_size=4,
                   max_iter=250, learning_rate=0.01, random_state=np.random.RandomState(0),
                   validation=lambda x: -float(x[1]), n_iter_no_change=100)
    assert res.x[1] == pytest.approx(-2.5, abs=0.05)


def test_tril_pack_roundtrip(rng):
    A = np.tril(rng.standard_normal((3, 4, 4)))
    np.testing.assert_array_equal(tril_unpack(tril_pack(A), 4), A)


# --------------------------------------------------------------- reproductions at reduced size
def _step_data(seed):
    rs = np.random.RandomState(seed)
    x = rs.uniform(0, 1, (50, 1))
    y = (x[:, 0] >= 0.5) + 0.01 * rs.randn(50)
    xt = rs.uniform(0, 1, (1000, 1))
    yt = (xt[:, 0] >= 0.5) + 0.01 * rs.randn(1000)
    return x, y, xt, yt


def _step_check(n_layers, seed, max_iter=2000):
    x, y, xt, yt = _step_data(seed)
    m = DeepGP(tol=None, n_layers=n_layers, n_inducing=25, kernel=RBF(length_scale=0.2),
               noise_variance_init=0.01, n_samples=10, max_iter=max_iter, batch_size=None,
               learning_rate=0.01, inner_layer_init="collapsed", random_state=seed).fit(x, y)
    ll = m.predict_log_density(xt, yt).mean()
    med = np.median(m.sample_y(np.array([[0.25], [0.75]]), 200, random_state=seed), axis=1)
    return ll, med


def test_step_function_reduced():
    """Step function at reduced size: one seed of DGP 2 (the full 10-seed table is the example)."""
    ll, med = _step_check(2, 0)
    assert ll >= 1.0  # protocol's target on the median over 10 seeds; exact GP reaches about -0.6
    assert abs(med[0]) < 0.05 and abs(med[1] - 1.0) < 0.05


def test_diabetes_sgp_reduced():
    """Diabetes at reduced size: split 0, SGP with M = 50 and 800 steps (learning rate 0.03
    instead of 0.01 to fit the budget) against the exact GP (ML-II)."""
    X, y, Xt, yt = diabetes_split(0)
    ll = DeepGP(tol=None, n_layers=1, n_inducing=50, max_iter=800, learning_rate=0.03,
                random_state=0).fit(
        X, y).predict_log_density(Xt, yt).mean()
    assert ll >= exact_gp_log_density(X, y, Xt, yt) - 0.03


# ---------------------------------------------------------------------- slow reproductions
@pytest.mark.slow
@pytest.mark.parametrize("n_layers", [2, 3])
def test_step_function_ten_seeds(n_layers):
    """Step function in full: medians over seeds 0–9."""
    results = [_step_check(n_layers, seed) for seed in range(10)]
    lls = [r[0] for r in results]
    ok = sum(abs(med[0]) < 0.05 and abs(med[1] - 1) < 0.05 for _, med in results)
    assert np.median(lls) >= (1.0 if n_layers == 2 else 1.3)
    assert ok >= 8


@pytest.mark.slow
def test_diabetes_protocol():
    """Diabetes: splits 0–4, M = 100, 1500 steps, NGD γ = 0.1 on the last layer (as the reference
    prototype of our reproduction protocol), with its acceptance bands: SGP ≥ exact GP − 0.03,
    DGP 2 ≥ SGP − 0.15, DGP 3 ≥ SGP − 0.35."""
    ll = {k: [] for k in ("gp", 1, 2, 3)}
    for s in range(5):
        X, y, Xt, yt = diabetes_split(s)
        ll["gp"].append(exact_gp_log_density(X, y, Xt, yt))
        for L in (1, 2, 3):
            m = DeepGP(tol=None, n_layers=L, n_inducing=100, max_iter=1500, natgrad_gamma=0.1,
                       learning_rate=0.01, inner_layer_init="collapsed", random_state=s).fit(X, y)
            ll[L].append(m.predict_log_density(Xt, yt).mean())
    mean = {k: np.mean(v) for k, v in ll.items()}
    assert mean[1] >= mean["gp"] - 0.03
    assert mean[2] >= mean[1] - 0.15
    assert mean[3] >= mean[1] - 0.35


def _kin8nm(shared_data_with, scheme="published"):
    """kin8nm split 0: published (Hernández-Lobato & Adams, 7373 / 819 rows) or as the 2017
    reference notebook made it (``datasets.py``: ``RandomState(0)`` shuffle, first 7372 rows
    train), the split the windows of our reproduction protocol come from."""
    shared_data = shared_data_with("uci_hl/kin8nm.csv.gz")
    _, X, y, Xt, yt = next(uci_hl_splits("kin8nm", 0, 1, scheme=scheme, data_home=shared_data,
                                         download_if_missing=False))
    if scheme == "shuffle":
        assert X.shape == (7372, 8) and Xt.shape == (820, 8)  # the notebook's "N: 7372, Ns: 820"
    return X, y, Xt, yt


@pytest.mark.slow
@pytest.mark.parametrize(("scheme", "dgp2_max"), [("shuffle", 1.34), ("published", 1.36)])
def test_kin8nm_split0_sgp_and_dgp2(shared_data_with, scheme, dgp2_max):
    """kin8nm split 0, the settings of Salimbeni 2020, §2.4, 5000 Adam steps (full batch).

    The windows of our reproduction protocol are SGP [0.93, 1.00] and DGP 2 [1.25, 1.34],
    around the authors' reference notebook (SGP 0.973 / RMSE 0.0869, DGP 2 1.302 / 0.0657) on
    its own split. Measured on that split: SGP
    1.029 (0.0848), DGP 2 1.318 (0.0648), inside its window as written; on the published split
    0: SGP 1.039 (0.0834), DGP 2 1.343 (0.0630), so there the DGP 2 upper end is 1.36. The SGP
    upper end is 1.05 on both, for the reason ``test_kin8nm_notebook_split_collapsed_bound``
    pins down (the notebook's run stopped short of the optimum).
    """
    X, y, Xt, yt = _kin8nm(shared_data_with, scheme)
    sgp = DeepGP(tol=None, n_layers=1, max_iter=5000, random_state=0).fit(X, y)
    dgp = DeepGP(tol=None, n_layers=2, max_iter=5000, learning_rate=0.01,
                 inner_layer_init="collapsed", random_state=0).fit(X, y)
    ll_sgp = sgp.predict_log_density(Xt, yt).mean()
    ll_dgp = dgp.predict_log_density(Xt, yt).mean()
    assert 0.93 <= ll_sgp <= 1.05
    assert 1.25 <= ll_dgp <= dgp2_max
    assert ll_dgp >= ll_sgp + 0.2


@pytest.mark.slow
def test_kin8nm_notebook_split_collapsed_bound(shared_data_with):
    """Why the SGP lands above its window [0.93, 1.00]: the reference stopped short of the optimum.

    The notebook's collapsed SGP (GPflow SGPR, 100 k-means inducing inputs, unit RBF-ARD, noise
    0.01, L-BFGS) printed an objective of 4570.07 (negative bound) and a test LL of 0.974 on
    this split, with its ``datasets.py`` scaling (training mean, *test* standard deviation, of
    X and y). The same model and start here reach 3608.5 (GPy 1.15: 3610.6) and test LL 1.036
    (GPy 1.038): the window's upper end is the reference run's optimum, not the model's.
    """
    X, y, Xt, yt = _kin8nm(shared_data_with, "shuffle")
    mx, sx = X.mean(axis=0), Xt.std(axis=0) + 1e-6
    my, sy = y.mean(), yt.std() + 1e-6
    m = SparseGPRegressor(kernel=RBF(length_scale=np.ones(8)), n_inducing=100,
                          noise_variance_init=0.01, max_iter=10000, random_state=0)
    m.fit((X - mx) / sx, (y - my) / sy)
    mu, sd = m.predict((Xt - mx) / sx, return_std=True)
    ll = norm.logpdf(yt, my + sy * mu, sy * sd).mean()
    assert -m.elbo_ < 3700.0  # the notebook: 4570.07
    assert ll > 1.02  # the notebook: 0.974


@pytest.mark.slow
def test_naval_cosine_schedule_removes_adams_excursions(shared_data_with):
    """Naval split 0, SGP, the Fig. 2.4 protocol's settings (5000 steps, Adam 0.01, full batch).

    At a constant rate the fitted noise is so small (≈ 5e-4 standardised) that Adam leaves the
    optimum for a few steps again and again, and the last iterate scored 6.42; annealed along
    half a cosine the excursions stop and it scores 7.52
    (``benchmarks/RESULTS.md``, Fig. 2.4, naval).
    """
    shared_data = shared_data_with("uci_hl/naval.csv.gz")
    _, X, y, Xt, yt = next(uci_hl_splits("naval", 0, 1, data_home=shared_data,
                                         download_if_missing=False))
    ll, hist = {}, {}
    for schedule in ("constant", "cosine"):
        model = DeepGP(tol=None, n_layers=1, max_iter=5000, learning_rate_schedule=schedule,
                       learning_rate=0.01, random_state=0).fit(X, y)
        ll[schedule] = model.predict_log_density(Xt, yt).mean()
        hist[schedule] = model.elbo_history_[-1000:]

    def worst_drop(h):  # deepest fall of the ELBO estimate below its previous 100 steps' median
        return max(np.median(h[t - 100:t]) - h[t] for t in range(100, h.size))

    assert ll["cosine"] >= 7.4
    assert ll["cosine"] >= ll["constant"] + 0.5
    assert worst_drop(hist["cosine"]) < 0.05 * np.median(hist["cosine"])
    assert worst_drop(hist["constant"]) > 0.5 * np.median(hist["constant"])


@pytest.mark.slow
def test_kin8nm_natgrad_after_adam_like_the_reference_notebook(shared_data_with):
    """Our protocol's "with NGD γ = 0.1 on the last layer, DGP 2 LL ≥ 1.25 after 100 iterations".

    The reference notebook's NGD cell runs on models its Adam cells had already trained for
    5100 steps (``examples/plot_deep_gp_natgrad_kin8nm.py``); this replays that order with the
    cells' settings (unwhitened, S = 5, minibatch 1000, GPflow's default noise variance 1) on
    the notebook's split. The 100 NGD iterations must keep the trained model at ≥ 1.25 and must
    not damage it: they once collapsed q(u) here (LL 1.320 → −0.348) because Adam's momentum
    from the warm start kept moving the block natgrad owns.
    """
    X, y, Xt, yt = _kin8nm(shared_data_with, "shuffle")
    dgp = DeepGP(tol=None, n_layers=2, whiten=False, noise_variance_init=1.0, n_samples=5,
                 batch_size=1000, max_iter=5100, warm_start=True, random_state=0).fit(X, y)
    ll_adam = dgp.predict_log_density(Xt, yt).mean()
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitterWarning)
        dgp.set_params(natgrad_gamma=0.1, max_iter=100).fit(X, y)
    ll_ngd = dgp.predict_log_density(Xt, yt).mean()
    assert ll_ngd >= 1.25
    assert ll_ngd >= ll_adam - 0.02


# ------------------------------------------------------------------------ stochastic driver
def test_schedules():
    from sklearn_lvgp.optim._adam import gamma_at, learning_rate_at

    assert learning_rate_at(0.01, 1, "constant") == 0.01
    assert learning_rate_at(0.01, 1000, "staircase") == 0.01
    assert learning_rate_at(0.01, 1001, "staircase") == pytest.approx(0.0098)
    assert learning_rate_at(0.01, 3001, "staircase") == pytest.approx(0.01 * 0.98 ** 3)
    assert gamma_at((1e-4, 1e-1, 5), 1) == pytest.approx(1e-4)
    assert gamma_at((1e-4, 1e-1, 5), 4) == pytest.approx(1e-4 * 1e3 ** (3 / 5))
    assert gamma_at((1e-4, 1e-1, 5), 6) == pytest.approx(0.1)
    assert gamma_at(0.3, 10) == 0.3


def test_cosine_schedule_anneals_to_its_floor_at_the_horizon_and_stays():
    from sklearn_lvgp.optim._adam import gamma_at, learning_rate_at

    H = 101
    rates = np.array([learning_rate_at(0.01, t, "cosine", horizon=H) for t in range(1, 131)])
    assert rates[0] == pytest.approx(0.01)
    assert rates[50] == pytest.approx(0.01 * (0.01 + 0.99 * 0.5))  # step 51: half way
    assert rates[H - 1] == pytest.approx(1e-4)
    np.testing.assert_allclose(rates[H:], 1e-4)
    assert np.all(np.diff(rates) <= 0)
    assert gamma_at(0.1, H, "cosine", horizon=H) == pytest.approx(1e-3)
    with pytest.raises(ValueError, match="horizon"):
        learning_rate_at(0.01, 5, "cosine")


def test_run_adam_steps_follow_the_cosine_schedule_across_a_warm_start():
    from sklearn_lvgp.optim._adam import AdamState, learning_rate_at

    # a constant gradient makes each Adam step exactly (up to eps) the learning rate
    def linear(x, idx):
        return float(x[0]), np.array([1.0])

    state = AdamState(1)
    kw = dict(n_data=4, batch_size=4, learning_rate=0.1, random_state=np.random.RandomState(0),
              schedule="cosine", horizon=30, state=state)
    first = run_adam(linear, np.zeros(1), max_iter=20, **kw)
    second = run_adam(linear, first.x, max_iter=20, **kw)
    expected = [learning_rate_at(0.1, t, "cosine", horizon=30) for t in range(1, 41)]
    assert first.x[0] == pytest.approx(-sum(expected[:20]), rel=1e-6)
    assert second.x[0] - first.x[0] == pytest.approx(-sum(expected[20:]), rel=1e-6)
    # without a horizon the run anneals over its own max_iter
    lone = run_adam(linear, np.zeros(1), max_iter=20, n_data=4, batch_size=4,
                    learning_rate=0.1, random_state=np.random.RandomState(0), schedule="cosine")
    assert lone.x[0] == pytest.approx(
        -sum(learning_rate_at(0.1, t, "cosine", horizon=20) for t in range(1, 21)), rel=1e-6)


def test_deep_gp_cosine_schedule_anneals_over_max_iter(monkeypatch):
    import sklearn_lvgp.base as module  # the base class runs the optimiser

    seen = []

    def spy(*args, **kwargs):
        seen.append((kwargs["schedule"], kwargs["horizon"], kwargs["max_iter"]))
        return run_adam(*args, **kwargs)

    monkeypatch.setattr(module, "run_adam", spy)
    X, y = _toy()
    model = _fitted(X, y, learning_rate_schedule="cosine", max_iter=4, batch_size=10)
    model.partial_fit(X, y)
    assert seen == [("cosine", 4, 4), ("cosine", 4, 2)]
    assert np.isfinite(model.score(X, y))


def test_minibatches_are_shuffled_epochs_without_replacement():
    from sklearn_lvgp.optim._adam import AdamState, minibatches

    state, rs = AdamState(1), np.random.RandomState(0)
    batches = [minibatches(state, 12, 4, rs) for _ in range(6)]
    for epoch in (batches[:3], batches[3:]):
        np.testing.assert_array_equal(np.sort(np.concatenate(epoch)), np.arange(12))
    assert not np.array_equal(np.concatenate(batches[:3]), np.concatenate(batches[3:]))
    np.testing.assert_array_equal(minibatches(state, 12, 50, rs), np.arange(12))


def test_adam_driver_minimises_and_respects_frozen_and_bounds():
    target = np.array([1.0, -2.0, 3.0])

    def objective(x, idx):
        return float(np.sum((x - target) ** 2)), 2 * (x - target)

    frozen = np.array([False, True, False])
    bounds = np.array([[-np.inf, np.inf], [-np.inf, np.inf], [-np.inf, 2.5]])
    res = run_adam(objective, np.zeros(3), n_data=4, batch_size=2, max_iter=3000,
                   learning_rate=0.05, random_state=np.random.RandomState(0), frozen=frozen,
                   bounds=bounds)
    np.testing.assert_allclose(res.x, [1.0, 0.0, 2.5], atol=1e-3)
    assert res.n_iter == 3000 and res.history.shape == (3000,)


def test_frozen_parameters_ignore_momentum_from_a_warm_start():
    """Adam-only steps, then steps with the last q(u) frozen for natgrad (warm start): the
    momentum built up before must not keep moving the frozen block. It once did, and on kin8nm
    it drove the last layer's q_sqrt towards singularity within 30 steps (LL 1.32 -> -0.35)."""
    from sklearn_lvgp.optim._adam import AdamState

    target = np.array([1.0, -2.0, 3.0])

    def objective(x, idx):
        return float(np.sum((x - target) ** 2)), 2 * (x - target)

    state = AdamState(3)
    common = dict(n_data=4, batch_size=4, learning_rate=0.05, state=state)
    x = run_adam(objective, np.zeros(3), max_iter=50, random_state=np.random.RandomState(0),
                 **common).x
    assert np.all(np.abs(state.m) > 0)
    frozen = np.array([False, True, False])
    res = run_adam(objective, x, max_iter=20, random_state=np.random.RandomState(1),
                   frozen=frozen, **common)
    assert res.x[1] == x[1]
    assert np.all(res.x[~frozen] != x[~frozen])


@pytest.mark.parametrize("kw", [dict(n_layers=2), dict(n_layers=3, expectation="unscented"),
                                dict(n_layers=2, latent_dim=1, inference="iwvi",
                                     n_importance=3),
                                dict(n_layers=2, whiten=False)],
                         ids=["mc", "unscented", "latent-iwvi", "unwhitened"])
def test_training_workspaces_do_not_change_the_bound(rng, kw):
    """The ELBO and gradient with reused per-layer workspaces equal the plain ones bitwise.

    Two evaluations at different parameters and batch sizes share the workspaces, as
    consecutive optimiser steps do (``fit`` passes them).
    """
    from sklearn_lvgp._core.workspace import Workspace

    X, y = _toy()
    m = _fitted(X, y, **kw)
    model = m._model
    Xs, Ys = _standardised(m, X, y)
    ws = [Workspace() for _ in range(model.n_layers)]
    for n in (12, 20):
        x = _perturbed(m, rng, 0.05)
        f0, g0 = model.elbo(x, Xs[:n], Ys[:n], 1.0, 2, np.random.RandomState(n))
        f1, g1 = model.elbo(x, Xs[:n], Ys[:n], 1.0, 2, np.random.RandomState(n), workspaces=ws)
        assert f0 == f1
        np.testing.assert_array_equal(g0, g1)
    assert any(w._flat for w in ws)  # the buffers were used


def test_return_cov_one_layer_is_the_exact_svgp_covariance():
    """One layer: no sampling, the posterior covariance of the SVGP plus the noise; its diagonal
    is predict's variance."""
    X, y = _toy(n=30, d=2)
    m = _fitted(X, y, n_layers=1, n_inducing=6, max_iter=30)
    Xn = X[:5] + 0.1
    mean, cov = m.predict(Xn, return_cov=True)
    mean2, std = m.predict(Xn, return_std=True)
    np.testing.assert_allclose(mean, mean2)
    np.testing.assert_allclose(np.diag(cov), std ** 2, rtol=1e-8)
    layer = m.layers_[0]
    Xs = (Xn - m.X_mean_) / m.X_scale_
    k, Z, R = layer.kernel, layer.Z, layer.q_sqrt[0]
    Kuu = k.K(Z) + m.jitter * np.mean(np.diag(k.K(Z))) * np.eye(Z.shape[0])
    A = np.linalg.solve(np.linalg.cholesky(Kuu), k.K(Z, Xs))  # whitened default
    post = k.K(Xs) - A.T @ A + (R.T @ A).T @ (R.T @ A)
    ref = (post + m.noise_variance_ * np.eye(5)) * m.y_scale_[0] ** 2
    np.testing.assert_allclose(cov, ref, rtol=1e-6, atol=1e-10)


def test_return_cov_two_layers_is_a_covariance_matching_the_variances():
    X, y = _toy(n=40, d=2)
    m = _fitted(X, y, n_layers=2, n_inducing=6, max_iter=50, n_predict_samples=200)
    Xn = X[:6] + 0.05
    _, cov = m.predict(Xn, return_cov=True)
    _, std = m.predict(Xn, return_std=True)
    assert cov.shape == (6, 6)
    np.testing.assert_allclose(cov, cov.T, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(cov) > -1e-10)
    np.testing.assert_allclose(np.diag(cov), std ** 2, rtol=0.25)  # two Monte Carlo estimates
    np.testing.assert_array_equal(m.predict(Xn, return_cov=True)[1], cov)  # fixed paths
    with pytest.raises(ValueError, match="At most one"):
        m.predict(Xn, return_std=True, return_cov=True)
    latent = _fitted(X, y, n_layers=1, n_inducing=6, latent_dim=1, max_iter=5)
    with pytest.raises(ValueError, match="return_cov is not available with latent"):
        latent.predict(Xn, return_cov=True)


# ------------------------------------------------------------------ start of the inner layers
def test_inner_layer_init_prior_and_collapsed_starts():
    """"prior": inner q(u) equals its prior (zero KL) under a default kernel of variance 0.05;
    "collapsed": 1e-5 times the prior's square root under unit variance; the last layer starts
    at the prior in both."""
    from sklearn_lvgp.bounds._dsvi_init import initial_layers
    from sklearn_lvgp.variational._kl import kl_divergence

    Xs = np.random.default_rng(0).standard_normal((40, 3))
    dims = [3, 3, 3, 1]
    for init, scale, variance in (("prior", 1.0, 0.05), ("collapsed", 1e-5, 1.0)):
        kernels, _, layers = initial_layers(Xs, dims, [None] * 3, 8, True, 1e-6, 0,
                                            np.random.RandomState(0), init)
        for layer in layers[:-1]:
            assert layer.kernel.variance == variance
            np.testing.assert_array_equal(layer.q_sqrt, scale * np.eye(8)[None].repeat(3, 0))
        assert layers[-1].kernel.variance == 1.0
        np.testing.assert_array_equal(layers[-1].q_sqrt, np.eye(8)[None])
        inner_kl = sum(kl_divergence(la.q_mu, la.q_sqrt)[0] for la in layers[:-1])
        assert (inner_kl == 0.0) is (init == "prior")
    with pytest.raises(ValueError, match="inner_layer_init"):
        DeepGP(inner_layer_init="zero", max_iter=2, n_inducing=5).fit(Xs, Xs[:, 0])


def test_prior_start_reaches_a_higher_bound_in_the_same_steps():
    """The collapsed start pays a KL of ~11.5 nats per inducing point and hidden unit (here
    50 x 5) that Adam undoes slowly; from the prior start the same 1000 steps end at a much
    higher bound (measured: -417.9 against -16.9 at 1500 steps, -626.3 against -143.0 at 500)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 5))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.3 * X[:, 2] + 0.1 * rng.standard_normal(300)
    bound = {}
    for init in ("prior", "collapsed"):
        m = DeepGP(n_layers=2, n_inducing=50, max_iter=1000, tol=None, learning_rate=0.01,
                   inner_layer_init=init, random_state=0).fit(X, y)
        bound[init] = m.elbo_
    assert bound["prior"] > bound["collapsed"] + 200, bound
