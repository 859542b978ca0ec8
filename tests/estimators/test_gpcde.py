"""GPCDE: behaviour, bad input, predictive-density API, small bimodal reproduction."""

import warnings
from functools import partial

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import r2_score
from sklearn.preprocessing import StandardScaler, scale

from sklearn_lvgp._core.parallel import threads
from sklearn_lvgp.bounds._gpcde_predictive import CDEPredictive
from sklearn_lvgp.datasets._conditional import (
    bimodal_conditional_log_density,
    make_bimodal_conditional,
)
from sklearn_lvgp.engine import InMemoryRows
from sklearn_lvgp.kernels import RBF, Matern32
from sklearn_lvgp.metrics import log_predictive_density
from sklearn_lvgp.models._gpcde import GPCDE
from sklearn_lvgp.models._sgpr import SparseGPRegressor
from sklearn_lvgp.optim._adam import DivergenceError
from sklearn_lvgp.optim._collapsed_fit import fit_collapsed_rows

FAST = {"n_inducing": 8, "gh_order": 20, "max_iter": 40, "learning_rate": 0.05,
        "optimizer": "adam", "random_state": 0}


@pytest.fixture(scope="module")
def data():
    X, y = make_bimodal_conditional(30, 0)
    return X, y


@pytest.fixture(scope="module")
def fitted(data):
    return GPCDE(**FAST).fit(*data)


# ------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("params, match", [
    ({"latent_dim": 3}, r"gh_order\*\*latent_dim = 20\*\*3 = 8000"),
    ({"q_w": "iw"}, "q_w"),
    ({"expectation": "gh"}, "expectation"),
    ({"natgrad_gamma": 1.5}, "natgrad_gamma"),
    ({"natgrad_gamma": (0.0, 0.1, 40)}, "gamma0 must be > 0"),
    ({"natgrad_gamma": (1e-4, 2.0, 40)}, r"gamma1 must be in \(0, 1\]"),
    ({"natgrad_gamma": (1e-4, 0.1, 0)}, "K must be >= 1"),
    ({"natgrad_gamma": (0.1, 0.2)}, r"\(gamma0, gamma1, K\)"),
    ({"optimizer": "lbfgs", "q_w": "gaussian"}, "deterministic"),
    ({"optimizer": "lbfgs", "input_projection_dim": 1}, "deterministic"),
    ({"encoder_hidden": 20}, "encoder_hidden"),
    ({"latent_dim": -1}, "latent_dim"),
    ({"init": "svgp"}, "init"),
    ({"init": "gp", "latent_dim": 0}, "init='gp'"),
    ({"init": "gp", "input_projection_dim": 1}, "init='gp'"),
    ({"init": "gp", "output_mixing_dim": 1}, "init='gp'"),
    ({"init": "gp", "kernel": RBF(length_scale=1.0)}, "init='gp'"),
])
def test_bad_parameters(data, params, match):
    with pytest.raises(ValueError, match=match):
        GPCDE(**{**FAST, **params}).fit(*data)


def test_bad_kernel(data):
    with pytest.raises(TypeError, match="Kernel"):
        GPCDE(**{**FAST, "kernel": "rbf"}).fit(*data)


@pytest.mark.parametrize("q", [0.0, 1.0, [0.5, 1.2], -0.1])
def test_quantiles_outside_unit_interval(fitted, data, q):
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        fitted.predict_quantiles(data[0][:3], q)


def test_bad_targets(fitted, data):
    X, y = data
    with pytest.raises(ValueError, match="rows"):
        fitted.predict_log_density(X, y[:-1])
    with pytest.raises(ValueError, match="NaN"):
        fitted.predict_log_density(X[:2], np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="y_grid"):
        fitted.predict_density(X[:2], np.array([0.0, np.inf]))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_divergence_names_the_step(data):
    with pytest.raises(DivergenceError, match="optimisation step"):
        GPCDE(**{**FAST, "learning_rate": 1e8, "natgrad_gamma": None, "max_iter": 30}).fit(*data)


# ------------------------------------------------------------------------ predictive API
def test_score_is_r2_and_the_density_scorer_is_the_mean_log_density(fitted, data):
    X, y = data
    ll = fitted.predict_log_density(X, y)
    assert ll.shape == (X.shape[0],)
    np.testing.assert_allclose(fitted.score(X, y), r2_score(y, fitted.predict(X)))
    np.testing.assert_allclose(log_predictive_density(fitted, X, y), ll.mean())
    # row-wise: subset and order invariance of predict_log_density
    perm = np.random.RandomState(0).permutation(X.shape[0])
    np.testing.assert_allclose(fitted.predict_log_density(X[perm], y[perm]), ll[perm], rtol=1e-12)
    np.testing.assert_allclose(fitted.predict_log_density(X[:5], y[:5]), ll[:5], rtol=1e-12)


def test_density_integrates_to_one(fitted, data):
    """The predictive density integrates to one, D_y = 1: trapezoid on a wide grid."""
    grid = np.linspace(-3, 4, 4001)
    dens = fitted.predict_density(data[0][:4], grid)
    np.testing.assert_allclose(np.trapezoid(dens, grid, axis=1), 1.0, atol=1e-4)
    np.testing.assert_allclose(np.log(fitted.predict_density(data[0][:4], data[1][:4])
                                      [np.arange(4), np.arange(4)]),
                               fitted.predict_log_density(data[0][:4], data[1][:4]), rtol=1e-10)


def test_density_integrates_to_one_2d():
    """Same, D_y = 2 with output mixing (L = 1 < D_y): grid sum."""
    rs = np.random.RandomState(0)
    X = rs.uniform(-2, 2, (40, 1))
    Y = np.column_stack([np.sin(X[:, 0]), np.cos(X[:, 0])]) + 0.2 * rs.randn(40, 2)
    m = GPCDE(**{**FAST, "output_mixing_dim": 1}).fit(X, Y)
    g = np.linspace(-5, 5, 201)
    G = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    dens = m.predict_density(X[:2], G)
    np.testing.assert_allclose(dens.sum(axis=1) * (g[1] - g[0]) ** 2, 1.0, atol=1e-3)
    assert m.predict(X[:3]).shape == (3, 2)
    assert m.sample_y(X[:3], 4).shape == (3, 2, 4)
    assert m.predict_quantiles(X[:3], [0.2, 0.8]).shape == (3, 2, 2)


def test_moments_quantiles_and_samples_agree(fitted, data):
    X = data[0][:3]
    mean, std = fitted.predict(X, return_std=True)
    grid = np.linspace(-4, 5, 20001)
    dens = fitted.predict_density(X, grid)
    np.testing.assert_allclose(np.trapezoid(dens * grid, grid, axis=1), mean, atol=1e-5)
    var = np.trapezoid(dens * (grid - mean[:, None]) ** 2, grid, axis=1)
    np.testing.assert_allclose(var, std ** 2, rtol=1e-4)
    qs = fitted.predict_quantiles(X, [0.1, 0.5, 0.9])
    assert qs.shape == (3, 3) and np.all(np.diff(qs, axis=1) > 0)
    cdf = np.cumsum(dens, axis=1) * (grid[1] - grid[0])
    for i in range(3):
        np.testing.assert_allclose(np.interp(qs[i], grid, cdf[i]), [0.1, 0.5, 0.9], atol=2e-3)
    s = fitted.sample_y(X, 4000, random_state=1)
    assert s.shape == (3, 4000)
    np.testing.assert_allclose(s.mean(axis=1), mean, atol=4 * std.max() / np.sqrt(4000))


def test_reproducible(data):
    a = GPCDE(**FAST).fit(*data).predict_log_density(*data)
    b = GPCDE(**FAST).fit(*data).predict_log_density(*data)
    np.testing.assert_array_equal(a, b)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("params", [
    {"q_w": "amortized"},
    {"q_w": "gaussian", "expectation": "unscented", "optimizer": "lbfgs"},
    {"q_w": "amortized", "latent_dim": 3, "n_predict_samples": 50},
    {"input_projection_dim": 1, "n_predict_samples": 50, "whiten": False},
    {"latent_dim": 2, "gh_order": 6, "natgrad_gamma": (0.01, 0.1, 20)},
    {"latent_dim": 0},
])
def test_variants_fit_and_predict(data, params):
    X, y = data
    m = GPCDE(**{**FAST, **params}).fit(X, y)
    ll = m.predict_log_density(X, y)
    assert np.all(np.isfinite(ll)) and np.isfinite(m.elbo_)
    assert m.elbo_history_.shape == (m.n_iter_,)


def test_predict_r2_on_sklearn_regression_check():
    """The R^2 of ``predict`` on sklearn's check_regressors_train data exceeds 0.5 (the check
    itself is skipped through ``poor_score`` because ``score`` is a log density)."""
    from sklearn.utils.estimator_checks import _regression_dataset

    X, y = _regression_dataset()
    y = scale(y)
    m = GPCDE(n_inducing=5, gh_order=10, max_iter=30, learning_rate=0.05,
              random_state=0).fit(X, y)
    assert r2_score(y, m.predict(X)) > 0.5


# ---------------------------------------------------------------------- GP warm start
def _standardised(m, X, y):
    return (X - m.X_mean_) / m.X_scale_, (y.reshape(len(y), -1) - m.y_mean_) / m.y_scale_


def _fitted_bound(m, X, y, seed=0, n_eval=1):
    """The full-batch bound at the fitted parameters, recomputed from the model's objective on
    the standardised data (not read from ``elbo_``), averaged over ``n_eval`` draws."""
    Xs, Ys = _standardised(m, X, y)
    return m._model.mean_bound(m._x, _rows(Xs, Ys), np.random.RandomState(seed), n_eval)


def _rows(Xs, Ys):
    return InMemoryRows({"X": Xs, "y": Ys}, prefix="cde")


def _switched_off_start(model, x0, Xs, Ys, rs, user_kernel):
    """:meth:`CDEModel.switched_off_start` as ``GPCDE`` runs it on the standardised rows."""
    rows = _rows(Xs, Ys)
    fit = partial(fit_collapsed_rows, rows, jitter=model.jitter, name="switched-off fit")
    return model.switched_off_start(x0, rows, rs, fit, user_kernel)


def _near_noiseless(n, rs):
    X = rs.uniform(-3, 3, (n, 2))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.01 * rs.randn(n)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_gp_warm_start_near_noiseless():
    """``init="gp"`` on a near-noiseless function: not worse than the GP (the UCI energy failure
    mode in small). Measured: SGPR 3.068, init="gp" 3.068 (switched-off start kept),
    init="prior" 2.020 nats/point."""
    rs = np.random.RandomState(0)
    X, y = _near_noiseless(80, rs)
    Xt, yt = _near_noiseless(300, rs)
    with threads(1):
        gp = SparseGPRegressor(n_inducing=15, random_state=0).fit(X, y)
        kw = {"n_inducing": 15, "gh_order": 10, "optimizer": "lbfgs", "natgrad_gamma": None,
              "max_iter": 100, "random_state": 0}
        warm = GPCDE(**kw).fit(X, y)
        cold = GPCDE(init="prior", **kw).fit(X, y)
    # the parameters kept have the bound reported, and it is not below the switched-off one
    bound = _fitted_bound(warm, X, y)
    assert bound == pytest.approx(warm.elbo_, rel=1e-12)
    assert bound >= warm.gp_elbo_ - 1e-9 * abs(warm.gp_elbo_)
    assert warm.elbo_ > cold.elbo_
    ll_gp = gp.predict_log_density(Xt, yt).mean()
    assert warm.predict_log_density(Xt, yt).mean() >= ll_gp - 0.05
    assert cold.gp_elbo_ is None and cold.latent_used_
    if not warm.latent_used_:
        # switched off: every quadrature node gives the same predictive component
        m, v = warm._predictive().moments(warm._standardised_inputs(Xt[:5]))
        np.testing.assert_allclose(m, np.broadcast_to(m[:, :1], m.shape), atol=1e-5)
        np.testing.assert_allclose(v, np.broadcast_to(v[:, :1], v.shape), rtol=1e-3)


def test_gp_start_at_a_stationary_point_keeps_a_finite_bound():
    """Symmetric two-branch data: the sparse GP on x alone is pure noise (kernel variance at
    its lower bound), a stationary point of the full model too, as far as the switched-off
    fit converged: the full model's projected gradient at the ``init="gp"`` start is that
    fit's final one, at most L-BFGS-B's ``pgtol`` (1e-5) when the fit stopped on it, up to
    about 2e-5 when it stopped on the relative reduction of the bound. Which test stops it
    depends on the last bits of the BLAS kernels (seeds 0-7: no iteration on 5 with OpenBLAS's
    SkylakeX kernels, on 1 with its Haswell kernels), so L-BFGS-B takes no iteration or one
    (a step of about 1e-7). Either way the bound is finite and the switched-off solution is
    kept (the bound was NaN and the latent reported as used after no iteration; that path
    is tested on its own below)."""
    X, y = _two_branches(400, 0, True)
    m = GPCDE(init="gp", random_state=0).fit(X, y)
    assert m.n_iter_ <= 1 and np.isfinite(m.elbo_)
    assert not m.latent_used_ and m.elbo_ == m.gp_elbo_


def test_lbfgs_run_without_an_iteration_reports_the_start_bound():
    """An L-BFGS-B run from a start with zero projected gradient takes no iteration; its
    bound history is the start's bound, not empty (whose mean made ``elbo_`` NaN)."""
    x0 = np.array([0.5, -1.0])
    bounds = np.array([[-np.inf, np.inf], [-1.0, np.inf]])

    def full(x):  # minimum at x0 in the first coordinate, on the active bound in the second
        return 3.0 + (x[0] - 0.5) ** 2 + (x[1] + 1.0), np.array([2.0 * (x[0] - 0.5), 1.0])

    x, history, n_iter, _ = GPCDE()._optimise("lbfgs", x0, bounds, full=full)
    assert n_iter == 0 and history.tolist() == [-3.0]
    np.testing.assert_array_equal(x, x0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("user_kernel", [False, True])
def test_switched_off_fit_is_the_sparse_gp_regressor(user_kernel):
    """The switched-off candidate is SparseGPRegressor on the standardised data, the better of
    its fits from the model's start and from the regressor's: the full model's bound with the
    latent switched off equals that regressor's collapsed bound."""
    rs = np.random.RandomState(0)
    X = rs.uniform(-3, 3, (60, 2))
    Xs = scale(X)
    Ys = scale(np.sin(2 * X[:, 0]) + np.cos(1.5 * X[:, 1]) + 0.1 * rs.randn(60))[:, None]
    kernel = Matern32(length_scale=[0.5, 2.0, 1.0]) if user_kernel else None
    est = GPCDE(n_inducing=10, gh_order=10, kernel=kernel, noise_variance_init=0.05)
    est._kernel = kernel
    model, x0 = est._build(Xs, Ys, np.random.RandomState(1), Xs.shape[0])
    with threads(1):
        bound_off = _switched_off_start(model, x0, Xs, Ys, rs, user_kernel)[2]
        p = model.unpack(x0)
        k0 = p["kernel"].clone()
        k0.set_params(length_scale=np.asarray(p["kernel"].length_scale)[:2])
        fits = [SparseGPRegressor(kernel=k, n_inducing=10, inducing_inputs=p["Z"][:, :2],
                                  noise_variance_init=s2, random_state=0)
                .fit(Xs, Ys[:, 0]) for k, s2 in [(k0, 0.05), (k0 if user_kernel else None, None)]]
    assert bound_off == pytest.approx(max(f.elbo_ for f in fits), rel=1e-7)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("q_w", ["gaussian", "amortized"])
def test_gp_warm_start_gaussian_q(data, q_w):
    """The switched-off candidate of a Gaussian q(w) has q(w_n) = p(w_n): its bound is the
    SVGP bound (no KL, no dependence on the draws), and the parameters kept are at least as
    good, for any draws."""
    X, y = data
    m = GPCDE(**{**FAST, "q_w": q_w}).fit(X, y)
    assert np.isfinite(m.gp_elbo_) and np.isfinite(m.elbo_)
    Xs, Ys = _standardised(m, X, y)
    x_off = _switched_off_start(m._model, m._x, Xs, Ys, np.random.RandomState(1), False)[1]
    off = [m._model.mean_bound(x_off, _rows(Xs, Ys), np.random.RandomState(s), 1)
           for s in range(3)]
    np.testing.assert_allclose(off, off[0], rtol=1e-9)
    kept = [_fitted_bound(m, X, y, seed) for seed in range(3)]
    assert min(kept) >= m.gp_elbo_ - 1e-9 * abs(m.gp_elbo_)


# ------------------------------------------------------------------- bimodal reproduction
def test_bimodal_beats_gp_small():
    """Bimodal demo, small: quadrature GPCDE beats the GP by >= 0.3 nats/point (seed 0).

    Reduced settings (M = 20, H = 20, L-BFGS 300 iterations) measured at +0.54 nats with the
    default ``init="auto"`` and with ``init="prior"`` (the latent is used).
    """
    X, y = make_bimodal_conditional(100, 0)
    Xt, yt = make_bimodal_conditional(500, 1000)
    with threads(1):
        gp = SparseGPRegressor(n_inducing=20, random_state=0).fit(X, y)
    ll_gp = gp.predict_log_density(Xt, yt).mean()
    m = GPCDE(n_inducing=20, gh_order=20, optimizer="lbfgs", natgrad_gamma=None,
              max_iter=300, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 300 iterations, not converged
        m.fit(X, y)
    ll = m.predict_log_density(Xt, yt).mean()
    oracle = bimodal_conditional_log_density(Xt, yt).mean()
    assert ll >= ll_gp + 0.3
    assert ll <= oracle


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bimodal_spec_protocol(seed):
    """Bimodal demo, full protocol: M = 50, H = 100, full batch, 1500 x [Adam 0.01, NGD 0.1].

    Targets per seed: quadrature >= GP + 0.3, every variant >= GP + 0.3 (protocol: vs SVGP),
    quadrature >= Gaussian q(w) - 0.02, nothing above the oracle.
    """
    X, y = make_bimodal_conditional(100, seed)
    Xt, yt = make_bimodal_conditional(500, 1000 + seed)
    gp = SparseGPRegressor(n_inducing=50, random_state=0).fit(X, y)
    gp = gp.predict_log_density(Xt, yt).mean()
    oracle = bimodal_conditional_log_density(Xt, yt).mean()
    ll = {}
    for q_w in ("quadrature", "amortized"):
        m = GPCDE(tol=None, gh_order=100, q_w=q_w, n_inducing=50, max_iter=1500,
                  optimizer="adam", random_state=seed).fit(X, y)
        ll[q_w] = m.predict_log_density(Xt, yt).mean()
    assert ll["quadrature"] >= gp + 0.3
    assert ll["amortized"] >= gp + 0.3
    assert ll["quadrature"] >= ll["amortized"] - 0.02
    assert max(ll.values()) <= oracle


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("dataset", ["yacht", "energy", "boston", "concrete", "wine_red"])
def test_uci_not_worse_than_gp(shared_data, dataset):
    """Acceptance: quadrature GPCDE is not worse than the GP by more than 0.02 nats (split 0).

    Reduced protocol of examples/plot_gpcde_uci.py as run for RESULTS.md (M = 50, H = 20, L-BFGS
    300 iterations, default ``init="auto"``); every dataset of that run. As in the thesis (and
    inside GPCDE) the GP sees inputs and targets standardised with the training statistics.
    """
    import gzip

    path = shared_data / "uci_hl" / f"{dataset}.csv.gz"
    with gzip.open(path, "rt") as fh:
        header = fh.readline().strip().split(",")
    A = np.loadtxt(path, delimiter=",", skiprows=1)
    n_data = sum(not c.startswith("test_") for c in header)
    X, y, te = A[:, :n_data - 1], A[:, n_data - 1], A[:, n_data].astype(bool)
    X = X[:, X[~te].std(axis=0) > 0]
    scaler = StandardScaler().fit(X[~te])
    gp = SparseGPRegressor(n_inducing=50, normalize_y=True, random_state=0).fit(
        scaler.transform(X[~te]), y[~te])
    m = GPCDE(n_inducing=50, gh_order=20, optimizer="lbfgs", natgrad_gamma=None,
              max_iter=300, random_state=0).fit(X[~te], y[~te])
    # the bound of the parameters kept, recomputed, is not below the switched-off one
    assert _fitted_bound(m, X[~te], y[~te]) >= m.gp_elbo_ - 1e-9 * abs(m.gp_elbo_)
    ll_gp = gp.predict_log_density(scaler.transform(X[te]), y[te]).mean()
    assert m.predict_log_density(X[te], y[te]).mean() >= ll_gp - 0.02


def _two_branches(n, seed, bimodal):
    r = np.random.default_rng(seed)
    x = r.uniform(-2, 2, n)
    if bimodal:
        y = np.where(r.random(n) < 0.5, 1, -1) * (np.sin(2 * x) + 1) + 0.1 * r.standard_normal(n)
    else:
        y = np.sin(2 * x) + 0.3 * r.standard_normal(n)
    return x[:, None], y


@pytest.mark.parametrize("bimodal", [True, False])
def test_default_init_uses_the_latent_when_the_density_is_bimodal(bimodal):
    """init="auto" (the default): a bimodal conditional density is found (it was not from the
    GP start: the latent stayed off), and a unimodal one gives the GP's density."""
    X, y = _two_branches(200, 0, bimodal)
    Xt, yt = _two_branches(500, 100, bimodal)
    gp = SparseGPRegressor(n_inducing=20, random_state=0).fit(X, y)
    ll_gp = gp.predict_log_density(Xt, yt).mean()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = GPCDE(n_inducing=20, max_iter=300, learning_rate=0.03, random_state=0).fit(X, y)
    ll = m.predict_log_density(Xt, yt).mean()
    assert m.latent_used_ is bimodal
    if bimodal:
        assert ll >= ll_gp + 0.3
    else:
        assert ll >= ll_gp - 0.02


def test_lbfgs_fit_ending_noise_only_runs_again_after_adam_steps():
    """``optimizer="auto"``: L-BFGS-B from the prior start ends in the noise-only optimum on
    this seed (signal variance at its lower bound, as ``optimizer="lbfgs"`` shows); the fit
    is run again after 200 full-batch Adam steps and then uses the latent."""
    X, y = _two_branches(100, 0, True)
    Xt, yt = _two_branches(500, 100, True)
    kw = {"n_inducing": 20, "max_iter": 400, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plain = GPCDE(optimizer="lbfgs", **kw).fit(X, y)
        auto = GPCDE(**kw).fit(X, y)
    assert plain._model.noise_only(plain._x) and plain.n_iter_ < 400
    assert auto.optimizer_ == "lbfgs" and auto.latent_used_ and not auto._model.noise_only(auto._x)
    assert plain.n_iter_ + 200 < auto.n_iter_ <= 400  # both runs counted, within max_iter
    assert auto.elbo_ > plain.elbo_ + 10
    gain = auto.predict_log_density(Xt, yt).mean() - plain.predict_log_density(Xt, yt).mean()
    assert gain >= 0.3


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_defaults_find_the_two_branches(seed):
    """The defaults on 400 rows of the symmetric two-branch density (whose sparse GP is the
    noise-only model): the latent is used and the held-out density beats the GP's by 0.3
    nats or more. Without the second run after Adam steps, seed 0 ended in the noise-only
    optimum (-1.609 nats, the GP's); measured -0.004 with it."""
    X, y = _two_branches(400, seed, True)
    Xt, yt = _two_branches(1000, 100 + seed, True)
    ll_gp = SparseGPRegressor(random_state=0).fit(X, y).predict_log_density(Xt, yt).mean()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = GPCDE(random_state=0).fit(X, y)
    assert m.latent_used_
    assert m.predict_log_density(Xt, yt).mean() >= ll_gp + 0.3


@pytest.mark.parametrize("whiten", [True, False])
def test_return_cov_is_the_joint_predictive_covariance(whiten):
    """Off the diagonal: the node-averaged posterior covariance of the latent GP (dense,
    textbook formula); on it: the mixture variance of ``predict(return_std=True)``."""
    X, y = _two_branches(60, 1, True)
    m = GPCDE(n_inducing=8, gh_order=4, max_iter=40, whiten=whiten, init="prior",
              random_state=0).fit(X, y)
    Xn = np.array([[-1.0], [0.2], [0.25], [1.5]])
    mean, cov = m.predict(Xn, return_cov=True)
    mean2, std = m.predict(Xn, return_std=True)
    np.testing.assert_allclose(mean, mean2)
    np.testing.assert_allclose(np.diag(cov), std ** 2, rtol=1e-10)
    assert np.all(np.linalg.eigvalsh(cov) > -1e-8)
    # reference: dense K_uu^-1, explicit double sum over the nodes
    Xs = (Xn - m.X_mean_) / m.X_scale_
    k, Z, R = m.kernel_, m.inducing_inputs_, m.q_sqrt_[0]
    Kuu = k.K(Z) + m.jitter * np.mean(np.diag(k.K(Z))) * np.eye(Z.shape[0])
    Luu = np.linalg.cholesky(Kuu)
    w = np.exp(m._logw)
    nodes = m._nodes
    ref = np.zeros((4, 4))
    for i in range(4):
        for j in range(4):
            P = np.hstack([np.full((len(nodes), 1), Xs[i, 0]), nodes])
            Q = np.hstack([np.full((len(nodes), 1), Xs[j, 0]), nodes])
            Kpq, Kzp, Kzq = k.K(P, Q), k.K(Z, P), k.K(Z, Q)
            if whiten:
                Ap, Aq = np.linalg.solve(Luu, Kzp), np.linalg.solve(Luu, Kzq)
                post = Kpq - Ap.T @ Aq + (R.T @ Ap).T @ (R.T @ Aq)
            else:
                Bp, Bq = np.linalg.solve(Kuu, Kzp), np.linalg.solve(Kuu, Kzq)
                post = Kpq - Kzp.T @ Bq + (R.T @ Bp).T @ (R.T @ Bq)
            ref[i, j] = w @ post @ w
    ref *= m.y_scale_[0] ** 2
    off = ~np.eye(4, dtype=bool)
    np.testing.assert_allclose(cov[off], ref[off], rtol=1e-6, atol=1e-10)
    with pytest.raises(ValueError, match="At most one"):
        m.predict(Xn, return_std=True, return_cov=True)


def test_return_cov_refused_with_a_projection():
    X, y = _two_branches(40, 0, True)
    m = GPCDE(n_inducing=5, max_iter=5, input_projection_dim=1, n_predict_samples=5,
              random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="return_cov is available without input_projection_dim"):
        m.predict(X[:3], return_cov=True)


# ------------------------------------------------------------------------- early stopping
def test_early_stopping_stops_on_the_held_out_density_and_keeps_the_best_state():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(120, 1))
    y = rng.standard_normal(120)  # no signal: the held-out density stops improving soon
    m = GPCDE(n_inducing=10, max_iter=3000, learning_rate=0.05, early_stopping=True,
              n_iter_no_change=2, gh_order=5, init="prior", random_state=0).fit(X, y)
    assert m.n_iter_ < 3000
    scores = m.validation_scores_
    assert scores.shape == (m.n_iter_ // 100,) and np.all(np.isfinite(scores))
    # the kept state is the best check's: re-score it on the same held-out rows
    perm = np.random.RandomState(0).permutation(120)
    held = perm[:12]
    Xs = (X - m.X_mean_) / m.X_scale_
    Ys = ((y - m.y_mean_) / m.y_scale_).reshape(-1, 1)
    kept = CDEPredictive.from_prior(m._model, m._x, m.gh_order, m.n_predict_samples,
                                    np.random.RandomState(0)).log_density(Xs[held], Ys[held])
    kept = np.mean(kept)
    np.testing.assert_allclose(kept, scores.max(), rtol=1e-10)


def test_early_stopping_parameter_checks():
    X = np.linspace(-1, 1, 30)[:, None]
    y = np.sin(3 * X[:, 0])
    with pytest.raises(ValueError, match="early_stopping applies to optimizer='adam'"):
        GPCDE(early_stopping=True, optimizer="lbfgs", n_inducing=5).fit(X, y)
    with pytest.raises(ValueError, match="validation_fraction must be < 1"):
        GPCDE(early_stopping=True, validation_fraction=1.0, n_inducing=5).fit(X, y)
    with pytest.raises(ValueError, match="rows left for training"):
        GPCDE(early_stopping=True, validation_fraction=0.5, n_inducing=20).fit(X, y)
    assert GPCDE(n_inducing=5, max_iter=5).fit(X, y).validation_scores_ is None


# ----------------------------------------------------------------------------- warm start
def test_warm_start_continues_the_previous_fit_exactly():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(200, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(200)
    kw = dict(n_inducing=10, tol=None, random_state=0, init="prior", batch_size=None, gh_order=5,
              optimizer="adam")
    once = GPCDE(max_iter=400, **kw).fit(X, y)
    twice = GPCDE(max_iter=200, warm_start=True, **kw).fit(X, y)
    twice.fit(X, y)
    assert twice.n_iter_ == 400 and twice.elbo_history_.shape == (400,)
    np.testing.assert_array_equal(twice._x, once._x)
    np.testing.assert_array_equal(twice.predict(X[:5]), once.predict(X[:5]))
    # other data shapes start afresh
    twice.fit(X[:150], y[:150])
    assert twice.n_iter_ == 200
    # without warm_start a refit starts afresh too
    cold = GPCDE(max_iter=200, **kw).fit(X, y)
    assert cold.fit(X, y).n_iter_ == 200


# ------------------------------------------------------------------------------- optimiser
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("params, expected", [
    ({}, "lbfgs"),
    ({"batch_size": 16}, "adam"),
    ({"q_w": "amortized"}, "adam"),
    ({"q_w": "gaussian", "expectation": "unscented"}, "lbfgs"),
    ({"early_stopping": True, "validation_fraction": 0.2}, "adam"),
    ({"input_projection_dim": 1}, "adam"),
    ({"optimizer": "adam"}, "adam"),
])
def test_auto_optimizer_is_lbfgs_for_a_deterministic_full_batch(data, params, expected):
    kw = {**FAST, "optimizer": "auto", "max_iter": 5, "n_predict_samples": 5, **params}
    assert GPCDE(**kw).fit(*data).optimizer_ == expected
