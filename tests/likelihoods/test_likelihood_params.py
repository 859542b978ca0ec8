"""Likelihood hyperparameters work as the kernels' do: get_params/set_params/clone round trips,
theta and bounds in transformed space, "fixed", nesting in an estimator as ``likelihood__<name>``;
bad values and bad targets give clear errors."""

import pickle

import numpy as np
import pytest
from likelihood_cases import CASES, IDS
from sklearn.base import BaseEstimator, clone

from sklearn_lvgp.likelihoods import (
    Bernoulli,
    Beta,
    Gaussian,
    Likelihood,
    Ordinal,
    Poisson,
    RobustMax,
    Softmax,
    StudentT,
)
from sklearn_lvgp.likelihoods import _quadrature_numba as _nb


class _Holder(BaseEstimator):
    """An estimator with a likelihood parameter."""

    def __init__(self, likelihood=None, alpha=1.0):
        self.likelihood = likelihood
        self.alpha = alpha


@pytest.mark.parametrize(("name", "factory", "make_data"), CASES, ids=IDS)
def test_get_set_params_and_clone(name, factory, make_data, rng):
    lik = factory()
    assert isinstance(lik, Likelihood)
    params = lik.get_params()
    twin = lik.clone()
    assert twin == lik and twin is not lik
    assert type(lik)(**params) == lik
    assert clone(lik) == lik  # scikit-learn's clone
    for key, value in params.items():
        if isinstance(value, np.ndarray):
            assert twin.get_params()[key] is not value  # arrays are copied
    lik.set_params(**params)
    assert lik == twin
    with pytest.raises(ValueError, match="Invalid parameter 'nope' for likelihood"):
        lik.set_params(nope=1)
    y, mu, var = make_data(rng)
    np.testing.assert_array_equal(twin.variational_expectation(y, mu, var),
                                  lik.variational_expectation(y, mu, var))
    assert repr(lik).startswith(type(lik).__name__ + "(")
    assert pickle.loads(pickle.dumps(lik)) == lik


@pytest.mark.parametrize(("name", "factory", "make_data"), CASES, ids=IDS)
def test_theta_round_trip_and_bounds(name, factory, make_data, rng):
    lik = factory()
    free = [h for h in lik.hyperparameters if not h.fixed]
    assert lik.n_theta == sum(h.n_elements for h in free) == lik.theta.size
    assert lik.bounds.shape == (lik.n_theta, 2)
    new = lik.theta + 0.1 * rng.standard_normal(lik.n_theta)
    lik.theta = new
    np.testing.assert_allclose(lik.theta, new, rtol=1e-13, atol=1e-14)
    lik._validate()  # every theta is a valid value
    with pytest.raises(ValueError, match=f"theta has {lik.n_theta + 1} entries, likelihood"):
        lik.theta = np.zeros(lik.n_theta + 1)


def test_fixed_hyperparameters_leave_theta():
    lik = StudentT(df=4.0, scale=0.5)
    assert [h.name for h in lik.hyperparameters if not h.fixed] == ["scale"]
    np.testing.assert_allclose(lik.theta, [np.log(0.5)])
    np.testing.assert_allclose(lik.bounds, np.log([[1e-5, 1e5]]))
    learned = StudentT(df=4.0, scale=0.5, df_bounds=(2.0, 50.0), scale_bounds="fixed")
    np.testing.assert_allclose(learned.theta, [np.log(4.0)])
    np.testing.assert_allclose(learned.bounds, np.log([[2.0, 50.0]]))
    lik = Gaussian(noise_variance=0.3, noise_variance_bounds="fixed")
    assert lik.n_theta == 0 and lik.variational_expectation_vjp(
        1.0, np.zeros((2, 1)), np.zeros((2, 1)), np.ones((2, 1))).theta.shape == (0,)


def test_logit_and_ordered_transforms():
    lik = RobustMax(epsilon=0.2, epsilon_bounds=(0.01, 0.5))
    np.testing.assert_allclose(lik.theta, [np.log(0.2 / 0.8)])
    np.testing.assert_allclose(lik.bounds, [[np.log(0.01 / 0.99), 0.0]], atol=1e-15)
    lik.theta = np.array([5.0])
    assert 0 < lik.epsilon < 1
    edges = Ordinal(bin_edges=np.array([-1.0, 0.5, 2.0]), bin_edges_bounds=(0.1, 10.0))
    np.testing.assert_allclose(edges.theta, [-1.0, np.log(1.5), np.log(1.5), 0.0])
    np.testing.assert_allclose(edges.bounds[:3], [[-np.inf, np.inf], np.log([0.1, 10.0]),
                                                  np.log([0.1, 10.0])])
    edges.theta = np.array([3.0, -20.0, 4.0, 0.0])  # any theta gives increasing edges
    assert np.all(np.diff(edges.bin_edges) > 0) and edges.bin_edges[0] == 3.0


def test_nested_in_an_estimator():
    est = _Holder(likelihood=StudentT(df=4.0, df_bounds="fixed", scale=1.0))
    params = est.get_params(deep=True)
    assert params["likelihood__df"] == 4.0 and params["likelihood__df_bounds"] == "fixed"
    est.set_params(likelihood__df=7.0, likelihood__scale_bounds="fixed")
    assert est.likelihood.df == 7.0 and est.likelihood.n_theta == 0
    copy = clone(est)
    assert copy.likelihood == est.likelihood and copy.likelihood is not est.likelihood


def test_identity_across_types():
    assert StudentT() != Gaussian()
    assert Bernoulli(link="logit") != Bernoulli(link="probit")
    assert Ordinal(bin_edges=[0.0, 1.0]) == Ordinal(bin_edges=np.array([0.0, 1.0]))


# ----------------------------------------------------------------------- bad values and targets
BAD = [
    (lambda: Gaussian(noise_variance=0.0), "noise_variance must be a positive number"),
    (lambda: Gaussian(noise_variance=np.array([0.1, -1.0])), "noise_variance must be"),
    (lambda: StudentT(df=-1.0), "df must be a positive number"),
    (lambda: StudentT(scale="big"), "scale must be a positive number"),
    (lambda: StudentT(gh_order=0), "gh_order must be a positive integer"),
    (lambda: StudentT(df_bounds="fixd"), "df_bounds must be 'fixed', None or a"),
    (lambda: StudentT(scale_bounds=(2.0, 1.0)), "scale_bounds must have low <= high"),
    (lambda: StudentT(scale_bounds=(0.0, 1.0)), "scale_bounds must be positive"),
    (lambda: Bernoulli(link="cloglog"), "link must be 'probit' or 'logit'"),
    (lambda: Beta(scale=np.nan), "scale must be a positive number"),
    (lambda: Beta(link=None), "link must be 'probit' or 'logit'"),
    (lambda: Ordinal(bin_edges=[1.0, 0.0]), "bin_edges must be strictly increasing"),
    (lambda: Ordinal(bin_edges=[[0.0, 1.0]]), "bin_edges must be a non-empty 1-D array"),
    (lambda: Ordinal(), "bin_edges is None: pass the edges, or call initialize"),
    (lambda: RobustMax(epsilon=1.5), r"epsilon must lie in \(0, 1\)"),
    (lambda: RobustMax(epsilon_bounds=(0.1, 2.0)), r"epsilon_bounds must lie in \[0, 1\]"),
    (lambda: Softmax(n_samples=3), "n_samples must be even"),
    (lambda: Softmax(n_samples=4), "n_samples must be at least twice the number of classes"),
    (lambda: Softmax(random_state=np.random.RandomState(0)),
     "random_state must be a non-negative int"),
]


@pytest.mark.parametrize(("factory", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_hyperparameters_raise_clear_errors(factory, message):
    lik = factory()  # __init__ only stores
    mu, var = np.zeros((4, 3)), np.ones((4, 3))
    y = np.zeros(4, dtype=int) if lik.is_multiclass else np.full((4, 3), 0.5)
    if isinstance(lik, Ordinal):
        y = np.zeros((4, 3), dtype=int)
    with pytest.raises(ValueError, match=message):
        lik.variational_expectation(y, mu, var)


BAD_TARGETS = [
    (Beta(), np.array([[0.5], [1.0]]), "strictly between 0 and 1"),
    (Bernoulli(), np.array([[0.0], [2.0]]), r"targets in \{0, 1\}"),
    (Poisson(), np.array([[1.5], [2.0]]), "non-negative integer counts"),
    (Poisson(), np.array([[-1.0], [2.0]]), "non-negative integer counts"),
    (Ordinal(bin_edges=[0.0, 1.0]), np.array([[0], [3]]), r"class indices >= 0 and < 3"),
    (Gaussian(), np.array([[np.nan], [0.0]]), "finite targets"),
    (Gaussian(), np.zeros((2, 2)), r"y must have shape \(2, 1\)"),
]


@pytest.mark.parametrize(("lik", "y", "message"), BAD_TARGETS, ids=[m for *_, m in BAD_TARGETS])
def test_bad_targets_raise_clear_errors(lik, y, message):
    with pytest.raises(ValueError, match=message):
        lik.variational_expectation(y, np.zeros((2, 1)), np.ones((2, 1)))


def test_multiclass_shapes_and_targets():
    mu, var = np.zeros((3, 4)), np.ones((3, 4))
    for lik in (Softmax(), RobustMax()):
        assert lik.variational_expectation(np.array([[0], [1], [3]]), mu, var).shape == (3,)
        with pytest.raises(ValueError, match=r"class indices >= 0 and < 4"):
            lik.variational_expectation(np.array([0, 1, 4]), mu, var)
        with pytest.raises(ValueError, match=r"shape \(N, K\) with K >= 2"):
            lik.variational_expectation(np.array([0]), np.zeros((1, 1)), np.ones((1, 1)))
        with pytest.raises(ValueError, match="mu and var must have the same shape"):
            lik.variational_expectation(np.array([0, 1, 2]), mu, var[:, :2])
        assert lik.n_latent(5) == 5
        with pytest.raises(ValueError, match="at least 2 classes"):
            lik.n_latent(1)


def test_layout_notions():
    assert Gaussian().n_latent(3) == 3 and not Gaussian().is_classification
    assert Bernoulli().n_latent(2) == 1 and Bernoulli().is_classification
    with pytest.raises(ValueError, match="two-class likelihood"):
        Bernoulli().n_latent(3)
    assert Ordinal(bin_edges=[0.0, 1.0]).n_classes == 3
    assert Ordinal(bin_edges=[0.0, 1.0]).n_latent(3) == 1
    with pytest.raises(ValueError, match="Ordinal has 3 classes"):
        Ordinal(bin_edges=[0.0, 1.0]).n_latent(4)
    with pytest.raises(NotImplementedError, match="not a classification likelihood"):
        StudentT().predict_proba(np.zeros((2, 1)), np.ones((2, 1)))
    with pytest.raises(NotImplementedError, match="no predictive mean and variance"):
        Softmax().predict_mean_and_var(np.zeros((2, 3)), np.ones((2, 3)))


def test_ordinal_initialize_places_edges_from_the_targets():
    lik = Ordinal(scale=0.5)
    y = np.array([0, 1, 2, 3, 4, 2])
    ready = lik.initialize(y)
    assert lik.bin_edges is None and ready.n_classes == 5
    assert np.all(np.diff(ready.bin_edges) > 0)
    # a unit-variance latent function at 0 gives equal class probabilities
    np.testing.assert_allclose(ready.predict_proba(np.zeros((1, 1)), np.ones((1, 1))), 0.2,
                               rtol=1e-12)
    with pytest.raises(ValueError, match="at least 2 classes"):
        lik.initialize(np.zeros(3, dtype=int))
    kept = Ordinal(bin_edges=[0.0, 1.0]).initialize(np.array([0, 2]))
    np.testing.assert_array_equal(kept.bin_edges, [0.0, 1.0])


def test_jitted_special_functions():
    from scipy.special import digamma, log_ndtr

    t = np.concatenate([np.linspace(-60, 12, 500), [-37.0, -36.999, 0.0, 1e-3]])
    got = np.array([_nb.log_ndtr(v) for v in t])
    np.testing.assert_allclose(got, log_ndtr(t), rtol=1e-13, atol=1e-300)
    x = np.concatenate([np.logspace(-8, 3, 200), [1e-300, 9.999, 10.0]])
    np.testing.assert_allclose([_nb.digamma(v) for v in x], digamma(x), rtol=1e-13)
    from sklearn_lvgp.likelihoods._ordinal import log_ndtr_diff

    a = np.array([-30.0, -1.0, 0.5, 3.0, 30.0, np.inf, 1e-9])
    b = np.array([-31.0, -np.inf, -0.5, 2.9, 29.0, 40.0, -1e-9])
    ref = np.array([_nb.log_ndtr_diff(u, v) for u, v in zip(a, b, strict=True)])
    np.testing.assert_allclose(log_ndtr_diff(a, b), ref, rtol=1e-12)
    assert np.all(np.isfinite(ref))
