"""Every likelihood's expectation, predictive density, predictive moments and class
probabilities against Monte Carlo with 10^6 draws of ``f ~ N(mu, var)``, within 4 standard
errors (reference densities in ``likelihood_cases``). One set of draws per case serves all four
checks."""

import numpy as np
import pytest
from likelihood_cases import CASES, class_proba, conditional_moments, draw_f, log_lik

from sklearn_lvgp._core.parallel import threads
from sklearn_lvgp.likelihoods import Softmax

N_DRAWS = 10 ** 6
#: Softmax's own estimate is Monte Carlo: enough draws that it is compared at 4 standard errors
#: too (the default's error is checked by ``test_softmax_default_draws_error_is_small``).
SOFTMAX_DRAWS = 400_000

CHECKED = [c for c in CASES if c[0] not in ("ordinal_fixed_edges", "robust_max_learned_epsilon")]


def _within(estimate, mean, se, label):
    z = np.abs(estimate - mean) / np.maximum(se, 1e-300)
    assert np.all(z < 4), f"{label}: {np.max(z):.2f} standard errors off"


def _mean_se(values, axis, own_draws=None):
    """Sample mean and standard error; with ``own_draws``, the standard error of the
    difference from an independent Monte Carlo estimate with that many draws."""
    se = values.std(axis=axis) / np.sqrt(N_DRAWS)
    if own_draws is not None:
        se = se * np.sqrt(1.0 + N_DRAWS / own_draws)
    return values.mean(axis=axis), se + 1e-15


@pytest.mark.parametrize(("name", "factory", "make_data"), CHECKED, ids=[c[0] for c in CHECKED])
def test_against_monte_carlo(name, factory, make_data, rng):
    lik = Softmax(n_samples=SOFTMAX_DRAWS) if name == "softmax" else factory()
    own = SOFTMAX_DRAWS if name == "softmax" else None
    with threads(1):  # serial twins: the parallel ones are compared in test_likelihood_gradients
        _check_against_monte_carlo(name, lik, own, *make_data(rng), rng)


def _check_against_monte_carlo(name, lik, own, y, mu, var, rng):
    f = draw_f(lik, mu, var, N_DRAWS, rng)
    axis = 1 if lik.is_multiclass else -1
    logp = log_lik(lik, y, f)

    _within(lik.variational_expectation(y, mu, var), *_mean_se(logp, axis, own),
            f"{name} expectation")
    _within(np.exp(lik.predict_log_density(y, mu, var)), *_mean_se(np.exp(logp), axis, own),
            f"{name} predictive density")

    if not lik.is_multiclass:
        m, v = conditional_moments(lik, f)
        mean, var_y = lik.predict_mean_and_var(mu, var)
        _within(mean, *_mean_se(m, -1), f"{name} predictive mean")
        _within(var_y + mean ** 2, *_mean_se(v + m * m, -1), f"{name} predictive second moment")

    if lik.is_classification:
        if not lik.is_multiclass:  # one latent function: the first output column
            mu, var, f = mu[:, :1], var[:, :1], f[:, :1]
        proba = lik.predict_proba(mu, var)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
        _within(proba, *_mean_se(class_proba(lik, f), 1, own), f"{name} class probabilities")


def test_softmax_default_draws_error_is_small(rng):
    """The default 100 common draws: expectation and class probabilities within 0.01 of a
    10^6-draw Monte Carlo (the accuracy the class docstring states)."""
    _, factory, make_data = next(c for c in CASES if c[0] == "softmax")
    lik = factory()
    y, mu, var = make_data(rng)
    f = draw_f(lik, mu, var, N_DRAWS, rng)
    err = np.abs(lik.variational_expectation(y, mu, var) - log_lik(lik, y, f).mean(1))
    assert np.max(err) < 1e-2
    np.testing.assert_allclose(lik.predict_proba(mu, var), class_proba(lik, f).mean(1),
                               atol=1e-2)
