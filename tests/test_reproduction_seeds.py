"""Seed-robust reproduction tier: each headline claim on five seeds or splits, reduced budgets.

The claim must hold on the majority of seeds and no seed may be catastrophic (worse than the
baseline the claim is measured against). Targets are the papers' or the specifications' (the
calibrated targets of the deep GP and GP-CDE reproductions), never our own measurements.
"""

import warnings

import numpy as np
from reference import diabetes_split, exact_gp_log_density  # tests/ is on sys.path
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import GPCDE, DeepGP, SparseGPRegressor
from sklearn_lvgp._parallel import threads
from sklearn_lvgp.datasets._conditional import (
    bimodal_conditional_log_density,
    make_bimodal_conditional,
)

SEEDS = range(5)


def _bimodal_gain(seed):
    """Held-out nats per point of quadrature GP-CDE over the sparse GP, and over the oracle."""
    X, y = make_bimodal_conditional(100, seed)
    Xt, yt = make_bimodal_conditional(500, 1000 + seed)
    with threads(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # reduced L-BFGS budget
        gp = SparseGPRegressor(n_inducing=20, random_state=0).fit(X, y)
        m = GPCDE(n_inducing=20, optimizer="lbfgs", natgrad_gamma=None, max_iter=300,
                  random_state=seed).fit(X, y)
    ll = m.predict_log_density(Xt, yt).mean()
    return ll - gp.predict_log_density(Xt, yt).mean(), ll - bimodal_conditional_log_density(
        Xt, yt).mean()


def test_gpcde_beats_the_gp_on_bimodal_data_across_seeds():
    """Salimbeni (2020), ch. 4, bimodal benchmark: GP-CDE >= GP + 0.3 nats per point."""
    results = [_bimodal_gain(seed) for seed in SEEDS]
    gains = np.array([g for g, _ in results])
    assert np.sum(gains >= 0.3) >= 3, gains  # the claim, on the majority of seeds
    assert np.all(gains > 0.0), gains  # no seed worse than the GP
    assert all(over <= 0.0 for _, over in results)  # nothing above the true density


def test_sparse_deep_gp_layer_matches_the_exact_gp_on_diabetes_splits():
    """Deep GP specification, diabetes protocol: SGP (one layer) >= exact GP - 0.03 nats."""
    gaps = []
    for seed in SEEDS:
        X, y, Xt, yt = diabetes_split(seed)
        ll = DeepGP(tol=None, n_layers=1, n_inducing=50, max_iter=800, learning_rate=0.03,
                    random_state=0).fit(X, y).predict_log_density(Xt, yt).mean()
        gaps.append(ll - exact_gp_log_density(X, y, Xt, yt))
    gaps = np.array(gaps)
    assert np.sum(gaps >= -0.03) >= 3, gaps
    assert np.all(gaps >= -0.3), gaps  # no split far below the exact GP


def test_unscented_gplvm_separates_oil_flow_across_seeds(shared_data):
    """Table 1 of the unscented-GPLVM paper (100 oil-flow rows, 1-NN on the two most relevant
    dimensions, 5-fold): the unscented Matérn-3/2 GPLVM reaches 100.0 ± 0.0 against PCA's
    79.0. Five fit seeds (inducing-input choice), capped iterations: at least 95 % (the paper's
    lowest deterministic row) on the majority, and no seed at or below PCA."""
    from sklearn_lvgp import UnscentedGPLVM
    from sklearn_lvgp.datasets import fetch_oil_flow
    from sklearn_lvgp.kernels import Matern32
    from sklearn_lvgp.utils.evaluation import knn_accuracy, most_relevant

    Y, labels = fetch_oil_flow(subset="gplvm100", data_home=shared_data,
                               download_if_missing=False, return_X_y=True)
    accuracy = []
    for seed in SEEDS:
        model = UnscentedGPLVM(n_components=5, n_inducing=20, kernel=Matern32(np.ones(5)),
                               expectation="unscented", init="pca_unscaled",
                               noise_variance_init=0.01, normalize_X="none", max_iter=2000,
                               random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(Y)
        accuracy.append(100 * knn_accuracy(most_relevant(model), labels).mean())
    accuracy = np.array(accuracy)
    assert np.sum(accuracy >= 95.0) >= 3, accuracy
    assert np.all(accuracy > 79.0), accuracy
