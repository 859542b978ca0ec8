"""Property-based bad-input sweep: every estimator and method, generated arrays.

Each case either works (finite output of the right shape) or raises a ``ValueError`` or
``TypeError``, scikit-learn's or ours, that names the problem. Numba typing errors,
``LinAlgError``/``ZeroDivisionError``/``IndexError``/``AttributeError`` from deep inside,
NaN outputs and crashes are failures. Examples are derandomised, so CI sees the same cases.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import RegressorMixin, clone

from sklearn_lvgp import DVMGP, GPCDE, LDGD, DeepGP, SparseGPRegressor, UnscentedGPLVM

N_FEATURES = 3
FAST = [
    SparseGPRegressor(n_inducing=3, max_iter=5, random_state=0),
    UnscentedGPLVM(n_components=2, n_inducing=3, max_iter=5, transform_max_iter=3,
                   random_state=0),
    DeepGP(n_layers=2, n_inducing=3, max_iter=5, n_predict_samples=5, random_state=0),
    GPCDE(n_inducing=3, max_iter=5, gh_order=3, n_predict_samples=5, init="prior",
          random_state=0),
    LDGD(n_components=2, n_inducing=3, max_iter=5, transform_max_iter=3, random_state=0),
    DVMGP(n_inducing=3, n_inducing_projection=3, n_iter_fixed_noise=2, max_iter=5,
          n_components=1, random_state=0),
]
IDS = [type(e).__name__ for e in FAST]

#: messages that name an internal array or give up without saying what the input did wrong
_OPAQUE = ("S contains NaN", "index", "has no attribute", "unsupported operand",
           "object of type", "not subscriptable", "NoneType")

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])

_values = st.one_of(
    st.floats(-3, 3),
    st.sampled_from([np.nan, np.inf, -np.inf, 1e150, -1e150, 1e-150, 0.0, 1e308]),
)


@st.composite
def inputs(draw, n_features=N_FEATURES):
    """An array-like input: shapes, dtypes, containers and values that break naive code."""
    n_rows = draw(st.sampled_from([0, 1, 2, 5, 12]))
    n_cols = draw(st.sampled_from([0, 1, n_features, n_features, n_features + 1]))
    finite = draw(st.booleans())
    elements = st.floats(-3, 3) if finite else _values
    A = draw(arrays(np.float64, (n_rows, n_cols), elements=elements))
    if n_cols >= 2 and draw(st.booleans()):
        A[:, 1] = A[:, 0]  # a duplicated column
    if n_cols >= 1 and draw(st.booleans()):
        A[:, -1] = 0.5  # a constant column
    kind = draw(st.sampled_from(["float64", "float32", "int", "bool", "object", "str",
                                 "list", "sparse", "frame", "frame_int_names", "3d",
                                 "1d", "scaled_up", "scaled_down"]))
    with np.errstate(all="ignore"):
        if kind == "float32":
            return A.astype(np.float32)
        if kind == "int":
            return np.nan_to_num(A, posinf=7, neginf=-7).astype(np.int64)
        if kind == "bool":
            return A > 0
        if kind == "object":
            return A.astype(object)
        if kind == "str":
            return np.full(A.shape, "a", dtype=object)
        if kind == "list":
            return A.tolist()
        if kind == "sparse":
            return sp.csr_matrix(np.nan_to_num(A))
        if kind == "frame":
            return pd.DataFrame(A, columns=[f"c{i}" for i in range(n_cols)])
        if kind == "frame_int_names":
            return pd.DataFrame(A)
        if kind == "3d":
            return A.reshape(n_rows, n_cols, 1)
        if kind == "1d":
            return A.ravel()
        if kind == "scaled_up":
            return A * 1e150
        if kind == "scaled_down":
            return A * 1e-150
    return A


def _targets(est, n):
    y = np.sin(np.arange(n, dtype=float))
    if isinstance(est, LDGD):
        return (np.arange(n) % 2).astype(int)
    return y


def _check_outcome(call, n_rows=None, log_density=False):
    """Run ``call``; the result must be finite, or the error a clear ValueError/TypeError.

    A log density may be ``-inf`` (a target so far out that its density underflows), never NaN.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = call()
        except (ValueError, TypeError) as exc:
            msg = str(exc)
            assert msg, f"{type(exc).__name__} without a message"
            assert type(exc).__module__.split(".")[0] not in ("numba",), repr(exc)
            assert not any(s in msg for s in _OPAQUE), repr(exc)
            return None
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        if hasattr(o, "to_numpy"):
            o = o.to_numpy()
        o = np.asarray(o)
        if o.dtype.kind == "f":
            ok = (~np.isnan(o) & (o < np.inf)) if log_density else np.isfinite(o)
            assert np.all(ok), "non-finite output"
        if n_rows is not None and o.ndim:
            assert o.shape[0] == n_rows
    return out


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, N_FEATURES))
    models = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for est in FAST:
            e = clone(est)
            e.fit(X) if isinstance(e, UnscentedGPLVM) else e.fit(X, _targets(e, 20))
            models[type(e).__name__] = e
    return models


@pytest.mark.parametrize("est", FAST, ids=IDS)
@SETTINGS
@given(X=inputs())
def test_fit_on_generated_inputs(est, X):
    model = clone(est)
    n = np.shape(X)[0] if np.ndim(X) or sp.issparse(X) else 0
    if isinstance(model, UnscentedGPLVM):
        _check_outcome(lambda: model.fit(X))
    else:
        _check_outcome(lambda: model.fit(X, _targets(model, n)))


@pytest.mark.parametrize("name", IDS)
@SETTINGS
@given(X=inputs())
def test_prediction_methods_on_generated_inputs(fitted, name, X):
    model = fitted[name]
    n = np.shape(X)[0] if hasattr(X, "shape") or isinstance(X, list) else None
    methods = [m for m in ("predict", "transform", "predict_proba") if hasattr(model, m)]
    for method in methods:
        _check_outcome(lambda m=method: getattr(model, m)(X), n)
    if isinstance(model, RegressorMixin):
        y = np.zeros(n or 0)
        _check_outcome(lambda: model.predict_log_density(X, y), n, log_density=True)
        _check_outcome(lambda: model.sample_y(X, n_samples=2), n)


@pytest.mark.parametrize("name", [i for i, e in zip(IDS, FAST, strict=True)
                                  if isinstance(e, RegressorMixin)])
@SETTINGS
@given(y=inputs(n_features=1))
def test_regressors_on_generated_targets(fitted, name, y):
    model = fitted[name]
    X = np.random.default_rng(1).standard_normal((np.shape(y)[0] if np.ndim(y) else 0,
                                                   N_FEATURES))
    _check_outcome(lambda: clone(model).fit(X, y))
    _check_outcome(lambda: model.predict_log_density(X, y), log_density=True)
