"""SparseGPRegressor: gradients, exact-GP equivalence, uncertain-input moments, bad input."""

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF as SkRBF
from sklearn.gaussian_process.kernels import ConstantKernel as SkConstant
from sklearn.gaussian_process.kernels import Matern as SkMatern

from sklearn_lvgp import SparseGPRegressor
from sklearn_lvgp._core.params import ParamPacker
from sklearn_lvgp.expectations import monte_carlo_rule, unscented_rule
from sklearn_lvgp.kernels import RBF, Linear, Matern32, Periodic
from sklearn_lvgp.models._sgpr import sgpr_bound_and_grads
from sklearn_lvgp.utils.gradcheck import check_grad


@pytest.fixture
def data():
    r = np.random.default_rng(3)
    X = r.uniform(-2, 2, (40, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * r.standard_normal(40)
    return X, y


def _fd_objective(kernel, X, Y, Z0, X_var, rule):
    kernel = kernel.initialize(X.shape[1], np.random.RandomState(0))
    packer = ParamPacker([("Z", Z0.shape), ("theta", (kernel.n_theta,)), ("noise", (), "log")])

    def fun(flat):
        p = packer.unpack(flat)
        kernel.theta = p["theta"]
        F, grads, _ = sgpr_bound_and_grads(kernel, X, Y, p["Z"], float(p["noise"]),
                                           X_var=X_var, rule=rule, jitter=0.0)
        return F, packer.pack_grad(grads, p)

    return fun, packer.pack({"Z": Z0, "theta": kernel.theta, "noise": 0.3})


@pytest.mark.parametrize("case", ["deterministic", "analytic", "unscented", "monte_carlo",
                                  "matern_unscented", "periodic_sum_deterministic"])
def test_sgpr_bound_gradient_matches_finite_differences(case, rng):
    X = rng.uniform(-1.5, 1.5, (12, 2))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] ** 2]) + 0.05 * rng.standard_normal((12, 2))
    Z0 = X[:4] + 0.1
    kernel = RBF(length_scale=[0.9, 1.3], variance=1.2) + Linear(variances=[0.3, 0.2])
    X_var, rule = None, "analytic"
    if case != "deterministic" and not case.endswith("deterministic"):
        X_var = rng.uniform(0.01, 0.2, X.shape)
    if case == "unscented":
        rule = unscented_rule(2)
    elif case == "monte_carlo":
        rule = monte_carlo_rule(5, 2, np.random.RandomState(1), n_points=12)
    elif case == "matern_unscented":
        kernel, rule = Matern32(length_scale=[0.8, 1.1]), unscented_rule(2)
    elif case == "periodic_sum_deterministic":
        kernel = Periodic(period=1.7) + RBF(length_scale=[0.9, 1.3])
    fun, x0 = _fd_objective(kernel, X, Y, Z0, X_var, rule)
    check_grad(fun, x0, rtol=1e-5)


@pytest.mark.parametrize("transform", ["log", "softplus"])
def test_estimator_objective_gradient_under_both_transforms(transform, data, monkeypatch):
    """The packed objective the estimator hands L-BFGS-B has the FD gradient."""
    import sklearn_lvgp.optim._collapsed_fit as collapsed_fit

    captured = {}

    def capture(fun, x0, **kwargs):
        captured["fun"], captured["x0"] = fun, x0
        return real(fun, x0, **{**kwargs, "max_iter": 1})

    real = collapsed_fit.minimize_lbfgsb
    monkeypatch.setattr(collapsed_fit, "minimize_lbfgsb", capture)
    X, y = data
    SparseGPRegressor(n_inducing=6, positive_transform=transform, jitter=0.0,
                      random_state=0).fit(X[:20], y[:20])
    check_grad(captured["fun"], captured["x0"], rtol=1e-5)


@pytest.mark.parametrize("sk_kernel, kernel", [
    (SkConstant(1.7) * SkRBF([0.8, 1.9]), RBF(length_scale=[0.8, 1.9], variance=1.7)),
    (SkConstant(0.6) * SkMatern([1.1, 0.7], nu=1.5), Matern32(length_scale=[1.1, 0.7],
                                                              variance=0.6)),
])
def test_all_inducing_bound_equals_sklearn_exact_gp(sk_kernel, kernel, data):
    X, y = data
    model = SparseGPRegressor(kernel=kernel, n_inducing="all", optimizer=None,
                              noise_variance_init=0.05, jitter=1e-12).fit(X, y)
    exact = GaussianProcessRegressor(sk_kernel, alpha=0.05, optimizer=None).fit(X, y)
    assert model.elbo_ == pytest.approx(
        exact.log_marginal_likelihood_value_, rel=1e-6)
    Xt = X[:7] + 0.05
    mean, std = model.predict(Xt, return_std=True, include_noise=False)
    mean_sk, std_sk = exact.predict(Xt, return_std=True)
    np.testing.assert_allclose(mean, mean_sk, atol=1e-7)
    np.testing.assert_allclose(std, std_sk, atol=1e-6)


@pytest.fixture
def fitted(data):
    X, y = data
    kernel = RBF(length_scale=[0.8, 1.5]) + Linear(variances=[0.1, 0.1])
    return SparseGPRegressor(kernel=kernel, n_inducing=12, random_state=0).fit(X, y)


@pytest.mark.parametrize("expectation", ["analytic", "unscented", "gauss_hermite",
                                         "monte_carlo"])
def test_zero_input_variance_equals_deterministic_prediction(fitted, data, expectation):
    Xt = data[0][:9] * 0.9
    mean, std = fitted.predict(Xt, return_std=True)
    mean0, std0 = fitted.predict(Xt, X_var=np.zeros_like(Xt), expectation=expectation,
                                 return_std=True)
    np.testing.assert_allclose(mean0, mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(std0, std, rtol=0, atol=1e-10)


def _monte_carlo_moments(model, m, v, n_draws, seed):
    """Mixture mean/variance of y* under x* ~ N(m, diag v) with the exact SGPR predictive."""
    r = np.random.default_rng(seed)
    Xs = m + np.sqrt(v) * r.standard_normal((n_draws, m.size))
    mean, std = model.predict(Xs, return_std=True)
    second = std ** 2 + mean ** 2
    mix_mean = mean.mean()
    mix_var = second.mean() - mix_mean ** 2
    se_mean = mean.std() / np.sqrt(n_draws)
    se_var = np.std(second - 2 * mix_mean * mean) / np.sqrt(n_draws)
    return mix_mean, mix_var, se_mean, se_var


@pytest.mark.parametrize("kernel, expectation", [
    (RBF(length_scale=[0.8, 1.5]) + Linear(variances=[0.1, 0.1]), "analytic"),
    (Matern32(length_scale=[0.9, 1.4]), "gauss_hermite"),
])
def test_uncertain_moments_match_monte_carlo(kernel, expectation, data):
    X, y = data
    model = SparseGPRegressor(kernel=kernel, n_inducing=12, gh_order=12,
                              random_state=0).fit(X, y)
    for k, (m, v) in enumerate([(np.array([0.3, -0.5]), np.array([0.2, 0.1])),
                                (np.array([-1.0, 1.2]), np.array([0.05, 0.4]))]):
        mean, std = model.predict(m[None], X_var=v[None], return_std=True,
                                  expectation=expectation)
        mc_mean, mc_var, se_mean, se_var = _monte_carlo_moments(model, m, v, 100_000, k)
        assert abs(mean[0] - mc_mean) <= 4 * se_mean
        assert abs(std[0] ** 2 - mc_var) <= 4 * se_var


def test_unscented_is_close_to_analytic_for_small_input_variance(fitted, data):
    Xt = data[0][:5]
    V = np.full_like(Xt, 0.01)
    m_a, s_a = fitted.predict(Xt, X_var=V, expectation="analytic", return_std=True)
    m_u, s_u = fitted.predict(Xt, X_var=V, expectation="unscented", return_std=True)
    np.testing.assert_allclose(m_u, m_a, atol=2e-3)
    np.testing.assert_allclose(s_u, s_a, rtol=2e-2)


def test_monte_carlo_nodes_frozen_unless_random_state_given(fitted, data):
    Xt, V = data[0][:4], 0.1
    a = fitted.predict(Xt, X_var=V, expectation="monte_carlo")
    b = fitted.predict(Xt, X_var=V, expectation="monte_carlo")
    c = fitted.predict(Xt, X_var=V, expectation="monte_carlo", random_state=5)
    d = fitted.predict(Xt, X_var=V, expectation="monte_carlo", random_state=5)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(c, d)
    assert not np.allclose(a, c)


def test_uncertain_training_inputs_change_the_fit_and_zero_variance_does_not(data):
    X, y = data
    kw = {"kernel": RBF(length_scale=[0.8, 1.5]), "n_inducing": 10, "optimizer": None,
          "noise_variance_init": 0.05, "random_state": 0}
    base = SparseGPRegressor(**kw).fit(X, y)
    zero = SparseGPRegressor(**kw, expectation="unscented").fit(X, y, X_var=0.0)
    noisy = SparseGPRegressor(**kw).fit(X, y, X_var=0.2)
    assert zero.expectation_ == "unscented" and noisy.expectation_ == "analytic"
    assert zero.elbo_ == pytest.approx(
        base.elbo_, rel=1e-10)
    assert noisy.elbo_ < base.elbo_
    fitted = SparseGPRegressor(kernel=Matern32(), n_inducing=8, max_iter=30,
                               random_state=0).fit(X, y, X_var=np.full(X.shape, 0.05))
    assert fitted.expectation_ == "unscented"
    assert np.isfinite(fitted.elbo_)


def test_fit_improves_bound_and_predicts_well(data):
    X, y = data
    model = SparseGPRegressor(n_inducing=15, random_state=0).fit(X, y)
    start = SparseGPRegressor(n_inducing=15, optimizer=None, random_state=0).fit(X, y)
    assert model.elbo_ > start.elbo_ + 5
    assert model.score(X, y) > 0.95
    assert model.noise_variance_ < 0.05


def test_log_and_softplus_reach_the_same_optimum_on_a_unimodal_problem(data):
    X, y = data
    a = SparseGPRegressor(n_inducing="all", random_state=0).fit(X, y)
    b = SparseGPRegressor(n_inducing="all", positive_transform="softplus",
                          random_state=0).fit(X, y)
    assert a.elbo_ == pytest.approx(
        b.elbo_, abs=1e-3)


def test_normalize_y_multioutput_shapes_and_sampling(data):
    X, y = data
    Y = np.column_stack([100 + 50 * y, -y])
    model = SparseGPRegressor(n_inducing=10, normalize_y=True, random_state=0).fit(X, Y)
    mean, std = model.predict(X[:5], return_std=True)
    assert mean.shape == std.shape == (5, 2)
    assert np.all(np.abs(mean[:, 0] - Y[:5, 0]) < 20)
    mean_c, cov = model.predict(X[:5], return_cov=True)
    assert cov.shape == (5, 5, 2)
    np.testing.assert_allclose(np.sqrt(np.diagonal(cov, axis1=0, axis2=1)).T, std, rtol=1e-8)
    samples = model.sample_y(X[:5], n_samples=3, random_state=1)
    assert samples.shape == (5, 2, 3)
    np.testing.assert_array_equal(samples, model.sample_y(X[:5], n_samples=3, random_state=1))
    assert model.predict_log_density(X[:5], Y[:5]).shape == (5,)
    one = SparseGPRegressor(n_inducing=10, random_state=0).fit(X, y)
    assert one.sample_y(X[:4], n_samples=2).shape == (4, 2)


def test_predict_log_density_is_gaussian_log_density(fitted, data):
    X, y = data
    mean, std = fitted.predict(X[:6], return_std=True)
    expected = -0.5 * np.log(2 * np.pi * std ** 2) - 0.5 * (y[:6] - mean) ** 2 / std ** 2
    np.testing.assert_allclose(fitted.predict_log_density(X[:6], y[:6]), expected, rtol=1e-12)


def test_thread_count_does_not_change_results(data):
    X, y = data
    preds = [SparseGPRegressor(kernel=Matern32(), n_inducing=10, max_iter=40, random_state=0,
                               n_jobs=n).fit(X, y).predict(X, X_var=0.1)
             for n in (1, 2)]
    np.testing.assert_array_equal(preds[0], preds[1])


def test_inputs_are_not_modified(data):
    X, y = data
    X0, y0, V = X.copy(), y.copy(), np.full(X.shape, 0.1)
    V0 = V.copy()
    SparseGPRegressor(n_inducing=5, max_iter=5, random_state=0).fit(X, y, X_var=V)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(V, V0)


@pytest.mark.parametrize("kwargs, message", [
    ({"X_var": np.full((3, 3), 0.1)}, "X_var must be a scalar or have the shape"),
    ({"X_var": -0.1}, "non-negative"),
    ({"X_var": np.array([[np.nan, 0.1]] * 3)}, "NaN"),
    ({"X_var": 0.1, "return_cov": True}, "return_cov is not available"),
    ({"X_var": 0.1, "expectation": "analytic_ish"}, "expectation must be one of"),
])
def test_bad_prediction_input(fitted, data, kwargs, message):
    with pytest.raises(ValueError, match=message):
        fitted.predict(data[0][:3], **kwargs)


def test_analytic_expectation_needs_closed_form(data):
    X, y = data
    model = SparseGPRegressor(kernel=Matern32(), n_inducing=5, max_iter=5,
                              random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="closed-form"):
        model.predict(X[:2], X_var=0.1, expectation="analytic")


@pytest.mark.parametrize("params, fit_kwargs, error, message", [
    ({"n_inducing": 50}, {}, ValueError, "n_samples = 40"),
    ({"n_inducing": "most"}, {}, ValueError, "n_inducing must be one of"),
    ({"inducing_inputs": np.zeros((3, 5))}, {}, ValueError, "inducing_inputs must have shape"),
    ({"positive_transform": "exp"}, {}, ValueError, "positive_transform"),
    ({"optimizer": "adam"}, {}, ValueError, "optimizer"),
    ({"kernel": "rbf"}, {}, TypeError, "kernel must be"),
    ({}, {"X_var": np.full((40, 1), 0.1)}, ValueError, "X_var must be"),
    ({}, {"X_var": -1.0}, ValueError, "non-negative"),
])
def test_bad_fit_input(data, params, fit_kwargs, error, message):
    X, y = data
    with pytest.raises(error, match=message):
        SparseGPRegressor(**{"n_inducing": 5, **params}).fit(X, y, **fit_kwargs)


@pytest.mark.parametrize("bad", ["X", "y"])
def test_nan_rejected(data, bad):
    X, y = data[0].copy(), data[1].copy()
    (X if bad == "X" else y)[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SparseGPRegressor(n_inducing=5).fit(X, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_targets_at_an_overflowing_scale_ask_for_normalize_y(data):
    X, y = data
    with pytest.raises(ValueError, match=r"y \(pass normalize_y=True to standardise it\) has "
                                         r"values of magnitude 1.*e\+150"):
        SparseGPRegressor(n_inducing=5, max_iter=5).fit(X, 1e150 * y)
    model = SparseGPRegressor(n_inducing=5, max_iter=5, normalize_y=True).fit(X, 1e150 * y)
    assert np.all(np.isfinite(model.predict(X)))


def test_predict_log_density_subset_and_order_invariant(fitted, data):
    X, y = data
    full = fitted.predict_log_density(X, y)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    np.testing.assert_allclose(fitted.predict_log_density(X[perm], y[perm]), full[perm], atol=1e-9)
    np.testing.assert_allclose(fitted.predict_log_density(X[:5], y[:5]), full[:5], atol=1e-9)


def test_deterministic_bound_is_smooth_with_ill_conditioned_kuu():
    """Long length scales and a large variance make cond(K_uu)
    ~5e9; the bound must stay smooth (rounding noise below 1e-6; the Ψ2 form's is ~3e-3 here)
    and agree with the Ψ2 form of ``collapsed_bound`` to that form's accuracy."""
    from sklearn_lvgp.bounds._collapsed_global import collapsed_bound

    r = np.random.default_rng(0)
    X = r.uniform(-2, 2, (3000, 8))
    Y = np.sin(X * np.linspace(0.5, 2.0, 8)).sum(axis=1, keepdims=True)
    Y = Y + 0.3 * r.standard_normal(Y.shape)
    Z = X[:100]
    kernel = RBF(length_scale=np.exp([3.7, 2.3, 4.9, 5.0, 1.8, 5.1, 5.5, 0.9]),
                 variance=1000.0).initialize(8, np.random.RandomState(0))
    F0, _, _ = sgpr_bound_and_grads(kernel, X, Y, Z, 0.66)
    Fs = [sgpr_bound_and_grads(kernel, X, Y, Z + 1e-13 * r.standard_normal(Z.shape), 0.66)[0]
          for _ in range(4)]
    assert np.max(np.abs(np.array(Fs) - F0)) < 1e-6
    Kfu = kernel.K(X, Z)
    F_psi2, _ = collapsed_bound(Y, float(np.sum(kernel.Kdiag(X))), Kfu, Kfu.T @ Kfu, kernel.K(Z),
                                0.66)
    assert abs(F_psi2 - F0) < 1.0


# ----------------------------------------------------------------------------- warm start
def test_warm_start_starts_from_the_previous_solution():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(120, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(120)
    first = SparseGPRegressor(n_inducing=10, max_iter=15, random_state=0).fit(X, y)
    warm = SparseGPRegressor(n_inducing=10, max_iter=15, warm_start=True, random_state=0)
    warm.fit(X, y)
    np.testing.assert_array_equal(warm.predict(X[:5]), first.predict(X[:5]))
    theta, Z = warm.kernel_.theta.copy(), warm.inducing_inputs_.copy()
    warm.set_params(max_iter=1000).fit(X, y)
    # it went on from the first solution: more iterations counted, a bound at least as high
    assert warm.n_iter_ > first.n_iter_
    assert warm.elbo_ >= first.elbo_ - 1e-9
    # a zero-iteration continuation would reproduce theta and Z: the continued fit moved them
    assert not np.array_equal(warm.kernel_.theta, theta) or not np.array_equal(
        warm.inducing_inputs_, Z)
    # another number of features: a fresh fit
    assert warm.fit(X[:, :1], y).n_iter_ <= 1000


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fit_does_not_depend_on_the_units_of_X():
    """The inducing inputs are optimised in units of the data's column scales and the default
    kernel starts and is bounded relative to them, so X in units of 1e-6 or 1e6 fits the
    same model (the raw inducing inputs' gradients, growing as 1 / scale, once stalled
    L-BFGS-B at small scales: bound -1341 against -346 at 1e-6 on diabetes)."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    X, y, Xt = X[:250], y[:250], X[250:300]
    fits = {s: SparseGPRegressor(n_inducing=20, normalize_y=True, random_state=0).fit(X * s, y)
            for s in (1e-6, 1.0, 1e6)}
    base = fits[1.0]
    for s, m in fits.items():
        assert m.elbo_ == pytest.approx(base.elbo_, rel=1e-4), s
        np.testing.assert_allclose(m.predict(Xt * s), base.predict(Xt), rtol=0,
                                   atol=0.01 * np.std(y))
