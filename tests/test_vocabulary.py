"""One name per concept across the estimators: old names are gone, the new ones do the job.

The table these tests follow is in ``doc/developers.rst`` ("One vocabulary").
"""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.base import RegressorMixin, TransformerMixin, clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import DVMGP, GPCDE, LDGD, DeepGP, SparseGPRegressor, UnscentedGPLVM
from sklearn_lvgp.utils.discovery import all_estimators

FAST = {
    DeepGP: {"n_layers": 1, "n_inducing": 5, "max_iter": 20, "random_state": 0},
    GPCDE: {"latent_dim": 1, "n_inducing": 5, "max_iter": 20, "gh_order": 5, "init": "prior",
            "random_state": 0},
    LDGD: {"n_components": 2, "n_inducing": 5, "max_iter": 10, "transform_max_iter": 5,
           "random_state": 0},
    UnscentedGPLVM: {"n_components": 2, "n_inducing": 5, "max_iter": 10, "random_state": 0},
    SparseGPRegressor: {"n_inducing": 5, "max_iter": 10, "random_state": 0},
    DVMGP: {"n_inducing": 5, "n_inducing_projection": 4, "n_iter_fixed_noise": 3,
            "max_iter": 10, "n_components": 1, "random_state": 0},
}

#: (estimator, old parameter, new parameter, a non-default value of the new one)
RENAMED_PARAMS = [
    (DeepGP, "likelihood_variance", "noise_variance_init", 0.2),
    (GPCDE, "likelihood_variance", "noise_variance_init", 0.2),
    (GPCDE, "n_quadrature", "gh_order", 3),
    (LDGD, "n_gh_points", "gh_order", 5),
    (DeepGP, "propagation", "expectation", "unscented"),  # with two layers, below
    (LDGD, "y_scaling", "normalize_X", "none"),
    (UnscentedGPLVM, "center", "normalize_X", "none"),
]

#: names no estimator may use any more, as a parameter or fitted attribute
GONE = {"likelihood_variance", "n_quadrature", "n_gh_points", "propagation", "y_scaling",
        "center", "Z_", "log_marginal_likelihood_value_", "y_std_", "x_scale_", "x_mean_",
        "mean_", "scale_", "latent_std_", "inducing_reg_", "inducing_cls_"}


def _data(est):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(40)
    if isinstance(est, LDGD):
        return X, (y > 0).astype(int)
    return X, (None if isinstance(est, UnscentedGPLVM) else y)


def _fit(est):
    X, y = _data(est)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


def _output(est):
    X, _ = _data(est)
    if isinstance(est, RegressorMixin):
        return est.predict(X[:5])
    if hasattr(est, "predict_proba"):
        return est.predict_proba(X[:5])
    return est.transform(X[:5])


@pytest.mark.parametrize(("cls", "old", "new", "value"), RENAMED_PARAMS,
                         ids=[f"{c.__name__}.{o}" for c, o, *_ in RENAMED_PARAMS])
def test_renamed_parameter(cls, old, new, value):
    with pytest.raises(TypeError, match=old):
        cls(**{old: value})
    assert old not in cls().get_params()
    base = {**FAST[cls], **({"n_layers": 2} if new == "expectation" else {})}
    default = _fit(cls(**base))
    changed = _fit(cls(**{**base, new: value}))
    assert changed.get_params()[new] == value
    assert not np.array_equal(_output(default), _output(changed))  # the parameter is used


@pytest.mark.parametrize("cls", list(FAST), ids=lambda c: c.__name__)
def test_one_vocabulary_in_parameters_and_fitted_attributes(cls):
    est = _fit(cls(**FAST[cls]))
    names = set(inspect.signature(cls).parameters) | set(vars(est))
    assert not names & GONE
    assert {"elbo_", "n_iter_", "noise_variance_"} <= set(vars(est))
    assert any(a.startswith("inducing_inputs_") for a in vars(est))
    if isinstance(est, RegressorMixin):
        assert {"y_mean_", "y_scale_"} <= set(vars(est))
        assert not hasattr(est, "score_samples")
        X, y = _data(est)
        log_density = est.predict_log_density(X, y)
        assert log_density.shape == (X.shape[0],) and np.all(np.isfinite(log_density))
        samples = est.sample_y(X[:4], n_samples=3)
        assert inspect.signature(est.sample_y).parameters["random_state"].default == 0
        np.testing.assert_array_equal(samples, est.sample_y(X[:4], n_samples=3))
    if "normalize_X" in est.get_params():
        assert {"X_mean_", "X_scale_"} <= set(vars(est))


#: The latent-space transformers (the imputer follows scikit-learn's imputers instead: its
#: ``transform`` returns the completed data, named as the input, and ``transform_std`` the
#: standard deviations of the imputed entries).
LATENT_TRANSFORMERS = [c for _, c in all_estimators()
                       if issubclass(c, TransformerMixin) and c.__module__.startswith(
                           "sklearn_lvgp.models")]


@pytest.mark.parametrize("cls", LATENT_TRANSFORMERS, ids=lambda c: c.__name__)
def test_transformers_return_std_and_name_their_features(cls):
    est = _fit(cls(**FAST[cls]))
    X, _ = _data(est)
    assert "return_variance" not in inspect.signature(est.transform).parameters
    mean, std = est.transform(X[:5], return_std=True)
    np.testing.assert_allclose(mean, est.transform(X[:5]))
    assert std.shape == mean.shape and np.all(std >= 0)
    prefix = cls.__name__.lower()
    assert list(est.get_feature_names_out()) == [f"{prefix}{i}" for i in range(mean.shape[1])]
    frame = clone(est).set_output(transform="pandas")
    assert list(_fit(frame).transform(X[:5]).columns) == list(est.get_feature_names_out())
