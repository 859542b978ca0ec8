"""Interrupted fits keep the estimator consistent; pickles carry the package version."""

import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils.validation import check_is_fitted

from sklearn_lvgp import DVMGP, GPCDE, LDGD, DeepGP, SparseGPRegressor, UnscentedGPLVM
from sklearn_lvgp._core.warn import InconsistentVersionWarning

CASES = [
    SparseGPRegressor(n_inducing=5, max_iter=30, random_state=0),
    UnscentedGPLVM(n_components=2, n_inducing=5, max_iter=30, random_state=0),
    DeepGP(n_layers=2, n_inducing=5, max_iter=30, random_state=0),
    GPCDE(n_inducing=5, gh_order=5, max_iter=30, init="prior", random_state=0),
    LDGD(n_components=2, n_inducing=5, max_iter=30, transform_max_iter=5, random_state=0),
    DVMGP(n_inducing=5, n_inducing_projection=4, n_iter_fixed_noise=5, max_iter=30,
          n_components=1, random_state=0),
]
IDS = [type(e).__name__ for e in CASES]


def _data(est, shift=0.0):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3)) + shift
    y = np.sin(X[:, 0])
    if isinstance(est, LDGD):
        return X, (y > np.median(y)).astype(int)
    return X, (None if isinstance(est, UnscentedGPLVM) else y)


def _fit(est, shift=0.0):
    X, y = _data(est, shift)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X) if y is None else est.fit(X, y)


def _output(est):
    X, _ = _data(est)
    if hasattr(est, "predict_proba"):
        return est.predict_proba(X[:5])
    return est.predict(X[:5]) if hasattr(est, "predict") else est.transform(X[:5])


def _interrupt_after(n):
    calls = []

    def callback(estimator, info):
        calls.append(info)
        if len(calls) >= n:
            raise KeyboardInterrupt

    return callback


@pytest.mark.parametrize("est", CASES, ids=IDS)
def test_interrupted_first_fit_leaves_the_estimator_unfitted(est):
    model = clone(est).set_params(callback=_interrupt_after(3))
    with pytest.raises(KeyboardInterrupt):
        _fit(model)
    with pytest.raises(NotFittedError):
        check_is_fitted(model)
    assert set(vars(model)) == set(clone(est).set_params(callback=None).get_params())


@pytest.mark.parametrize("est", CASES, ids=IDS)
def test_interrupted_refit_keeps_the_last_fitted_state(est):
    model = _fit(clone(est))
    before = _output(model)
    state = {k: v for k, v in vars(model).items() if k.endswith("_")}
    model.set_params(callback=_interrupt_after(3))
    with pytest.raises(KeyboardInterrupt):
        _fit(model, shift=5.0)  # other data: other scaling and parameters were being fitted
    np.testing.assert_array_equal(_output(model), before)
    for key, value in state.items():
        now = getattr(model, key)
        if isinstance(value, list):  # lists are restored as copies of the same items
            assert len(now) == len(value) and all(a is b for a, b in zip(now, value, strict=True))
        else:
            assert now is value
    # the estimator still works, and a new fit runs normally
    model.set_params(callback=None)
    _fit(model)
    np.testing.assert_allclose(_output(model), before)


def test_deep_gp_warm_start_and_partial_fit_after_an_interrupt():
    X, y = _data(CASES[2])
    model = DeepGP(n_layers=1, n_inducing=5, max_iter=20, warm_start=True, random_state=0)
    model.fit(X, y)
    x_before, t_before = model._x.copy(), model._state.t
    n_seen = model.n_samples_seen_
    model.set_params(callback=_interrupt_after(5))
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, y)
    assert model._state.t == t_before and model.n_iter_ == 20
    np.testing.assert_array_equal(model._x, x_before)
    with pytest.raises(KeyboardInterrupt):
        model.partial_fit(X, y)
    assert model.n_samples_seen_ == n_seen and model._state.t == t_before
    model.set_params(callback=None)
    model.fit(X, y)  # the warm start continues from the state before the interrupts
    assert model.n_iter_ == 40 and model._state.t == t_before + 20


@pytest.mark.parametrize("est", CASES, ids=IDS)
def test_pickle_loads_in_a_fresh_process_and_predicts_identically(est, tmp_path):
    """A fresh Python process in the same environment predicts the same bits.

    The child inherits this process's environment: OpenBLAS chooses its kernels from the CPU
    or from ``OPENBLAS_CORETYPE``, and its Haswell (AVX2) and SkylakeX (AVX-512) ``dgemm``
    round differently, so a child started with another BLAS configuration can differ in the
    last bit; what the package guarantees is the same output for the same configuration."""
    model = _fit(clone(est))
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(model))
    X, _ = _data(est)
    np.save(tmp_path / "X.npy", X[:5])
    method = ("predict_proba" if hasattr(model, "predict_proba") else
              "predict" if hasattr(model, "predict") else "transform")
    code = (f"import pickle, numpy as np; m = pickle.load(open({str(path)!r}, 'rb')); "
            f"np.save({str(tmp_path / 'out.npy')!r}, m.{method}(np.load("
            f"{str(tmp_path / 'X.npy')!r})))")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(tmp_path.parent),
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), _output(model))


def test_unpickling_another_version_warns():
    model = _fit(clone(CASES[0]))
    state = model.__getstate__()
    assert state["_sklearn_lvgp_version"] == __import__("sklearn_lvgp").__version__
    state["_sklearn_lvgp_version"] = "0.0.1"
    fresh = SparseGPRegressor.__new__(SparseGPRegressor)
    with pytest.warns(InconsistentVersionWarning, match="from sklearn_lvgp version 0.0.1"):
        fresh.__setstate__(state)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InconsistentVersionWarning)
        pickle.loads(pickle.dumps(model))  # same version: silent
