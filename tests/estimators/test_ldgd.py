"""LDGD behaviour: API, bad input, reproducibility, small paper checks; full runs under -m slow.

The sklearn conventions and the statistical results (Ziaei et al. 2024, §3) that our
reproduction protocol checks, with its acceptance bands. The gradient checks
are in ``tests/objectives/test_ldgd_grad.py``.
"""

import warnings

import numpy as np
import pytest
from reference import checks_since_last_gain  # tests/ is on sys.path
from sklearn.base import clone
from sklearn.datasets import load_iris, make_blobs
from sklearn.metrics import f1_score
from sklearn.model_selection import KFold, train_test_split

from sklearn_lvgp.bounds._ldgd_objective import preset_factors
from sklearn_lvgp.bounds._ldgd_problem import TrainingProblem
from sklearn_lvgp.datasets._moons import make_ldgd_moons
from sklearn_lvgp.expectations import unscented_rule
from sklearn_lvgp.kernels import RBF, Matern32
from sklearn_lvgp.models._ldgd import LDGD
from sklearn_lvgp.nn._ldgd_encoder import encoder_shapes

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

FAST = {"n_components": 2, "n_inducing": 5, "expectation": "unscented", "max_iter": 25,
        "transform_max_iter": 20, "random_state": 0}


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(n_samples=60, n_features=4, centers=3, cluster_std=1.0, random_state=3)
    return X, y


@pytest.fixture(scope="module")
def fitted(blobs):
    X, y = blobs
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    return LDGD(**FAST).fit(X, labels), X, labels


# ------------------------------------------------------------------------------------ API
def test_fit_predict_string_labels(fitted):
    model, X, labels = fitted
    assert list(model.classes_) == ["setosa", "versicolor", "virginica"]
    pred = model.predict(X)
    assert pred.dtype == labels.dtype and set(pred) <= set(model.classes_)
    assert model.score(X, labels) > 0.9
    assert model.latent_mean_.shape == (60, 2) and model.latent_variance_.shape == (60, 2)
    assert model.relevance_.shape == (2, 2)
    np.testing.assert_allclose(model.ard_weights_cls_, model.relevance_[1] ** 2)
    assert model.n_iter_ >= 1 and np.isfinite(model.elbo_)
    assert model.noise_variance_.shape == (4,)


@pytest.mark.parametrize("proba", ["plugin", "marginal", "integrated"])
def test_predict_proba_rows_sum_to_one(fitted, proba):
    model, X, labels = fitted
    m = clone(model).set_params(proba=proba).fit(X, labels)
    P = m.predict_proba(X[:10])
    assert P.shape == (10, 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.all(P >= 0)
    np.testing.assert_array_equal(m.classes_[np.argmax(P, axis=1)], m.predict(X[:10]))


def test_integrated_proba_is_less_confident(fitted):
    model, X, labels = fitted
    plug = clone(model).set_params(proba="plugin").fit(X, labels).predict_proba(X)
    integ = clone(model).set_params(proba="integrated").fit(X, labels).predict_proba(X)
    assert np.mean(integ.max(axis=1)) <= np.mean(plug.max(axis=1)) + 1e-12


def test_transform_and_subset_invariance(fitted):
    model, X, _ = fitted
    Z, S = model.transform(X, return_std=True)
    assert Z.shape == (60, 2) and np.all(S > 0)
    np.testing.assert_allclose(model.transform(X[7:12]), Z[7:12], rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(model.transform(X[::-1]), Z[::-1], rtol=1e-7, atol=1e-10)


def test_nearest_start_decoded_block_by_block(fitted):
    """The start of ``transform`` of a model fitted on Dask (no decoded training rows kept)
    picks the same training latent as the one from the stored decoded rows."""
    from sklearn_lvgp.bounds._ldgd_posterior import best_training_latent

    model, X, _ = fitted
    Yr = model._scale(X[::2] + 0.1)
    expected = best_training_latent(Yr, model._rec_mean, model._rec_var)
    posterior = model._posterior()
    np.testing.assert_array_equal(posterior.nearest_latent(Yr, model.latent_mean_, block=7),
                                  expected)
    np.testing.assert_array_equal(posterior.nearest_latent(Yr, model.latent_mean_), expected)


def test_fit_transform_matches_transform(fitted, blobs):
    model, X, labels = fitted
    np.testing.assert_allclose(clone(model).fit_transform(X, labels), model.transform(X))


def test_transform_of_training_rows_near_fitted_latents(fitted):
    """Test-time inference (Ziaei et al. 2024, §2.3.9): inferred μ* of training rows agree with the
    fitted μ_i."""
    model, X, labels = fitted
    Z = model.transform(X)
    spread = np.sqrt(np.mean(np.sum((model.latent_mean_ - model.latent_mean_.mean(0)) ** 2, 1)))
    assert np.median(np.linalg.norm(Z - model.latent_mean_, axis=1)) / spread < 0.25


def test_inverse_transform(fitted):
    model, X, _ = fitted
    rec, std = model.inverse_transform(model.latent_mean_, return_std=True)
    assert rec.shape == X.shape and np.all(std > 0)
    # reconstruction beats the column means
    assert np.mean((rec - X) ** 2) < np.mean((X - X.mean(0)) ** 2)
    with pytest.raises(ValueError, match="latent points"):
        model.inverse_transform(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="NaN"):
        model.inverse_transform(np.full((3, 2), np.nan))


def test_sample_generates_class_like_rows(fitted):
    model, X, labels = fitted
    for c in model.classes_:
        Xg, Zg = model.sample(c, n_samples=5, random_state=0)
        assert Xg.shape == (5, 4) and Zg.shape == (5, 2)
        means = np.array([X[labels == k].mean(0) for k in model.classes_])
        d = np.linalg.norm(Xg.mean(0) - means, axis=1)
        assert model.classes_[np.argmin(d)] == c
    Xn, _ = model.sample(model.classes_[0], 3, random_state=0, add_noise=True)
    assert Xn.shape == (3, 4)
    with pytest.raises(ValueError, match="not one of classes_"):
        model.sample("daisy")


def test_reproducible_and_clone(blobs):
    X, y = blobs
    params = {**FAST, "expectation": "monte_carlo", "max_iter": 30, "batch_size": 20}
    a = LDGD(**params).fit(X, y)
    b = clone(a).fit(X, y)
    np.testing.assert_array_equal(a.latent_mean_, b.latent_mean_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert clone(a).get_params() == a.get_params()


def test_n_jobs_does_not_change_results(blobs):
    X, y = blobs
    a = LDGD(**FAST, n_jobs=1).fit(X, y)
    b = LDGD(**FAST, n_jobs=2).fit(X, y)
    np.testing.assert_allclose(a.latent_mean_, b.latent_mean_, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("variant", [
    {"amortized": True, "encoder_hidden": (8,), "max_iter": 60, "learning_rate": 0.02},
    {"expectation": "monte_carlo", "max_iter": 60, "learning_rate": 0.05, "batch_size": 25},
    {"elbo_weighting": "ref-2024-03", "normalize_X": "none", "n_inducing": (6, 4)},
    {"elbo_weighting": "ref-2024-09", "kernel": Matern32(length_scale=np.ones(2)),
     "x_init": "random", "transform_init": "random", "optimizer": "adam", "learning_rate": 0.05,
     "max_iter": 150, "transform_max_iter": 300},
    {"kernel": (RBF(length_scale=np.ones(2)), Matern32(length_scale=np.ones(2))),
     "optimizer": "adam", "learning_rate": 0.05, "normalize_X": "center"},
])
def test_variants_fit_and_predict(blobs, variant):
    X, y = blobs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LDGD(**{**FAST, **variant}).fit(X, y)
    assert m.score(X, y) >= 0.8
    assert m.transform(X[:3]).shape == (3, 2)


def test_amortized_transform_is_the_encoder(blobs):
    X, y = blobs
    m = LDGD(**{**FAST, "amortized": True, "encoder_hidden": (8,), "max_iter": 20}).fit(X, y)
    np.testing.assert_allclose(m.transform(X), m.latent_mean_, rtol=1e-10)


def test_elbo_history_lbfgs_monotone(blobs):
    X, y = blobs
    m = LDGD(**FAST).fit(X, y)
    assert np.all(np.diff(m.elbo_history_) >= -1e-9)


def test_full_batch_objective_permutation_invariant(rng):
    """Permuting rows (data and q(x)) leaves the deterministic objective fixed."""
    N, D, K, Q, M = 9, 3, 3, 2, 4
    Yr = rng.standard_normal((N, D))
    Yc = np.eye(K)[np.arange(N) % K]
    k = RBF(length_scale=np.ones(Q)).initialize(Q, np.random.RandomState(0))
    vals = {"theta_r": k.theta, "theta_c": k.theta, "Z_r": rng.standard_normal((M, Q)),
            "Z_c": rng.standard_normal((M, Q)), "qmu_r": rng.standard_normal((M, D)),
            "qmu_c": rng.standard_normal((M, K)), "qsqrt_r": np.tile(np.eye(M), (D, 1, 1)),
            "qsqrt_c": np.tile(np.eye(M), (K, 1, 1)), "noise": np.full(D, 0.5),
            "mu": rng.standard_normal((N, Q)), "sigma": np.full((N, Q), 0.2)}
    perm = rng.permutation(N)
    factors = (1.0, 1.0) + preset_factors("paper", D, K)
    ut = unscented_rule(Q)
    p1 = TrainingProblem(Yr, Yc, k.clone(), k.clone(), M, M, Q, factors)
    p2 = TrainingProblem(Yr[perm], Yc[perm], k.clone(), k.clone(), M, M, Q, factors)
    v2 = {**vals, "mu": vals["mu"][perm], "sigma": vals["sigma"][perm]}
    f1 = p1.value_and_grad(p1.pack(vals), np.arange(N), ut.nodes, ut.weights)[0]
    f2 = p2.value_and_grad(p2.pack(v2), np.arange(N), ut.nodes, ut.weights)[0]
    assert f1 == pytest.approx(f2, rel=1e-12)
    assert len(encoder_shapes(D, (5,), Q)) == 6


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("y, match", [
    (np.zeros(10), "1 class"),
    (np.r_[np.zeros(9), 1.0], "1 sample"),
    (np.r_[np.zeros(5), np.ones(4), np.nan], "NaN"),
    (np.r_[np.zeros(5), np.ones(4)], "inconsistent numbers of samples"),
    (np.linspace(0, 1, 10), "Unknown label type"),
])
def test_bad_labels(y, match):
    X = np.random.default_rng(0).standard_normal((10, 3))
    with pytest.raises(ValueError, match=match):
        LDGD(**FAST).fit(X, y)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_bad_X(bad):
    X = np.random.default_rng(0).standard_normal((10, 3))
    X[2, 1] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        LDGD(**FAST).fit(X, np.arange(10) % 2)


def test_y_required():
    with pytest.raises(ValueError, match="requires y"):
        LDGD(**FAST).fit(np.ones((10, 2)))


@pytest.mark.parametrize("params, err", [
    ({"expectation": "monte_carlo", "optimizer": "lbfgs"}, ValueError),
    ({"elbo_weighting": "gpytorch"}, ValueError),
    ({"expectation": "psi"}, ValueError),
    ({"n_inducing": (5, 5, 5)}, ValueError),
    ({"n_inducing": 0}, ValueError),
    ({"kernel": "rbf"}, TypeError),
    ({"encoder_hidden": (0,)}, ValueError),
    ({"proba": "softmax"}, ValueError),
    ({"learning_rate": 0.0}, ValueError),
    ({"max_iter": 1.5}, TypeError),
])
def test_bad_params(params, err):
    X = np.random.default_rng(0).standard_normal((10, 3))
    with pytest.raises(err):
        LDGD(**{**FAST, **params}).fit(X, np.arange(10) % 2)


def test_predict_wrong_features(fitted):
    model, X, _ = fitted
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])


# --------------------------------------------------------------- reduced paper checks, §15.2
def test_iris_reduced():
    """Iris 120/30 split (as in the authors' public code), unscented, short run: accuracy ≥ 0.90."""
    X, y = load_iris(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=42)
    m = LDGD(n_components=3, n_inducing=8, expectation="unscented", max_iter=150,
             transform_max_iter=200, random_state=0).fit(Xtr, ytr)
    assert m.score(Xte, yte) >= 0.9


def test_moons_reduced():
    """Synthetic-10 moons (n=300, 2 folds), Q=2, M=(8, 25), unscented: weighted F1 ≥ 0.95
    (reduced budget; the 0.98 acceptance is the slow Table 1 test).

    With L-BFGS, M_c = 8 stops at a too-smooth classifier (F1 ≈ 0.90 at the full protocol while
    the latent space separates the moons), hence 25 classification inducing points here.
    """
    X, y = make_ldgd_moons(300, n_projection=5, random_state=65)
    scores = []
    for tr, te in list(KFold(5, shuffle=True, random_state=65).split(X))[:2]:
        m = LDGD(n_components=2, n_inducing=(8, 25), expectation="unscented", max_iter=150,
                 transform_max_iter=200, random_state=0).fit(X[tr], y[tr])
        scores.append(f1_score(y[te], m.predict(X[te]), average="weighted"))
    assert np.mean(scores) >= 0.95


def test_moons_generator_reference_layout():
    X, y, latent = make_ldgd_moons(100, n_projection=5, random_state=65, return_latent=True)
    assert X.shape == (100, 10) and latent.shape == (100, 2) and set(y) == {0, 1}
    assert np.all((X[:, 5:] >= 0) & (X[:, 5:] < 1))
    rs = np.random.RandomState(65)
    np.testing.assert_allclose(X[:, :5], latent @ rs.rand(2, 5))
    Xg, _ = make_ldgd_moons(100, n_projection=5, extra_noise="gaussian", random_state=65)
    assert Xg.shape == (100, 10)
    assert make_ldgd_moons(50, n_projection=3, extra_noise="none", random_state=0)[0].shape == (
        50, 3)
    with pytest.raises(ValueError):
        make_ldgd_moons(10, extra_noise="pink")


# ---------------------------------------------------------------------- full runs (-m slow)
MODES = {
    "monte_carlo": {"expectation": "monte_carlo", "elbo_weighting": "ref-2024-03", "tol": None},
    "unscented": {"expectation": "unscented", "elbo_weighting": "ref-2024-03", "tol": None},
}


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("p", [5, 10, 20])
def test_moons_table1(mode, p):
    """Table 1 protocol (Ziaei et al. 2024; folds and settings of the authors' public code):
    n=500, 5-fold, Q=2, M=8; weighted F1 ≥ 0.98 (the acceptance band of our reproduction
    protocol; the paper reports 1.0)."""
    X, y = make_ldgd_moons(500, n_projection=p, random_state=65)
    # the unscented mode with L-BFGS and M = 8 stops at F1 ≈ 0.90; with minibatch Adam (as the
    # paper's schedule) it reaches 1.00 (examples/plot_ldgd_moons.py, mode "unscented_adam")
    iters = {"monte_carlo": {"max_iter": 7000, "transform_max_iter": 2000},
             "unscented": {"optimizer": "adam", "max_iter": 3000,
                           "transform_max_iter": 1000}}[mode]
    scores = []
    for tr, te in KFold(5, shuffle=True, random_state=65).split(X):
        m = LDGD(n_components=2, n_inducing=8, random_state=0, **MODES[mode], **iters)
        m.fit(X[tr], y[tr])
        scores.append(f1_score(y[te], m.predict(X[te]), average="weighted"))
    assert np.mean(scores) >= 0.98


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
def test_oil_flow_table3(shared_data, mode):
    """Oil flow 800/200 (seed 42), Q=7, M=25 shared: accuracy ≥ 0.95 (the acceptance band of our
    reproduction protocol; Ziaei et al. 2024, Table 3: 0.99)."""
    from sklearn_lvgp.datasets import fetch_oil_flow

    X, y = fetch_oil_flow(subset="train", data_home=shared_data, download_if_missing=False,
                          return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=42)
    # unscented: minibatch Adam with the Monte Carlo schedule (5000 steps, b = 100) reached
    # 0.99/1.00/1.00 with random_state 0/1/2; full-batch L-BFGS (500 iterations) reached 0.945-0.95
    # (random_state=0) and 0.79 (random_state=1) (examples/plot_ldgd_oil.py, user guide)
    iters = {"monte_carlo": {"max_iter": 5000, "transform_max_iter": 2000},
             "unscented": {"optimizer": "adam", "max_iter": 5000,
                           "transform_max_iter": 2000}}[mode]
    m = LDGD(n_components=7, n_inducing=25, normalize_X="none", random_state=0, **MODES[mode],
             **iters)
    m.fit(Xtr, ytr)
    assert m.score(Xte, yte) >= 0.95


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
def test_iris_full(mode):
    """Iris 120/30, Q=7, M=10 shared: accuracy ≥ 0.90 (the acceptance band of our reproduction
    protocol; Ziaei et al. 2024, Table 2: 1.00)."""
    X, y = load_iris(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=42)
    iters = {"monte_carlo": {"max_iter": 2000, "batch_size": 120, "transform_max_iter": 2000},
             "unscented": {"max_iter": 1000, "transform_max_iter": 2000}}[mode]
    m = LDGD(n_components=7, n_inducing=10, random_state=0, **MODES[mode], **iters)
    m.fit(Xtr, ytr)
    assert m.score(Xte, yte) >= 0.9


# ----------------------------------------------------------------------------- warm start
def test_warm_start_continues_from_the_previous_parameters():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    kw = dict(n_components=2, n_inducing=6, expectation="unscented", random_state=0)
    first = LDGD(max_iter=20, **kw).fit(X, y)
    warm = LDGD(max_iter=20, warm_start=True, **kw).fit(X, y)
    np.testing.assert_array_equal(warm.latent_mean_, first.latent_mean_)
    warm.set_params(max_iter=30).fit(X, y)
    assert first.n_iter_ < warm.n_iter_ <= first.n_iter_ + 30
    assert warm.elbo_history_.shape == (warm.n_iter_,)
    assert warm.elbo_ >= first.elbo_ - 1e-8
    np.testing.assert_array_equal(warm.X_mean_, first.X_mean_)
    # other data shapes, or no warm_start: a fresh fit
    assert warm.fit(X[:100], y[:100]).n_iter_ <= 30
    again = LDGD(max_iter=20, **kw).fit(X, y).fit(X, y)
    np.testing.assert_array_equal(again.latent_mean_, first.latent_mean_)


# ------------------------------------------------------------------------ early stopping


def test_early_stopping_on_held_out_labels():
    """Adam stops n_iter_no_change checks after the last gain in the held-out mean log label
    probability; the held-out rows then get latents from the final model."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    yb = (y > np.median(y)).astype(int)
    m = LDGD(max_iter=6000, early_stopping=True, random_state=0).fit(X, yb)
    scores = m.validation_scores_
    assert m.n_iter_ < 6000 and scores.shape == (m.n_iter_ // 100,)
    assert checks_since_last_gain(scores) == m.n_iter_no_change
    assert np.all(scores < 0)  # log probabilities
    assert m.latent_mean_.shape == (442, 7) and np.all(m.latent_variance_ > 0)
    assert LDGD(max_iter=5, random_state=0).fit(X, yb).validation_scores_ is None


def test_early_stopping_options():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    y = (X[:, 0] > 0).astype(int)
    auto = LDGD(n_components=2, n_inducing=5, expectation="unscented", max_iter=200,
                early_stopping=True, random_state=0).fit(X, y)
    assert auto.validation_scores_.shape == (2,)  # Adam ("auto" is L-BFGS-B without it)
    with pytest.raises(ValueError, match="Adam path"):
        LDGD(optimizer="lbfgs", expectation="unscented", early_stopping=True,
             n_inducing=5).fit(X, y)
    with pytest.raises(ValueError, match="validation_fraction"):
        LDGD(early_stopping=True, validation_fraction=1.5, n_inducing=5).fit(X, y)
