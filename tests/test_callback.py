"""``callback(estimator, info)`` reaches every optimiser loop, and can stop it."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import DVMGP, GPCDE, LDGD, DeepGP, SparseGPRegressor, UnscentedGPLVM
from sklearn_lvgp.optim._adam import run_adam

CASES = [
    SparseGPRegressor(n_inducing=5, max_iter=40, random_state=0),
    UnscentedGPLVM(n_components=2, n_inducing=5, max_iter=40, random_state=0),
    UnscentedGPLVM(n_components=2, n_inducing=5, max_iter=40, optimizer="adam",
                   random_state=0),
    DeepGP(n_layers=2, n_inducing=5, max_iter=40, random_state=0),
    GPCDE(n_inducing=5, gh_order=5, max_iter=40, init="prior", random_state=0),
    LDGD(n_components=2, n_inducing=5, max_iter=40, transform_max_iter=5, random_state=0),
    DVMGP(n_inducing=5, n_inducing_projection=4, n_iter_fixed_noise=5, max_iter=40,
          n_components=1, random_state=0),
]


def _fit(est):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3))
    y = np.sin(X[:, 0])
    y = (y > 0).astype(int) if isinstance(est, LDGD) else y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X) if isinstance(est, UnscentedGPLVM) else est.fit(X, y)


def _case_id(est):
    return f"{type(est).__name__}-{est.get_params().get('optimizer')}"


@pytest.mark.parametrize("est", CASES, ids=_case_id)
def test_callback_sees_every_iteration_and_can_stop_the_fit(est):
    seen = []

    def record(estimator, info):
        assert estimator is fitted_est
        seen.append(info)

    fitted_est = clone(est).set_params(callback=record)
    _fit(fitted_est)
    assert len(seen) >= fitted_est.n_iter_ > 0
    assert [i["iteration"] for i in seen] == list(range(1, len(seen) + 1))
    assert {i["stage"] for i in seen} <= {"lbfgs", "adam"}
    assert all(np.isfinite(i["bound"]) and i["elapsed"] >= 0 for i in seen)
    # one sign convention: info["bound"] is the bound of elbo_history_ (higher is better)
    history = getattr(fitted_est, "elbo_history_", None)
    if history is None:  # SparseGPRegressor keeps the final bound only
        assert seen[-1]["bound"] == pytest.approx(fitted_est.elbo_, rel=1e-9)
    else:
        np.testing.assert_array_equal([i["bound"] for i in seen], history)

    stops = []
    stopped = clone(est).set_params(callback=lambda e, i: stops.append(i) or len(stops) >= 3)
    _fit(stopped)
    # each optimisation of the fit ends at its first report after the third
    assert len(stops) < len(seen)
    assert stopped.get_params()["callback"] is not None  # the parameter is stored verbatim


@pytest.mark.parametrize("est", CASES[:1], ids=["SparseGPRegressor"])
def test_callback_must_be_callable(est):
    with pytest.raises(TypeError, match="callback must be None or a callable"):
        _fit(clone(est).set_params(callback="print"))


def test_gpcde_stops_when_the_bound_stops_improving():
    common = {"n_inducing": 5, "gh_order": 5, "max_iter": 3000, "learning_rate": 0.05,
              "init": "prior", "optimizer": "adam", "random_state": 0}
    quick = _fit(GPCDE(**common))
    assert quick.n_iter_ < 3000 and quick.n_iter_ % 100 == 0
    full = _fit(GPCDE(**common, tol=None))
    assert full.n_iter_ == 3000
    h = full.elbo_history_
    n = quick.n_iter_
    # at the stop the last window improved the bound by less than tol on the one before
    assert h[n - 100:n].mean() - h[n - 200:n - 100].mean() <= 1e-4 * abs(h[n - 200:n - 100].mean())


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # tol=None: 3000
def test_lbfgs_stops_when_the_bound_stops_improving():
    """GPCDE's default on one full batch is L-BFGS-B; ``tol`` ends it once 100 iterations have
    improved the bound by less than ``tol`` (relative), long before scipy's own tests do."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (80, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(80)
    common = {"n_inducing": 10, "gh_order": 5, "max_iter": 3000, "init": "prior",
              "random_state": 0}
    quick = GPCDE(**common).fit(X, y)
    assert quick.optimizer_ == "lbfgs"
    scipy_only = GPCDE(**common, tol=None).fit(X, y)
    n = quick.n_iter_
    assert 100 < n < scipy_only.n_iter_
    h = quick.elbo_history_
    assert h[-1] - h[-101] <= 1e-4 * abs(h[-101])
    assert h[-2] - h[-102] > 1e-4 * abs(h[-102])  # the rule, not scipy, ended it
    assert quick.elbo_ >= scipy_only.elbo_ - 1e-3 * abs(scipy_only.elbo_)


def test_one_adam_loop_retries_or_raises_on_non_finite_steps():
    calls = []

    def flaky(x, idx):
        calls.append(1)
        if len(calls) % 3 == 0:
            return np.nan, np.zeros_like(x)
        return float(x @ x), 2 * x

    res = run_adam(flaky, np.ones(2), n_data=1, batch_size=1, max_iter=60, learning_rate=0.1,
                   random_state=np.random.RandomState(0), on_nonfinite="retry")
    assert np.isnan(res.history).sum() == 20 and np.all(np.abs(res.x) < 1)
    with pytest.raises(FloatingPointError, match="ELBO estimate is nan"):
        run_adam(flaky, np.ones(2), n_data=1, batch_size=1, max_iter=60, learning_rate=0.1,
                 random_state=np.random.RandomState(0))
    with pytest.raises(FloatingPointError, match="10 consecutive failures"):
        run_adam(lambda x, idx: (np.inf, x), np.ones(2), n_data=1, batch_size=1, max_iter=60,
                 learning_rate=0.1, random_state=np.random.RandomState(0), on_nonfinite="retry")


def test_deep_gp_tol_and_validation_scores():
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (80, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(80)
    common = {"n_layers": 1, "n_inducing": 6, "max_iter": 2000, "learning_rate": 0.05,
              "random_state": 0}
    quick = DeepGP(**common).fit(X, y)
    assert quick.n_iter_ < 2000 and quick.validation_scores_ is None
    assert DeepGP(**common, tol=None).fit(X, y).n_iter_ == 2000
    early = DeepGP(**{**common, "max_iter": 600}, early_stopping=True).fit(X, y)
    assert early.validation_scores_.shape == (early.n_iter_ // 100,)
    assert np.all(np.isfinite(early.validation_scores_))
