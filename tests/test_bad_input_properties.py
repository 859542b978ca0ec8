"""Property-based bad-input sweep: every estimator and method, generated arrays.

Valid input (a finite, numeric, two-dimensional array of moderate values with enough rows and
the fitted number of columns) must work: a fit leaves finite fitted attributes, a method returns
finite output of the right shape. Any other case either works so or raises a ``ValueError`` or
``TypeError``, scikit-learn's or ours, whose message names the problem. Numba typing errors,
``LinAlgError`` (a failed Cholesky says nothing about the input), ``ZeroDivisionError``,
``IndexError``, ``AttributeError`` from deep inside, NaN outputs or fitted parameters and
crashes are failures. Examples are derandomised, so CI sees the same cases.
"""

import numbers
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import RegressorMixin, clone

from sklearn_lvgp import DVMGP, GPCDE, LDGD, DeepGP, SparseGPRegressor, UnscentedGPLVM

N_FEATURES = 3
N_INDUCING = 3
FAST = [
    SparseGPRegressor(n_inducing=N_INDUCING, max_iter=5, random_state=0),
    UnscentedGPLVM(n_components=2, n_inducing=N_INDUCING, max_iter=5, transform_max_iter=3,
                   random_state=0),
    DeepGP(n_layers=2, n_inducing=N_INDUCING, max_iter=5, n_predict_samples=5, random_state=0),
    GPCDE(n_inducing=N_INDUCING, max_iter=5, gh_order=3, n_predict_samples=5, init="prior",
          random_state=0),
    LDGD(n_components=2, n_inducing=N_INDUCING, max_iter=5, transform_max_iter=3,
         random_state=0),
    DVMGP(n_inducing=N_INDUCING, n_inducing_projection=N_INDUCING, n_iter_fixed_noise=2,
          max_iter=5, n_components=1, random_state=0),
]
IDS = [type(e).__name__ for e in FAST]

#: a clear message names what is wrong with the input: its values, shape, type or size
_NAMES_THE_PROBLEM = ("nan", "inf", "overflow", "underflow", "sample", "feature", "2d", "dim",
                      "sparse", "string", "numeric", "class", "target", "rows",
                      "array or dtype is required")
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
#: containers a numeric estimator must take (as scikit-learn's validate_data does)
_NUMERIC_KINDS = ("float64", "float32", "int", "bool", "object", "list", "frame",
                  "frame_int_names")


def _moderate(A):
    """Finite values of magnitude at most 3, each column constant or spread by more than
    1e-100 (narrower spreads square to zero: the package refuses them by name)."""
    spread = np.ptp(A, axis=0) if A.size else np.zeros(0)
    return bool(np.all(np.abs(A) <= 3) and np.all((spread == 0) | (spread > 1e-100)))


@st.composite
def inputs(draw, n_features=N_FEATURES):
    """``(X, valid)``: an array-like input — shapes, dtypes, containers and values that break
    naive code — and whether it is valid data (numeric, two-dimensional or, for targets
    (``n_features=1``), one-dimensional, finite, moderate)."""
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
    valid_kinds = _NUMERIC_KINDS + (("1d",) if n_features == 1 else ())  # 1-D targets
    valid = kind in valid_kinds and n_rows > 0 and n_cols > 0 and _moderate(A)
    with np.errstate(all="ignore"):
        if kind == "float32":
            return A.astype(np.float32), valid
        if kind == "int":
            return np.nan_to_num(A, posinf=7, neginf=-7).astype(np.int64), valid
        if kind == "bool":
            return A > 0, valid
        if kind == "object":
            return A.astype(object), valid
        if kind == "str":
            return np.full(A.shape, "a", dtype=object), valid
        if kind == "list":
            return A.tolist(), valid
        if kind == "sparse":
            return sp.csr_matrix(np.nan_to_num(A)), valid
        if kind == "frame":
            return pd.DataFrame(A, columns=[f"c{i}" for i in range(n_cols)]), valid
        if kind == "frame_int_names":
            return pd.DataFrame(A), valid
        if kind == "3d":
            return A.reshape(n_rows, n_cols, 1), valid
        if kind == "1d":
            return A.ravel(), valid
        if kind == "scaled_up":
            return A * 1e150, valid
        if kind == "scaled_down":
            return A * 1e-150, valid
    return A, valid


def _targets(est, n):
    y = np.sin(np.arange(n, dtype=float))
    if isinstance(est, LDGD):
        return (np.arange(n) % 2).astype(int)
    return y


def _n_rows(X):
    return np.shape(X)[0] if np.ndim(X) or sp.issparse(X) else 0


def _n_cols(X):
    return np.shape(X)[1] if np.ndim(X) == 2 or sp.issparse(X) else None


def _assert_finite(o, what, log_density=False):
    """Float arrays in ``o`` are finite (a log density may be ``-inf``, never NaN)."""
    if hasattr(o, "to_numpy"):
        o = o.to_numpy()
    if isinstance(o, numbers.Number) and not isinstance(o, bool):
        o = np.float64(o)
    if isinstance(o, np.ndarray | np.floating) and np.asarray(o).dtype.kind == "f":
        o = np.asarray(o)
        ok = (~np.isnan(o) & (o < np.inf)) if log_density else np.isfinite(o)
        assert np.all(ok), f"non-finite {what}: {o[~ok].ravel()[:3]}"


def _assert_fitted_finite(est):
    """Every fitted attribute (``name_``) that holds numbers is finite, kernels' theta too."""
    for name, value in vars(est).items():
        if name.startswith("_") or not name.endswith("_"):
            continue
        if hasattr(value, "theta"):
            value = value.theta
        for v in value if isinstance(value, list | tuple) else (value,):
            _assert_finite(v, f"fitted attribute {name}")


def _check_outcome(call, n_rows=None, log_density=False, valid=False):
    """Run ``call``; the result must be finite, or the error a clear ValueError/TypeError.

    ``valid``: the input is valid, so the call must succeed. A fit (returning the estimator)
    must leave finite fitted attributes. A log density may be ``-inf`` (a target so far out
    that its density underflows), never NaN.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = call()
        except (ValueError, TypeError) as exc:
            msg = str(exc)
            assert not valid, f"valid input refused: {exc!r}"
            assert not isinstance(exc, np.linalg.LinAlgError), repr(exc)
            assert msg, f"{type(exc).__name__} without a message"
            assert type(exc).__module__.split(".")[0] not in ("numba",), repr(exc)
            assert not any(s in msg for s in _OPAQUE), repr(exc)
            assert any(s in msg.lower() for s in _NAMES_THE_PROBLEM), repr(exc)
            return None
    if hasattr(out, "get_params"):  # a fit
        _assert_fitted_finite(out)
        return out
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        _assert_finite(o, "output", log_density)
        o = np.asarray(o.to_numpy() if hasattr(o, "to_numpy") else o)
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
            _assert_fitted_finite(e)
            models[type(e).__name__] = e
    return models


@pytest.mark.parametrize("est", FAST, ids=IDS)
@SETTINGS
@given(case=inputs())
def test_fit_on_generated_inputs(est, case):
    X, valid = case
    model = clone(est)
    n = _n_rows(X)
    valid = valid and n >= N_INDUCING
    if isinstance(model, UnscentedGPLVM):
        _check_outcome(lambda: model.fit(X), valid=valid)
    else:
        _check_outcome(lambda: model.fit(X, _targets(model, n)), valid=valid)


@pytest.mark.parametrize("name", IDS)
@SETTINGS
@given(case=inputs())
def test_prediction_methods_on_generated_inputs(fitted, name, case):
    X, valid = case
    model = fitted[name]
    n = np.shape(X)[0] if hasattr(X, "shape") or isinstance(X, list) else None
    valid = valid and _n_cols(X) == N_FEATURES
    methods = [m for m in ("predict", "transform", "predict_proba") if hasattr(model, m)]
    for method in methods:
        _check_outcome(lambda m=method: getattr(model, m)(X), n, valid=valid)
    if isinstance(model, RegressorMixin):
        y = np.zeros(n or 0)
        _check_outcome(lambda: model.predict_log_density(X, y), n, log_density=True,
                       valid=valid)
        _check_outcome(lambda: model.sample_y(X, n_samples=2), n, valid=valid)


@pytest.mark.parametrize("name", [i for i, e in zip(IDS, FAST, strict=True)
                                  if isinstance(e, RegressorMixin)])
@SETTINGS
@given(case=inputs(n_features=1))
@example(case=(np.array([[1e308], [0.0], [0.0], [0.0], [0.0]]), False))  # scale**2 overflows
def test_regressors_on_generated_targets(fitted, name, case):
    y, valid = case
    n = _n_rows(y)
    valid = valid and n >= N_INDUCING
    X = np.random.default_rng(1).standard_normal((n, N_FEATURES))
    refit = _check_outcome(lambda: clone(fitted[name]).fit(X, y), valid=valid)
    if refit is not None:
        _check_outcome(lambda: refit.predict_log_density(X, y), n, log_density=True,
                       valid=valid)
