"""``warm_start`` on every estimator: a warm refit on the same data goes on from the previous
fit (iterations accumulate, the bound does not fall back), a cold refit starts afresh."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import DVMGP, GPCDE, LDGD, DeepGP, SparseGPRegressor, UnscentedGPLVM

FAST = {
    SparseGPRegressor: dict(n_inducing=5, max_iter=10),
    UnscentedGPLVM: dict(n_components=2, n_inducing=5, max_iter=10),
    LDGD: dict(n_components=2, n_inducing=5, max_iter=10, expectation="unscented"),
    DeepGP: dict(n_inducing=5, max_iter=50, tol=None),
    GPCDE: dict(n_inducing=5, max_iter=50, tol=None, gh_order=5),
    DVMGP: dict(n_inducing=5, n_inducing_projection=4, n_iter_fixed_noise=5, max_iter=10),
}


def _data(cls):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    if cls is UnscentedGPLVM:
        return (X,)
    if cls is LDGD:
        return X, (X[:, 0] > 0).astype(int)
    return X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(40)


@pytest.mark.parametrize("cls", list(FAST), ids=lambda c: c.__name__)
def test_warm_refit_continues_and_cold_refit_starts_afresh(cls):
    data = _data(cls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # small budgets
        cold = cls(random_state=0, **FAST[cls]).fit(*data)
        n_cold = cold.n_iter_
        assert cold.fit(*data).n_iter_ == n_cold
        warm = cls(random_state=0, warm_start=True, **FAST[cls]).fit(*data)
        assert warm.n_iter_ == n_cold
        first = warm.elbo_
        history = np.copy(getattr(warm, "elbo_history_", None))
        warm.fit(*data)
    assert warm.n_iter_ > n_cold
    # the bound does not fall back: the refit goes on from where the first fit ended, where a
    # fresh start would begin at the initial bound again
    assert warm.elbo_ >= first
    if not hasattr(warm, "elbo_history_"):
        # no history: 10 iterations do not converge, and a restart would end at the same bound
        assert warm.elbo_ > first
        return
    assert warm.elbo_history_.shape[0] == warm.n_iter_
    np.testing.assert_array_equal(warm.elbo_history_[:n_cold], history)
    goes_on = warm.elbo_history_[n_cold:]
    if cls is DeepGP:  # Adam's minibatch estimates, noisy: ten steps on, not below ten before
        assert goes_on[:10].mean() >= history[-10:].mean()
    else:  # L-BFGS-B: no iterate below the bound of the first fit's end
        assert goes_on.min() >= first - 1e-9 * abs(first)
