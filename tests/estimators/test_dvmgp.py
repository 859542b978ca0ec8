"""DVMGP: correctness checks, estimator behaviour, bad input, Table 4 of de Souza (2020)."""

import math

import numpy as np
import pytest
from reference import checks_since_last_gain  # tests/ is on sys.path

from sklearn_lvgp.bounds._collapsed_global import collapsed_bound
from sklearn_lvgp.bounds._dvmgp import dvmgp_objective, qv_cholesky
from sklearn_lvgp.datasets import make_two_parabolas, two_parabolas_split
from sklearn_lvgp.models._dvmgp import DVMGP
from sklearn_lvgp.variational._projection import (
    latent_moments,
    output_kernel,
    output_psi,
    projection_forward,
    projection_kernels,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

FAST = {"n_inducing": 10, "n_inducing_projection": 5, "n_iter_fixed_noise": 20, "max_iter": 60,
        "random_state": 0}


def _layer(rng, n=3, D=2, Q=2, m_v=4, m_u=5):
    X = rng.standard_normal((n, D))
    Xi = rng.standard_normal((m_v, D))
    mu = rng.standard_normal((Q, m_v, D))
    chol = 0.3 + 0.5 * rng.random((Q, m_v))
    kernels = projection_kernels(0.3 * rng.standard_normal((Q, 1 + D)))
    zeta = rng.standard_normal((m_u, Q))
    return X, Xi, mu, chol, kernels, zeta


# ------------------------------------------------------------------------------ data fixture
def test_two_parabolas_fixture():
    X, y = make_two_parabolas()
    assert X.shape == (500, 2) and y.shape == (500,)
    np.testing.assert_allclose(X[0], [-1.2972758242, 0.8814771236], atol=1e-10)
    np.testing.assert_allclose(X[250], [2.5982258035, 1.1090098114], atol=1e-10)
    np.testing.assert_allclose(y[:250], X[:250, 0] ** 2 + X[:250, 0])
    np.testing.assert_allclose(y[250:], X[250:, 1] ** 2 + X[250:, 1])
    Xtr, Xte, ytr, yte = two_parabolas_split()
    assert Xtr.shape == Xte.shape == (250, 2)
    np.testing.assert_array_equal(Xte[:5], X[[3, 4, 5, 6, 7]])
    np.testing.assert_array_equal(Xtr[:5], X[[0, 1, 2, 9, 10]])
    np.testing.assert_allclose(Xtr.mean(axis=0), [0.4844035658, 1.0415811466], atol=1e-10)
    np.testing.assert_allclose(Xtr.std(axis=0), [1.646477259, 0.642834008], atol=1e-9)
    np.testing.assert_allclose([ytr.mean(), ytr.std()], [1.5862056790, 1.9758411234],
                               atol=1e-10)


# ------------------------------------------------------------------------------ Ψ-statistics
def _psi_direct(zeta, h, eta, sf):
    """DVMGP Ψ-statistics (de Souza 2020, §4.3.1) entry by entry (independent of the Ψ code)."""
    n, Q = h.shape
    m = zeta.shape[0]
    Psi1 = np.empty((n, m))
    Psi2 = np.zeros((n, m, m))
    for i in range(n):
        for j in range(m):
            Psi1[i, j] = sf * np.prod((1 + eta[i]) ** -0.5
                                      * np.exp(-(h[i] - zeta[j]) ** 2 / (2 * (1 + eta[i]))))
            for k in range(m):
                zbar = 0.5 * (zeta[j] + zeta[k])
                Psi2[i, j, k] = sf ** 2 * np.prod(
                    (1 + 2 * eta[i]) ** -0.5 * np.exp(-(zeta[j] - zeta[k]) ** 2 / 4
                                                      - (h[i] - zbar) ** 2 / (1 + 2 * eta[i])))
    return Psi1, Psi2


def test_psi_closed_form_matches_formula_and_monte_carlo(rng):
    X, Xi, mu, chol, kernels, zeta = _layer(rng)
    sf = 1.3
    a, b, _, _ = projection_forward(X, Xi, mu, chol, kernels)
    h, eta = latent_moments(a, b, X)
    stats, _ = output_psi(zeta, h, eta, sf, per_point=True)
    P1, P2 = _psi_direct(zeta, h, eta, sf)
    # the shared code evaluates the scale-equivalent GPLVM form (K_u = σ_f² SRBF), i.e. σ_f
    # times the Ψ1 of de Souza 2020, §4.3.1, and σ_f² times its Ψ2
    np.testing.assert_allclose(stats.Psi1, sf * P1, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(stats.Psi2, sf ** 2 * P2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(stats.psi0, sf ** 2)
    summed, _ = output_psi(zeta, h, eta, sf)
    np.testing.assert_allclose(summed.Psi2, sf ** 2 * P2.sum(axis=0), rtol=1e-12)
    # Monte Carlo over the q(W) marginals: w_qd(x_i) ~ N(a_iqd, b_iq), z_i = W_i x_i
    S = 200_000
    for i in range(X.shape[0]):
        W = a[i][None] + np.sqrt(b[i])[None, :, None] * rng.standard_normal((S,) + a[i].shape)
        z = W @ X[i]
        K = sf * np.exp(-0.5 * np.sum((z[:, None, :] - zeta[None]) ** 2, axis=2))
        KK = K[:, :, None] * K[:, None, :]
        for est, ref in ((K, P1[i]), (KK, P2[i])):
            se = est.std(axis=0) / math.sqrt(S)
            assert np.all(np.abs(est.mean(axis=0) - ref) <= 4 * se + 1e-12)


# ------------------------------------------------------------------------------ scale invariance
def test_bound_scale_invariance(rng):
    X, Xi, mu, chol, kernels, zeta = _layer(rng, n=12)
    a, b, _, _ = projection_forward(X, Xi, mu, chol, kernels)
    h, eta = latent_moments(a, b, X)
    stats, _ = output_psi(zeta, h, eta, 1.0)
    Kuu = output_kernel(1.0, 2).K(zeta)
    Y = rng.standard_normal((12, 1))
    F1, _ = collapsed_bound(Y, stats.psi0, stats.Psi1, stats.Psi2, Kuu, 0.1)
    c = 2.7
    F2, _ = collapsed_bound(Y, stats.psi0, c * stats.Psi1, c * c * stats.Psi2, c * c * Kuu, 0.1)
    assert abs(F1 - F2) <= 1e-10 * max(1.0, abs(F1))


# ------------------------------------------------------------------------------ B-form
def test_bform_equals_direct_logdet_form(rng):
    n, s2, jit = 12, 0.07, 1e-6
    X, Xi, mu, chol, kernels, zeta = _layer(rng, n=n)
    a, b, _, _ = projection_forward(X, Xi, mu, chol, kernels)
    h, eta = latent_moments(a, b, X)
    sf = 1.4
    st, _ = output_psi(zeta, h, eta, sf)
    Ku = output_kernel(sf, 2).K(zeta)
    Y = rng.standard_normal((n, 2))
    F, _ = collapsed_bound(Y, st.psi0, st.Psi1, st.Psi2, Ku, s2, jitter=jit)
    # the collapsed bound (de Souza 2020, app. A.1, log-determinant signs corrected) with the
    # jitter the bound adds to K_u
    Kj = Ku + jit * np.mean(np.diag(Ku)) * np.eye(Ku.shape[0])
    A = s2 * Kj + st.Psi2
    Dy, m = Y.shape[1], Ku.shape[0]
    direct = (-0.5 * n * Dy * np.log(2 * np.pi) - 0.5 * Dy * (n - m) * np.log(s2)
              + 0.5 * Dy * np.linalg.slogdet(Kj)[1] - 0.5 * Dy * np.linalg.slogdet(A)[1]
              - np.sum(Y * Y) / (2 * s2)
              + np.trace(Y.T @ st.Psi1 @ np.linalg.solve(A, st.Psi1.T @ Y)) / (2 * s2)
              - Dy * st.psi0 / (2 * s2) + Dy * np.trace(np.linalg.solve(Kj, st.Psi2)) / (2 * s2))
    assert abs(F - direct) <= 1e-10 * abs(direct)


# ------------------------------------------------------------------------------ deterministic W
def test_deterministic_w_reduces_to_sgpr(rng):
    """Ξ = X, c → 0: the ELBO plus KL is the SGPR bound at z_i = W_i x_i with W_i from μ."""
    n, D, Q, m_u, jit = 8, 2, 2, 5, 1e-10
    X = 2.0 * rng.standard_normal((n, D))
    Y = rng.standard_normal((n, 1))
    wtheta = np.zeros((Q, 1 + D))
    wtheta[:, 1:] = np.log(0.3)  # short length scales: K_v = k(X, X) is well conditioned
    p = {"zeta": rng.standard_normal((m_u, Q)), "Xi": X.copy(),
         "mu": rng.standard_normal((Q, n, D)), "c_diag": np.full((Q, n), 1e-8),
         "wtheta": wtheta, "signal_std": 1.2, "noise": 0.05}
    elbo, _, _ = dvmgp_objective(X, Y, p, jit, "diag")
    kl = projection_forward(X, X, p["mu"], p["c_diag"], projection_kernels(wtheta), jit)[2]
    z = np.einsum("qnd,nd->nq", p["mu"], X)  # W_i = μ[:, i, :] at training input i
    kern = output_kernel(p["signal_std"], Q)
    Kfu = kern.K(z, p["zeta"])
    sgpr, _ = collapsed_bound(Y, n * 1.2 ** 2, Kfu, Kfu.T @ Kfu, kern.K(p["zeta"]), 0.05,
                              jitter=jit)
    assert abs(elbo + kl - sgpr) <= 1e-5 * abs(sgpr)


# ------------------------------------------------------------------------------ estimator
@pytest.fixture(scope="module")
def small_fit():
    Xtr, Xte, ytr, yte = two_parabolas_split(n_per_cluster=40)
    model = DVMGP(**FAST).fit(Xtr, ytr)
    return model, Xtr, Xte, ytr, yte


def test_fitted_attributes_and_shapes(small_fit):
    model, Xtr, Xte, ytr, _ = small_fit
    Q, D = 2, 2
    assert model.inducing_inputs_.shape == (10, Q)
    assert model.inducing_inputs_projection_.shape == (5, D)
    assert model.qv_mean_.shape == (Q, D, 5)
    assert model.qv_chol_.shape == (Q, 5)
    assert len(model.projection_kernels_) == Q
    np.testing.assert_allclose(model.relevance_,
                               [float(k.variance) for k in model.projection_kernels_])
    assert model.n_iter_ <= 80 and model.elbo_history_.shape == (model.n_iter_,)
    assert np.all(np.isfinite(model.elbo_history_))
    mean, std = model.predict(Xte, return_std=True)
    assert mean.shape == std.shape == (Xte.shape[0],) and np.all(std > 0)
    h, h_std = model.transform(Xte, return_std=True)
    assert h.shape == h_std.shape == (Xte.shape[0], Q) and np.all(h_std >= 0)
    assert model.sample_y(Xte[:3], n_samples=4, random_state=0).shape == (3, 4)


def test_predict_is_deterministic_and_predict_log_density_is_gaussian_log_density(small_fit):
    model, _, Xte, _, yte = small_fit
    m1, s1 = model.predict(Xte, return_std=True)
    m2, s2 = model.predict(Xte, return_std=True)
    np.testing.assert_array_equal(m1, m2)
    np.testing.assert_array_equal(s1, s2)
    ref = -0.5 * np.log(2 * np.pi * s1 ** 2) - 0.5 * (yte - m1) ** 2 / s1 ** 2
    np.testing.assert_allclose(model.predict_log_density(Xte, yte), ref, rtol=1e-12)
    # rows are independent: a subset or a permutation gives the same numbers
    np.testing.assert_allclose(model.predict(Xte[5:9]), m1[5:9], rtol=1e-12)
    lp = model.predict_log_density(Xte, yte)
    np.testing.assert_allclose(model.predict_log_density(Xte[5:9], yte[5:9]), lp[5:9], rtol=1e-12)
    perm = np.random.default_rng(0).permutation(Xte.shape[0])
    np.testing.assert_allclose(model.predict_log_density(Xte[perm], yte[perm]), lp[perm],
                               rtol=1e-12)


def test_predictive_moments_match_sample_y(small_fit):
    """The predictive moments (de Souza 2020, §4.3.1) equal those of W ~ q(W), f | W, noise
    (1e5 draws)."""
    model, _, Xte, _, _ = small_fit
    x = Xte[[0, 17]]
    mean, std = model.predict(x, return_std=True)
    S = 100_000
    draws = model.sample_y(x, n_samples=S, random_state=1)
    for i in range(2):
        d = draws[i]
        se_mean = d.std() / math.sqrt(S)
        assert abs(d.mean() - mean[i]) <= 4 * se_mean
        c = d - d.mean()
        se_var = math.sqrt((np.mean(c ** 4) - np.mean(c ** 2) ** 2) / S)
        assert abs(d.var() - std[i] ** 2) <= 4 * se_var


def test_transform_is_mean_projection(small_fit):
    """transform(x) = E[W(x)] x on the standardised input (the map of de Souza 2020, Fig. 7)."""
    model, _, Xte, _, _ = small_fit
    Xs = (Xte - model.X_mean_) / model.X_scale_
    a, b, _, _ = projection_forward(Xs, model.inducing_inputs_projection_,
                                    np.swapaxes(model.qv_mean_, 1, 2), model.qv_chol_,
                                    model.projection_kernels_, model._jitter)
    np.testing.assert_allclose(model.transform(Xte), np.einsum("nqd,nd->nq", a, Xs),
                               rtol=1e-12)


def test_noise_is_fixed_during_the_first_phase():
    X, _, y, _ = two_parabolas_split(n_per_cluster=20)
    base = {**FAST, "optimizer": "adam", "learning_rate": 0.05}
    frozen = DVMGP(**{**base, "n_iter_fixed_noise": 30, "max_iter": 1}).fit(X, y)
    free = DVMGP(**{**base, "n_iter_fixed_noise": 0, "max_iter": 31}).fit(X, y)
    log0 = math.log(0.01)
    # one Adam step moves log σ² by at most the learning rate (plus ε-slack)
    assert abs(math.log(frozen.noise_variance_) - log0) <= 0.05 * 1.001
    assert abs(math.log(free.noise_variance_) - log0) > 0.2
    assert frozen.n_iter_ == free.n_iter_ == 31


def test_lbfgs_second_phase_does_not_lower_the_bound():
    X, _, y, _ = two_parabolas_split(n_per_cluster=30)
    model = DVMGP(**{**FAST, "n_iter_fixed_noise": 15, "max_iter": 30}).fit(X, y)
    hist = model.elbo_history_
    assert hist[-1] >= hist[14] - 1e-8
    assert model.elbo_ == pytest.approx(hist[-1], rel=1e-6)


@pytest.mark.parametrize("kind", ["diag", "full"])
def test_multi_output_and_qv_covariance(rng, kind):
    X = rng.standard_normal((40, 3))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2]])
    model = DVMGP(**{**FAST, "qv_covariance": kind, "n_components": 2}).fit(X, Y)
    assert model.predict(X).shape == (40, 2)
    assert model.transform(X).shape == (40, 2)
    assert model.sample_y(X[:2], n_samples=3, random_state=0).shape == (2, 2, 3)
    assert model.predict_log_density(X, Y).shape == (40,)
    expected = (2, 5) if kind == "diag" else (2, 5, 5)
    assert model.qv_chol_.shape == expected
    if kind == "full":
        assert np.all(np.triu(model.qv_chol_, 1) == 0)


def test_projection_length_scale_init_rule():
    """Default W-kernel length scales: the paper's 1 at D = 2, sqrt(D / 2) above."""
    est = DVMGP()
    assert est._length_scale_init(1) == est._length_scale_init(2) == 1.0
    assert est._length_scale_init(8) == pytest.approx(2.0)
    assert DVMGP(projection_length_scale_init=3.0)._length_scale_init(8) == 3.0
    X, _, y, _ = two_parabolas_split(n_per_cluster=20)
    model = DVMGP(**{**FAST, "max_iter": 1, "n_iter_fixed_noise": 0,
                     "projection_length_scale_init": 0.7}).fit(X, y)
    for k in model.projection_kernels_:
        np.testing.assert_allclose(k.length_scale, 0.7, rtol=0.05)


def test_without_normalisation(rng):
    X = rng.standard_normal((30, 2))
    y = 10.0 + 3.0 * np.sin(X[:, 0])
    model = DVMGP(**{**FAST, "normalize_X": "none", "normalize_y": False}).fit(X, y)
    np.testing.assert_array_equal(model.y_mean_, [0.0])
    np.testing.assert_array_equal(model.X_scale_, [1.0, 1.0])
    assert model.predict(X).shape == (30,)


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("params, err, match", [
    ({"n_inducing": 31}, ValueError, "n_inducing=31"),
    ({"n_inducing_projection": 31}, ValueError, "n_inducing_projection=31"),
    ({"n_components": 0}, ValueError, "n_components"),
    ({"n_components": 1.5}, TypeError, "n_components"),
    ({"qv_covariance": "dense"}, ValueError, "qv_covariance"),
    ({"optimizer": "sgd"}, ValueError, "optimizer"),
    ({"noise_variance_init": 0.0}, ValueError, "noise_variance_init"),
    ({"learning_rate": -1.0}, ValueError, "learning_rate"),
    ({"n_iter_fixed_noise": -1}, ValueError, "n_iter_fixed_noise"),
    ({"normalize_y": "yes"}, TypeError, "normalize_y"),
])
def test_bad_parameters(rng, params, err, match):
    X = rng.standard_normal((30, 2))
    with pytest.raises(err, match=match):
        DVMGP(**{**FAST, **params}).fit(X, X[:, 0])


def test_bad_data(rng, small_fit):
    X = rng.standard_normal((30, 2))
    Xnan = X.copy()
    Xnan[0, 0] = np.nan
    with pytest.raises(ValueError):
        DVMGP(**FAST).fit(Xnan, X[:, 0])
    with pytest.raises(ValueError):
        DVMGP(**FAST).fit(X, X[:-1, 0])
    model = small_fit[0]
    with pytest.raises(ValueError):
        model.predict(np.ones((3, 3)))
    with pytest.raises(ValueError, match="target column"):
        model.predict_log_density(small_fit[2], np.ones((small_fit[2].shape[0], 2)))


# ------------------------------------------------------------------------------ Table 4
def _table4_metrics(model, X, y):
    mean = model.predict(X)
    return (-float(np.mean(model.predict_log_density(X, y))),
            float(np.mean(np.abs(y - mean) / np.abs(y))), float(np.sqrt(np.mean((y - mean) ** 2))))


def _sgpr_table4(Xtr, Xte, ytr, yte):
    from sklearn.cluster import KMeans

    from sklearn_lvgp import SparseGPRegressor
    from sklearn_lvgp.kernels import RBF

    m, s = Xtr.mean(axis=0), Xtr.std(axis=0)
    Z0 = KMeans(50, n_init=100, random_state=19960111).fit((Xtr - m) / s).cluster_centers_
    sgpr = SparseGPRegressor(kernel=RBF(length_scale=np.ones(2), variance=1.0),
                             inducing_inputs=Z0, noise_variance_init=0.01, normalize_y=True,
                             max_iter=2000, random_state=0).fit((Xtr - m) / s, ytr)
    return _table4_metrics(sgpr, (Xte - m) / s, yte)


@pytest.mark.slow  # 19 s: the DVMGP-vs-SGP claim stays in the default suite as a seed-tier test
def test_table4_synthetic_reduced_schedule():
    """Table 4 (de Souza 2020: DVMGP NLPD −1.883, RMSE 0.129, MRAE 0.040; SGPR 0.041, 0.215,
    0.188) with L-BFGS-B (500 iterations noise fixed + 2000), within the acceptance bands of
    our reproduction protocol: DVMGP RMSE ≤ 0.16, MRAE ≤ 0.08, better than SGPR on all three
    metrics, relevance ratio ≥ 3.

    Three fits, from the paper's K-means seed and seeds 0 and 1. The test NLPD of one fit is
    set by the few test points where the clusters overlap (the DVMGP user guide, "Cost and
    limits") and moves when the last bits of the arithmetic change (inputs scaled by
    1 ± 1e-13, or another BLAS kernel), so it is asserted on the majority of the fits and
    the other claims on every fit. Over the K-means seeds 19960111 and 0-9, each with
    OpenBLAS's Haswell, SkylakeX and Sandybridge kernels (33 fits), the NLPD ranges from
    −1.64 to +0.22 (median −0.86): below the SGPR's on 32 fits, but ≤ −1 on only 13, so the
    dissertation's NLPD is not a claim of this schedule. RMSE and MRAE are within their bands
    on 31 (the other two, seeds 3 and 9 with SkylakeX kernels, end in a lower optimum of
    the bound: 320 and 330 against 500-605) and on all nine fits of the three seeds here.
    """
    Xtr, Xte, ytr, yte = two_parabolas_split()
    sgpr = _sgpr_table4(Xtr, Xte, ytr, yte)
    # SGPR reproduces its Table 4 row (0.041, 0.188, 0.215) within our reproduction protocol's
    # tolerances
    assert abs(sgpr[0] - 0.04) <= 0.15 and abs(sgpr[1] - 0.19) <= 0.04
    assert abs(sgpr[2] - 0.215) <= 0.03
    nlpd_wins = 0
    for seed in (19960111, 0, 1):
        model = DVMGP(n_inducing=50, n_inducing_projection=25, n_iter_fixed_noise=500,
                      max_iter=2000, random_state=seed).fit(Xtr, ytr)
        nlpd, mrae, rmse = _table4_metrics(model, Xte, yte)
        assert rmse <= 0.16 and mrae <= 0.08, (seed, nlpd, mrae, rmse)
        assert mrae < sgpr[1] and rmse < sgpr[2], (seed, mrae, rmse, sgpr)
        assert model.relevance_.max() / model.relevance_.min() >= 3.0
        assert np.all(np.isfinite(model.elbo_history_))
        nlpd_wins += nlpd < sgpr[0]
    assert nlpd_wins >= 2


@pytest.mark.slow
def test_table4_synthetic_paper_schedule():
    """The paper's Adam schedule (lr 0.01; 2000 steps noise fixed, then 5000; de Souza 2020,
    §4.4)."""
    Xtr, Xte, ytr, yte = two_parabolas_split()
    model = DVMGP(optimizer="adam", learning_rate=0.01, n_iter_fixed_noise=2000, max_iter=5000,
                  random_state=19960111).fit(Xtr, ytr)
    nlpd, mrae, rmse = _table4_metrics(model, Xte, yte)
    sgpr = _sgpr_table4(Xtr, Xte, ytr, yte)
    assert nlpd <= -1.0 and mrae <= 0.08, (nlpd, mrae, rmse)
    assert nlpd < sgpr[0] and mrae < sgpr[1]
    assert model.relevance_.max() / model.relevance_.min() >= 3.0
    hist = model.elbo_history_
    assert np.all(np.isfinite(hist)) and hist.size == 7000
    # the final phase-2 bound is not below the final phase-1 bound (up to Adam noise, ~1 nat)
    assert hist[-1] >= hist[1999] - 1.0


@pytest.mark.slow
def test_table4_ds_dgp2_column():
    """de Souza (2020), Table 4: DVMGP (RMSE 0.129, MRAE 0.040) ahead of the two-layer
    doubly-stochastic deep GP (0.297, 0.318) on the dissertation's split. With DVMGP's
    defaults and ``DeepGP(n_layers=2, n_inducing=50, max_iter=7000, tol=None)`` on
    standardised inputs (``benchmarks/seed_dsdgp_vs_dvmgp.py``) the measured values are
    0.118 / 0.036 against 0.277 / 0.160; the deep GP's RMSE is within 0.05 of the
    dissertation's. On data seeds 0-4 the RMSE ranking does not hold (DVMGP ahead on 2 of 5,
    ``examples/output/seed_experiments.md``), so only this split is asserted."""
    from sklearn_lvgp import DeepGP

    Xtr, Xte, ytr, yte = two_parabolas_split()
    dvmgp = DVMGP(random_state=0).fit(Xtr, ytr)
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    dgp = DeepGP(n_layers=2, n_inducing=50, max_iter=7000, tol=None,
                 random_state=0).fit((Xtr - mu) / sd, ytr)
    rmse = [np.sqrt(np.mean((m - yte) ** 2))
            for m in (dvmgp.predict(Xte), dgp.predict((Xte - mu) / sd))]
    mrae = [np.mean(np.abs(m - yte) / np.abs(yte))
            for m in (dvmgp.predict(Xte), dgp.predict((Xte - mu) / sd))]
    assert rmse[0] < 0.15 and rmse[0] < 0.6 * rmse[1], rmse
    assert abs(rmse[1] - 0.297) < 0.05, rmse
    assert mrae[0] < 0.5 * mrae[1], mrae


# ------------------------------------------------------------------------------ Table 5
#: de Souza (2020), Table 5: DVMGP NLPD / MRAE and the SGPR NLPD.
_TABLE5 = {"boston": (2.444, 0.109, 2.563), "concrete": (3.070, 0.127, 3.255),
           "energy": (0.735, 0.017, 1.945), "wine_red": (0.963, 0.090, 0.959)}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_TABLE5))
def test_table5_uci(shared_data, name):
    """5-fold CV (KFold(5, shuffle, 19960111)); L-BFGS-B schedule 100 (noise fixed) + 500; the
    energy target is the heating load (the only one in ``uci_hl``)."""
    import gzip

    from sklearn.cluster import KMeans
    from sklearn.model_selection import KFold

    from sklearn_lvgp import SparseGPRegressor
    from sklearn_lvgp.kernels import RBF

    path = shared_data / "uci_hl" / f"{name}.csv.gz"
    with gzip.open(path, "rt") as fh:
        n_data = sum(not c.startswith("test_") for c in fh.readline().strip().split(","))
    A = np.loadtxt(path, delimiter=",", skiprows=1)
    X, y = A[:, :n_data - 1], A[:, n_data - 1]
    dv, sg = [], []
    for train, test in KFold(5, shuffle=True, random_state=19960111).split(X):
        model = DVMGP(n_iter_fixed_noise=100, max_iter=500, random_state=19960111)
        model.fit(X[train], y[train])
        dv.append(_table4_metrics(model, X[test], y[test]))
        m, s = X[train].mean(axis=0), X[train].std(axis=0)
        s = np.where(s > 0, s, 1.0)
        Z0 = KMeans(50, n_init=100, random_state=19960111).fit((X[train] - m) / s)
        sgpr = SparseGPRegressor(kernel=RBF(length_scale=np.ones(X.shape[1]), variance=1.0),
                                 inducing_inputs=Z0.cluster_centers_, noise_variance_init=0.01,
                                 normalize_y=True, max_iter=1000, random_state=0)
        sgpr.fit((X[train] - m) / s, y[train])
        sg.append(_table4_metrics(sgpr, (X[test] - m) / s, y[test]))
    dv, sg = np.mean(dv, axis=0), np.mean(sg, axis=0)
    nlpd, mrae, sgpr_nlpd = _TABLE5[name]
    assert abs(dv[0] - nlpd) <= 0.15, dv
    assert abs(dv[1] - mrae) <= (0.005 if name == "energy" else 0.02), dv
    if name == "energy":
        # heating load here; the paper's SGPR (1.945) cannot be from that target: the same SGPR
        # reaches 0.6-0.7 on it, so the SGPR comparisons do not apply (the
        # dissertation does not say which load it used)
        return
    assert abs(sg[0] - sgpr_nlpd) <= 0.15, sg
    if name == "concrete":
        assert dv[0] <= sg[0] - 0.1, (dv, sg)
    if name == "wine_red":
        assert abs(dv[0] - sg[0]) <= 0.05, (dv, sg)


# --------------------------------------------------------------------- joint covariance
def test_return_cov_matches_the_moments_and_a_monte_carlo_over_joint_q_w():
    """``predict(return_cov=True)``: mean and diagonal equal ``predict(return_std=True)``; the
    off-diagonal entries equal a Monte Carlo estimate that draws the latent points of all test
    inputs jointly from q(W) and averages the conditional GP moments."""
    from sklearn_lvgp.bounds._collapsed_global import _weight_matrices
    from sklearn_lvgp.datasets import two_parabolas_split
    from sklearn_lvgp.variational._projection import latent_covariance, projection_kernels

    X, Xt, y, _ = two_parabolas_split(n_per_cluster=60, random_state=3)
    m = DVMGP(n_inducing=10, n_inducing_projection=6, max_iter=100, random_state=0).fit(X, y)
    Xq = Xt[:4]
    mean, cov = m.predict(Xq, return_cov=True)
    mean_s, std = m.predict(Xq, return_std=True)
    np.testing.assert_allclose(mean, mean_s, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.diag(cov), std ** 2, rtol=1e-8)
    assert np.allclose(cov, cov.T) and np.linalg.eigvalsh(cov).min() > 0

    # Monte Carlo in normalised units: h ~ N(h, C_q) jointly, then E[Cov(f | h)] + Cov(E[f | h])
    Xs = (Xq - m.X_mean_) / m.X_scale_
    p = m._params
    h, _ = m._predictive().latent(Xs)
    C = latent_covariance(Xs, p["Xi"], p["mu"], qv_cholesky(p, m.qv_covariance),
                          projection_kernels(p["wtheta"]), m._jitter)
    rng = np.random.default_rng(0)
    S, n, Q = 40000, Xq.shape[0], h.shape[1]
    draws = np.empty((S, n, Q))
    for q in range(Q):
        L = np.linalg.cholesky(C[q] + 1e-12 * np.eye(n))
        draws[:, :, q] = h[:, q] + rng.standard_normal((S, n)) @ L.T
    Z, s2f = m.inducing_inputs_, m.signal_std_ ** 2
    Kinv, Cs = _weight_matrices(m._post)
    G = m._post.G[:, 0]

    def k(A, B):
        return s2f * np.exp(-0.5 * np.sum((A[..., :, None, :] - B[..., None, :, :]) ** 2, -1))

    kz = k(draws, Z)  # (S, n, M)
    cond_mean = kz @ G
    cond_cov = k(draws, draws) - np.einsum("snm,ml,sjl->snj", kz, Kinv - Cs, kz)
    mc = cond_cov.mean(0) + np.cov(cond_mean.T, bias=True)
    mc = mc * m.y_scale_[0] ** 2
    off = ~np.eye(n, dtype=bool)
    # Monte Carlo standard error of each entry, from the per-draw contributions
    per_draw = (cond_cov + (cond_mean - cond_mean.mean(0))[:, :, None]
                * (cond_mean - cond_mean.mean(0))[:, None, :]) * m.y_scale_[0] ** 2
    se = per_draw.std(0) / np.sqrt(S)
    assert np.all(np.abs(cov[off] - mc[off]) <= 5 * se[off] + 1e-10), (cov[off], mc[off], se[off])
    with pytest.raises(ValueError, match="At most one of return_std or return_cov"):
        m.predict(Xq, return_std=True, return_cov=True)


# ----------------------------------------------------------------------------- warm start
def test_warm_start_continues_from_the_previous_parameters():
    from sklearn_lvgp.datasets import two_parabolas_split

    X, _, y, _ = two_parabolas_split(n_per_cluster=40, random_state=3)
    kw = dict(n_inducing=8, n_inducing_projection=5, n_iter_fixed_noise=20, random_state=0)
    first = DVMGP(max_iter=30, **kw).fit(X, y)
    cont = DVMGP(max_iter=30, warm_start=True, **kw).fit(X, y)
    np.testing.assert_array_equal(cont.predict(X[:5]), first.predict(X[:5]))
    n1 = cont.n_iter_
    cont.set_params(max_iter=40).fit(X, y)
    # only the second phase runs again, from where the first fit stopped: the bound goes on
    # from its last value and does not fall below it
    assert n1 < cont.n_iter_ <= n1 + 40
    assert cont.elbo_history_.shape == (cont.n_iter_,)
    assert cont.elbo_ >= first.elbo_ - 1e-8
    np.testing.assert_array_equal(cont.X_mean_, first.X_mean_)
    # other shapes, or no warm_start: a fresh fit
    assert DVMGP(max_iter=30, warm_start=True, **kw).fit(X, y).fit(X[:, :1], y).n_iter_ <= 50
    assert DVMGP(max_iter=30, **kw).fit(X, y).fit(X, y).n_iter_ == first.n_iter_


# ------------------------------------------------------------------ tol and early stopping
def _sine_data(n=150):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 2))
    return X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)


ADAM = {"n_inducing": 10, "n_inducing_projection": 5, "optimizer": "adam",
        "learning_rate": 0.05, "max_iter": 3000, "random_state": 0}


def test_adam_early_stopping_keeps_the_best_checked_state():
    X, y = _sine_data()
    m = DVMGP(**ADAM, early_stopping=True).fit(X, y)
    scores = m.validation_scores_
    n_second = m.n_iter_ - m.n_iter_fixed_noise
    assert n_second < 3000 and scores.shape == (n_second // 100,)
    # stopped after n_iter_no_change checks without a gain over the best
    assert checks_since_last_gain(scores) == m.n_iter_no_change
    assert DVMGP(**ADAM).fit(X, y).validation_scores_ is None  # no checks without it


def test_tol_ends_the_adam_phase_when_the_bound_is_flat():
    X, y = _sine_data()
    quick = DVMGP(**ADAM, tol=1e-4).fit(X, y)
    full = DVMGP(**ADAM).fit(X, y)
    assert quick.n_iter_ < full.n_iter_ == 100 + 3000
    h = quick.elbo_history_
    assert h[-100:].mean() - h[-200:-100].mean() <= 1e-4 * abs(h[-200:-100].mean())


def test_early_stopping_parameter_errors():
    X, y = _sine_data(30)
    with pytest.raises(ValueError, match="optimizer='adam'"):
        DVMGP(n_inducing=5, n_inducing_projection=4, early_stopping=True).fit(X, y)
    with pytest.raises(ValueError, match="training rows"):
        DVMGP(**{**ADAM, "n_inducing": 29}, early_stopping=True,
              validation_fraction=0.5).fit(X, y)
    with pytest.raises(ValueError, match="validation_fraction"):
        DVMGP(**ADAM, early_stopping=True, validation_fraction=1.0).fit(X, y)
