"""The minibatch (SVI) GPLVM: the uncollapsed bound against the collapsed one, and
``UnscentedGPLVM(optimizer="svi")`` (missing values, reproducibility, threads, errors).

The bound's finite-difference, chunking, thread and Dask checks are those of the conformance
test (``tests/bounds/conformance_svi.py``).
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import UnscentedGPLVM
from sklearn_lvgp.bounds._collapsed_masked import collapsed_psi_bound, column_groups
from sklearn_lvgp.bounds._svi import SviParams, UncollapsedPsi
from sklearn_lvgp.engine import InMemoryRows, evaluate_bound
from sklearn_lvgp.expectations import make_rule
from sklearn_lvgp.kernels import RBF, Matern32
from sklearn_lvgp.variational import natgrad_from_statistics


def _curve(N=120, seed=0, noise=0.05):
    r = np.random.default_rng(seed)
    t = r.uniform(-2, 2, (N, 2))
    X = np.column_stack([np.sin(t[:, 0]), np.cos(t[:, 1]), t[:, 0] * t[:, 1], t[:, 0],
                         t[:, 1] ** 2, np.sin(t[:, 0] + t[:, 1])])
    return X + noise * r.standard_normal(X.shape)


@pytest.mark.parametrize("missing", [0.0, 0.3])
@pytest.mark.parametrize("rule_name", ["analytic", "unscented"])
def test_optimal_q_u_gives_the_collapsed_bound_and_gradients(missing, rule_name):
    # one natural-gradient step of size 1 on all rows is the optimal q(u) (Titsias 2009); there
    # the uncollapsed bound is the collapsed one and, q(u) being stationary, so are the
    # gradients of every other parameter
    r = np.random.default_rng(1)
    N, D, Q, M = 40, 3, 2, 6
    Y = np.where(r.random((N, D)) < missing, np.nan, r.standard_normal((N, D)))
    observed = ~np.isnan(Y)
    groups = column_groups(observed)
    mu, S, Z = r.standard_normal((N, Q)), r.uniform(0.1, 0.5, (N, Q)), r.standard_normal((M, Q))
    kernel = (RBF(length_scale=[1.0, 1.3]) if rule_name == "analytic"
              else Matern32(length_scale=[1.0, 1.3])).initialize(Q, np.random.RandomState(0))
    rule = make_rule(rule_name, kernel, Q)[1]
    rows = InMemoryRows({"Y": np.where(observed, Y, 0.0), "R": groups.member, "mu": mu, "S": S},
                        chunk_rows=7)
    bound = UncollapsedPsi()
    params = SviParams(kernel, Z, 0.3, rule, groups, np.zeros((M, D)),
                       np.repeat(np.eye(M)[None], D, axis=0))
    G = bound.prepare(params)
    sums = bound.natgrad_sums(G, rows.map_reduce(bound.chunk_stats, G, rows.plan(bound, G)))[0]
    q_mu, q_sqrt = natgrad_from_statistics(params.q_mu, params.q_sqrt, *sums, 1.0)
    out = evaluate_bound(bound, params._replace(q_mu=q_mu, q_sqrt=q_sqrt), rows)
    F, g, _ = collapsed_psi_bound(Y).elbo(kernel, Z, mu, S, 0.3, rule)
    assert out.value == pytest.approx(F, rel=1e-11)
    for name in ("Z", "theta", "noise"):
        np.testing.assert_allclose(out.grads[name], g[name], rtol=1e-9, atol=1e-9, err_msg=name)
    np.testing.assert_allclose(out.local["mu"], g["mu"], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(out.local["S"], g["S"], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(out.grads["q_mu"], 0.0, atol=1e-9)
    np.testing.assert_allclose(out.grads["q_sqrt"], 0.0, atol=1e-9)


@pytest.mark.parametrize("missing", [0.0, 0.3])
@pytest.mark.parametrize("rule_name", ["analytic", "unscented"])
def test_kept_and_recomputed_psi_caches_agree(missing, rule_name, monkeypatch):
    # the backward pass reads the forward pass's Ψ cache where the plan keeps it, and
    # recomputes it (without Ψ2 where it can) where it does not
    import sklearn_lvgp.engine._rows as rows_module

    r = np.random.default_rng(2)
    N, D, Q, M = 30, 3, 2, 6
    Y = np.where(r.random((N, D)) < missing, np.nan, r.standard_normal((N, D)))
    observed = ~np.isnan(Y)
    observed[4] = False
    groups = column_groups(observed)
    kernel = (RBF(length_scale=[1.0, 1.3]) if rule_name == "analytic"
              else Matern32(length_scale=[1.0, 1.3])).initialize(Q, np.random.RandomState(0))
    params = SviParams(kernel, r.standard_normal((M, Q)), 0.3, make_rule(rule_name, kernel, Q)[1],
                       groups, r.standard_normal((M, D)),
                       np.repeat(0.7 * np.eye(M)[None], D, axis=0), 2.5)
    arrays = {"Y": np.where(observed, Y, 0.0), "R": groups.member,
              "mu": r.standard_normal((N, Q)), "S": r.uniform(0.1, 0.5, (N, Q))}
    kept = evaluate_bound(UncollapsedPsi(), params, InMemoryRows(arrays, chunk_rows=7))
    monkeypatch.setattr(rows_module, "KEEP_TOTAL", 0)
    source = InMemoryRows(arrays, chunk_rows=7)
    assert not source.chunks(UncollapsedPsi(), UncollapsedPsi().prepare(params))[1]
    recomputed = evaluate_bound(UncollapsedPsi(), params, source)
    assert recomputed.value == pytest.approx(kept.value, rel=1e-13)
    for name in ("Z", "theta", "q_mu", "q_sqrt"):
        np.testing.assert_allclose(recomputed.grads[name], kept.grads[name], rtol=1e-11,
                                   atol=1e-12, err_msg=name)
    for name in ("mu", "S"):
        np.testing.assert_allclose(recomputed.local[name], kept.local[name], rtol=1e-11,
                                   atol=1e-12, err_msg=name)


def _svi(**kw):
    return UnscentedGPLVM(**{"n_components": 2, "n_inducing": 10, "optimizer": "svi",
                             "learning_rate": 0.05, "random_state": 0, **kw})


def test_full_batch_svi_approaches_the_collapsed_fit():
    # full batch with natgrad_gamma=1: Adam on the collapsed bound in all but name. Measured
    # (N = 120, M = 10): collapsed L-BFGS-B to convergence -5.091 per row; SVI after 500 epochs
    # -5.498 (8 %), after 1000 -5.132 (0.8 %)
    X = _curve()
    collapsed = UnscentedGPLVM(n_components=2, n_inducing=10, random_state=0).fit(X)
    svi = _svi(max_iter=1000, natgrad_gamma=1.0).fit(X)
    ref = collapsed.elbo_ / X.shape[0]
    got = svi.elbo_ / X.shape[0]
    assert got <= ref + 1e-6  # no better than the converged collapsed bound
    assert got >= ref - 0.02 * abs(ref)
    assert svi.optimizer_ == "svi" and svi.n_iter_ == 1000 and svi.elbo_history_.shape == (1000,)


@pytest.mark.slow
def test_minibatch_svi_approaches_the_collapsed_fit():
    # four minibatches per epoch, natgrad_gamma=0.1: measured -5.575 per row after 1000 epochs
    # with the final optimal q(u) (-5.595 without; collapsed -5.091), the noise of the
    # minibatch steps costing about 10 %
    X = _curve()
    ref = UnscentedGPLVM(n_components=2, n_inducing=10, random_state=0).fit(X).elbo_
    got = _svi(max_iter=1000, batch_size=30).fit(X).elbo_
    assert ref - 0.12 * abs(ref) <= got <= ref


def test_svi_ends_at_the_optimal_q_u():
    # the fit ends with q(u) at its optimum for all rows, so elbo_ is the collapsed bound at the
    # fitted parameters (the minibatch q(u) would give less)
    X = _curve(60)
    model = _svi(max_iter=5, batch_size=16).fit(X)
    F, _, _ = collapsed_psi_bound(model._Y).elbo(
        model.kernel_, model.inducing_inputs_, model.latent_mean_, model.latent_variance_,
        model.noise_variance_, model._rule)
    assert model.elbo_ == pytest.approx(F, rel=1e-10)


def test_svi_is_reproducible_and_thread_count_free():
    X = _curve(60)
    a = _svi(max_iter=5, batch_size=16).fit(X)
    b = _svi(max_iter=5, batch_size=16, n_jobs=2).fit(X)
    c = _svi(max_iter=5, batch_size=16, random_state=1).fit(X)
    np.testing.assert_array_equal(a.latent_mean_, b.latent_mean_)
    assert a.elbo_ == b.elbo_
    assert not np.array_equal(a.latent_mean_, c.latent_mean_)
    assert a.n_iter_ == 5 and a.elbo_history_.shape == (5,)


def test_svi_with_missing_values():
    X = _curve(80)
    r = np.random.default_rng(3)
    Xn = np.where(r.random(X.shape) < 0.2, np.nan, X)
    Xn[4] = np.nan  # a row with no observed entry
    model = _svi(max_iter=60, batch_size=20).fit(Xn)
    assert np.isfinite(model.elbo_)
    assert np.all(np.isfinite(model.latent_mean_)) and np.all(model.latent_variance_ > 0)
    # the row with nothing observed sees only its KL: it moves towards the prior
    assert np.linalg.norm(model.latent_mean_[4]) < 1.0
    Z = model.transform(Xn[:10] + 0.01)
    assert Z.shape == (10, 2) and np.all(np.isfinite(Z))
    assert np.all(np.isfinite(model.score_samples(Xn[:10])))
    m, s = model.inverse_transform(model.latent_mean_[:5], return_std=True)
    assert np.all(np.isfinite(m)) and np.all(s > 0)
    # the mask decides: the same fit on the complete rows differs
    full = _svi(max_iter=60, batch_size=20).fit(X)
    assert not np.allclose(full.latent_mean_, model.latent_mean_)


def test_svi_monte_carlo_and_unscented_rules_fit():
    X = _curve(40)
    for kw in ({"expectation": "monte_carlo", "n_samples": 4},
               {"expectation": "unscented", "kernel": Matern32(length_scale=[1.0, 1.0])}):
        model = _svi(max_iter=10, batch_size=10, n_inducing=5, **kw).fit(X)
        assert np.isfinite(model.elbo_) and model.transform(X[:3] + 0.1).shape == (3, 2)


def test_svi_tol_stops_the_run_or_warns():
    X = _curve(40)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = _svi(max_iter=2000, tol=1e-2, n_inducing=5).fit(X)
    assert model.n_iter_ < 2000
    with pytest.warns(ConvergenceWarning, match="max_iter=20 epochs"):
        _svi(max_iter=20, tol=1e-6, n_inducing=5).fit(X)


@pytest.mark.parametrize("params, match", [
    ({"batch_size": 0}, "batch_size"),
    ({"natgrad_gamma": 1.5}, "natgrad_gamma"),
    ({"natgrad_gamma": 0.0}, "natgrad_gamma"),
    ({"early_stopping": True}, "early_stopping"),
])
def test_svi_parameter_errors(params, match):
    with pytest.raises(ValueError, match=match):
        _svi(max_iter=2, **params).fit(_curve(30))


def test_svi_refuses_a_column_with_no_observed_value():
    X = _curve(30)
    X[:, 2] = np.nan
    with pytest.raises(ValueError, match=r"column\(s\) \[2\] of X have no observed value"):
        _svi(max_iter=2).fit(X)


def test_svi_with_an_encoder():
    X = _curve(80)
    r = np.random.default_rng(4)
    Xn = np.where(r.random(X.shape) < 0.1, np.nan, X)
    model = _svi(max_iter=40, batch_size=20, encoder="mlp").fit(Xn)
    again = _svi(max_iter=40, batch_size=20, encoder="mlp").fit(Xn)
    assert np.isfinite(model.elbo_) and model.elbo_ == again.elbo_
    assert np.all(model.latent_variance_ > 0)
    # the encoder improves on its start (the PCA means and latent_variance_init)
    start = _svi(max_iter=1, batch_size=80, encoder="mlp", learning_rate=1e-12).fit(Xn)
    assert model.elbo_ > start.elbo_
    assert model.transform(Xn[:4] + 0.01).shape == (4, 2)


def test_encoder_gives_the_q_x_of_new_rows():
    # amortised: a new row's q(x*) is the encoder's output, the same map as the training rows'
    # latent_mean_ (a per-row L-BFGS from the nearest training row would move it off that map)
    X = _curve(80)
    model = _svi(max_iter=40, batch_size=20, encoder="mlp", transform_max_iter=1).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # no per-row optimisation
        Zn = model.transform(X[:6] + 1e-9)
    np.testing.assert_allclose(Zn, model.latent_mean_[:6], rtol=1e-6, atol=1e-7)
    far = X[:6] + 0.3
    mu, sd = model._latent_moments(far)
    np.testing.assert_allclose(model.transform(far), mu)
    assert not np.allclose(mu, model.latent_mean_[:6], atol=1e-3) and np.all(sd > 0)
    assert np.all(np.isfinite(model.score_samples(far)))


def test_natgrad_gamma_schedule():
    X = _curve(60)
    ramp = _svi(max_iter=5, batch_size=15, natgrad_gamma=(0.01, 0.5, 10)).fit(X)
    flat = _svi(max_iter=5, batch_size=15, natgrad_gamma=0.01).fit(X)
    assert np.isfinite(ramp.elbo_) and ramp.elbo_ != flat.elbo_
    # a schedule that stays at its start is the constant step
    still = _svi(max_iter=5, batch_size=15, natgrad_gamma=(0.01, 0.01, 10)).fit(X)
    assert still.elbo_ == pytest.approx(flat.elbo_, rel=1e-12)
    for bad in ((0.1, 2.0, 5), (0.1, 0.5), None):
        with pytest.raises(ValueError, match="natgrad_gamma"):
            _svi(max_iter=2, natgrad_gamma=bad).fit(X)


@pytest.mark.parametrize("params", [{"encoder": "mlp", "optimizer": "adam"},
                                    {"encoder": "cnn"}])
def test_encoder_needs_svi(params):
    with pytest.raises(ValueError, match="encoder must be None or 'mlp'"):
        _svi(max_iter=2, **params).fit(_curve(30))
