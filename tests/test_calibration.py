"""Predictive distributions stay calibrated on noiseless data and on near-duplicate inputs.

A smooth function observed without noise, and the same inputs twice (1e-9 apart) with noise
of standard deviation 0.1: on held-out points of every seed, at most 5 % of the standardised
errors ``|y - mean| / std`` exceed 3 (a Gaussian predictive that is right has 0.3 %), none
exceeds 10 (no catastrophic point), and on the noisy data the held-out log density is within
one nat per point of the true noise density's.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import DVMGP, GPCDE, DeepGP, SparseGPRegressor
from sklearn_lvgp._core.parallel import threads

NOISE_STD = 0.1
#: Expected log density of N(0, 0.1²) noise under its own density (the oracle).
ORACLE_LOG_DENSITY = -np.log(NOISE_STD * np.sqrt(2 * np.pi * np.e))


def _function(X):
    return np.sin(2 * X[:, 0]) + 0.3 * X[:, 0]


def _data(kind, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(100, 1))
    Xt = rng.uniform(-2.8, 2.8, size=(300, 1))
    if kind == "noiseless":
        return X, _function(X), Xt, _function(Xt)
    X2 = np.vstack([X, X + 1e-9])
    y = _function(X2) + NOISE_STD * rng.standard_normal(200)
    return X2, y, Xt, _function(Xt) + NOISE_STD * rng.standard_normal(300)


MODELS = {
    "SparseGPRegressor": lambda s: SparseGPRegressor(n_inducing=20, random_state=s),
    "DeepGP": lambda s: DeepGP(n_layers=2, n_inducing=20, max_iter=1500, random_state=s),
    "GPCDE": lambda s: GPCDE(n_inducing=20, max_iter=500, random_state=s),
    "DVMGP": lambda s: DVMGP(n_inducing=20, n_inducing_projection=10, random_state=s),
}


@pytest.mark.parametrize("kind", ["noiseless", "near_duplicates"])
@pytest.mark.parametrize("name", list(MODELS))
def test_predictive_is_calibrated(name, kind):
    for seed in range(3):
        X, y, Xt, yt = _data(kind, seed)
        with threads(1), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # reduced budgets
            model = MODELS[name](seed).fit(X, y)
        mean, std = model.predict(Xt, return_std=True)
        assert np.all(np.isfinite(mean)) and np.all(std > 0)
        z = np.abs(yt - mean) / std
        assert np.mean(z > 3) <= 0.05, (seed, np.mean(z > 3))
        assert z.max() < 10, (seed, z.max())
        log_density = model.predict_log_density(Xt, yt).mean()
        assert np.isfinite(log_density)
        if kind == "near_duplicates":
            assert log_density >= ORACLE_LOG_DENSITY - 1.0, (seed, log_density)
