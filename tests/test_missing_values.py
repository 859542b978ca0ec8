"""Missing values in the collapsed GPLVM bound and in UnscentedGPLVM (NaN = missing at random)."""

import numpy as np
import pytest

from sklearn_lvgp._core.params import ParamPacker
from sklearn_lvgp.bounds._collapsed import CollapsedPsiBound
from sklearn_lvgp.bounds._collapsed_masked import MaskedPsiBound, column_groups
from sklearn_lvgp.expectations import make_rule
from sklearn_lvgp.kernels import RBF, Matern32
from sklearn_lvgp.utils.gradcheck import check_grad


def _problem(seed=0, N=17, D=4, Q=2, M=5, missing=0.3):
    r = np.random.default_rng(seed)
    Y = r.standard_normal((N, D))
    Y[r.random((N, D)) < missing] = np.nan
    Y[3] = np.nan  # a row with every entry missing
    # columns 0 and 1 share a pattern
    Y[:, 1] = np.where(np.isnan(Y[:, 0]), np.nan, np.nan_to_num(Y[:, 1], nan=0.7))
    Y[0, :2] = 0.5
    return Y, r.standard_normal((N, Q)), r.uniform(0.1, 0.6, (N, Q)), r.standard_normal((M, Q))


def _kernel(name, Q=2):
    k = (RBF(length_scale=[0.9, 1.2]) if name == "analytic" else Matern32(length_scale=[1.0, 0.7]))
    k = k.initialize(Q, np.random.RandomState(0))
    return k, make_rule(name, k, Q)[1]


@pytest.mark.parametrize("rule_name", ["analytic", "unscented"])
def test_masked_bound_is_the_sum_of_column_bounds(rule_name):
    Y, mu, S, Z = _problem()
    kernel, rule = _kernel(rule_name)
    F, grads, post = MaskedPsiBound(Y, chunk_rows=4).evaluate(kernel, Z, mu, S, 0.3, rule)
    F_ref, dmu, dS = 0.0, np.zeros_like(mu), np.zeros_like(S)
    dZ, dtheta, dnoise = 0.0, 0.0, 0.0
    for d in range(Y.shape[1]):
        o = ~np.isnan(Y[:, d])
        f, g, _ = CollapsedPsiBound(Y[o, d:d + 1]).evaluate(kernel, Z, mu[o], S[o], 0.3, rule)
        F_ref += f
        dmu[o] += g["mu"]
        dS[o] += g["S"]
        dZ, dtheta, dnoise = dZ + g["Z"], dtheta + g["theta"], dnoise + g["noise"]
    np.testing.assert_allclose(F, F_ref, rtol=1e-10)
    for got, ref in [(grads["mu"], dmu), (grads["S"], dS), (grads["Z"], dZ),
                     (grads["theta"], dtheta), (grads["noise"], dnoise)]:
        np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-10)
    assert np.all(grads["mu"][3] == 0) and np.all(grads["S"][3] == 0)  # the empty row
    assert len(post.groups) == len(column_groups(~np.isnan(Y)).columns) < Y.shape[1]


def test_masked_bound_on_complete_data_is_the_collapsed_bound():
    Y, mu, S, Z = _problem(missing=0.0)
    Y = np.nan_to_num(Y, nan=0.25)
    kernel, rule = _kernel("analytic")
    F, g, _ = MaskedPsiBound(Y).evaluate(kernel, Z, mu, S, 0.3, rule)
    F0, g0, _ = CollapsedPsiBound(Y).evaluate(kernel, Z, mu, S, 0.3, rule)
    np.testing.assert_allclose(F, F0, rtol=1e-10)
    for k in ("mu", "S", "Z", "theta", "noise"):
        np.testing.assert_allclose(g[k], g0[k], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("rule_name", ["analytic", "unscented"])
def test_masked_elbo_gradient_blocks_match_finite_differences(rule_name):
    Y, mu, S, Z = _problem(seed=1)
    kernel, rule = _kernel(rule_name)
    bound = MaskedPsiBound(Y, chunk_rows=5)
    packer = ParamPacker([("mu", mu.shape), ("S", S.shape, "log"), ("Z", Z.shape),
                          ("theta", (kernel.n_theta,)), ("noise", (), "log")])

    def fun(flat):
        p = packer.unpack(flat)
        k = kernel.clone_with_theta(p["theta"])
        value, grads, _ = bound.elbo(k, p["Z"], p["mu"], p["S"], float(p["noise"]), rule)
        return value, packer.pack_grad(grads, p)

    x = packer.pack({"mu": mu, "S": S, "Z": Z, "theta": kernel.theta, "noise": 0.3})
    check_grad(fun, x, rtol=1e-5, blocks=packer)


def test_column_without_observations_is_refused():
    Y = np.ones((5, 3))
    Y[:, 1] = np.nan
    with pytest.raises(ValueError, match=r"Column\(s\) \[1\] of X have no observed value"):
        MaskedPsiBound(Y)


def test_masked_rows_objective_matches_finite_differences():
    from sklearn_lvgp.bounds._collapsed_masked import MaskedPsiBound
    from sklearn_lvgp.optim._alternating import heldout_rows_objective

    Y, mu, S, Z = _problem(seed=2)
    kernel, rule = _kernel("unscented")
    _, _, post = MaskedPsiBound(Y).evaluate(kernel, Z, mu, S, 0.3, rule)
    fun = heldout_rows_objective(kernel, Z, rule, post, Y)
    rows = np.arange(Y.shape[0])
    X = np.hstack([mu, np.log(S)])
    for n in (0, 3, 7):  # a complete row, an empty row, a partly observed one

        def one(x, n=n):
            Xn = X.copy()
            Xn[n] = x
            f, G = fun(rows, Xn)
            return f[n], G[n]

        check_grad(one, X[n], rtol=1e-5)


# ------------------------------------------------------------------------- the estimator
from sklearn_lvgp import UnscentedGPLVM  # noqa: E402


def _curve(n=40, D=5, seed=0, missing=0.25):
    r = np.random.default_rng(seed)
    t = np.linspace(-2, 2, n)
    W = r.standard_normal((2, D))
    X = np.tanh(np.column_stack([t, np.sin(2 * t)]) @ W) + 0.05 * r.standard_normal((n, D))
    Xm = X.copy()
    Xm[r.random(X.shape) < missing] = np.nan
    Xm[4] = np.nan
    Xm[0] = X[0]
    return X, Xm


FAST = {"n_inducing": 8, "max_iter": 60, "transform_max_iter": 30, "random_state": 0}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fit_transform_score_inverse_transform_accept_nan():
    X, Xm = _curve()
    model = UnscentedGPLVM(**FAST).fit(Xm)
    assert np.isfinite(model.elbo_)
    np.testing.assert_array_equal(model.latent_mean_[4], 0.0)  # no entry: the prior
    np.testing.assert_array_equal(model.latent_variance_[4], 1.0)
    np.testing.assert_array_equal(model.transform(Xm), model.latent_mean_)  # fitted rows
    new = Xm[:10] + 0.01
    mu, sd = model.transform(new, return_std=True)
    assert np.all(np.isfinite(mu)) and np.all(sd > 0)
    np.testing.assert_allclose(sd[4], 1.0, atol=1e-4)  # a new empty row: the prior
    scores = model.score_samples(new)
    assert np.all(np.isfinite(scores))
    assert abs(scores[4]) < 1e-6  # no entry, KL 0 at the prior
    out = model.inverse_transform(mu)
    assert out.shape == X[:10].shape and np.all(np.isfinite(out))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_score_of_a_row_is_the_bound_over_its_observed_entries():
    # a row with entries missing scores as the same row under a model whose q(u) of those
    # columns is ignored: dropping a column of a complete-data fit's row lowers the count
    X, _ = _curve(missing=0.0)
    model = UnscentedGPLVM(**FAST).fit(X)
    row = X[:1] + 0.05
    part = row.copy()
    part[0, 2] = np.nan
    mu, sd = model.transform(row, return_std=True)
    full = model._predictive(True).heldout_scores(model._normalized(row), mu, sd ** 2)
    np.testing.assert_allclose(full, model._predictive().heldout_scores(
        model._normalized(row), mu, sd ** 2), rtol=1e-10)
    assert np.isfinite(model.score_samples(part)).all()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("params", [{"optimizer": "alternating", "max_iter": 3},
                                    {"optimizer": "adam", "learning_rate": 0.05},
                                    {"expectation": "unscented", "kernel": Matern32()},
                                    {"normalize_X": "standardize"}])
def test_other_paths_accept_nan(params):
    _, Xm = _curve(seed=1)
    model = UnscentedGPLVM(**{**FAST, **params}).fit(Xm)
    assert np.isfinite(model.elbo_) and np.all(np.isfinite(model.latent_mean_))
    assert np.all(np.isfinite(model.transform(Xm[:5] * 1.01)))


def test_complete_data_takes_the_complete_data_path():
    from sklearn_lvgp.bounds._collapsed_global import CollapsedPosterior

    X, _ = _curve(missing=0.0)
    model = UnscentedGPLVM(**{**FAST, "max_iter": 5}).fit(X)
    assert isinstance(model._post, CollapsedPosterior)


def test_bad_missing_input_is_refused_by_name():
    _, Xm = _curve()
    empty_column = Xm.copy()
    empty_column[:, 2] = np.nan
    with pytest.raises(ValueError, match=r"column\(s\) \[2\] of X have no observed value"):
        UnscentedGPLVM(**FAST).fit(empty_column)
    with_inf = Xm.copy()
    with_inf[1, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        UnscentedGPLVM(**FAST).fit(with_inf)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_dask_input_with_nan_is_refused_by_fit_and_taken_by_transform():
    da = pytest.importorskip("dask.array")
    _, Xm = _curve()
    with pytest.raises(ValueError, match="Missing values .NaN. are not taken from Dask input"):
        UnscentedGPLVM(**FAST).fit(da.from_array(Xm, chunks=(20, 5)))
    model = UnscentedGPLVM(**FAST).fit(Xm)
    new = Xm[:12] + 0.01
    got = model.transform(da.from_array(new, chunks=(6, 5))).compute(scheduler="sync")
    np.testing.assert_allclose(got, model.transform(new), rtol=1e-12)


def test_masked_bound_same_with_and_without_kept_caches(monkeypatch):
    import sklearn_lvgp.engine._rows as rows_module

    Y, mu, S, Z = _problem(seed=3)
    kernel, rule = _kernel("analytic")
    bound = MaskedPsiBound(Y, chunk_rows=6)
    assert bound.plan(rule, *Z.shape)[1]
    kept = bound.evaluate(kernel, Z, mu, S, 0.3, rule)
    monkeypatch.setattr(rows_module, "KEEP_TOTAL", 0)
    bound = MaskedPsiBound(Y, chunk_rows=6)
    assert not bound.plan(rule, *Z.shape)[1]
    recomputed = bound.evaluate(kernel, Z, mu, S, 0.3, rule)
    assert kept[0] == recomputed[0]
    for k in ("mu", "S", "Z", "theta", "noise"):
        np.testing.assert_array_equal(kept[1][k], recomputed[1][k])
