"""The deep-GP bound through the chunk engine: chunking and threads change nothing."""

import numpy as np
import pytest

from sklearn_lvgp import DeepGP
from sklearn_lvgp._core.parallel import threads
from sklearn_lvgp.likelihoods._gaussian import gaussian_expectation
from sklearn_lvgp.utils.gradcheck import check_grad

CONFIGS = [(1, "monte_carlo"), (2, "monte_carlo"), (3, "monte_carlo"), (2, "unscented"),
           (3, "unscented")]


def _model(n_layers, expectation, n=23, seed=0):
    r = np.random.default_rng(seed)
    X = r.uniform(-2, 2, (n, 3))
    y = np.sin(X[:, 0]) + 0.2 * X[:, 1] + 0.05 * r.standard_normal(n)
    m = DeepGP(n_layers=n_layers, hidden_dims=2, n_inducing=5, max_iter=3, n_samples=3,
               expectation=expectation, random_state=0).fit(X, y)
    Xs = (X - m.X_mean_) / m.X_scale_
    Ys = (y[:, None] - m.y_mean_) / m.y_scale_
    x = m._x + 0.01 * r.standard_normal(m._x.size)
    return m._model, x, Xs, Ys


def _elbo(model, x, Xs, Ys, chunk_rows, seed=7):
    model.chunk_rows = chunk_rows
    try:
        return model.elbo(x, Xs, Ys, 2.0, 3, np.random.RandomState(seed))
    finally:
        model.chunk_rows = None


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n_layers,expectation", CONFIGS)
def test_chunked_bound_equals_one_chunk(n_layers, expectation):
    model, x, Xs, Ys = _model(n_layers, expectation)
    f_ref, g_ref = _elbo(model, x, Xs, Ys, Xs.shape[0])
    for rows in (1, 7):
        f, g = _elbo(model, x, Xs, Ys, rows)
        assert f == pytest.approx(f_ref, rel=1e-10)
        np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-10 * np.max(np.abs(g_ref)))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n_layers,expectation", [(2, "monte_carlo"), (3, "unscented")])
def test_bound_value_equals_the_unchunked_propagation(n_layers, expectation):
    """The value against the layer-by-layer expectation of the whole minibatch."""
    model, x, Xs, Ys = _model(n_layers, expectation)
    f, _ = _elbo(model, x, Xs, Ys, 4)
    layers, noise, _ = model.unpack(x)
    mu, var, w, kl, _ = model.propagate(layers, Xs, 3, np.random.RandomState(7))
    reps = mu.shape[0] // Xs.shape[0]
    Yt = np.repeat(Ys, reps, axis=0) if expectation == "unscented" else np.tile(Ys, (reps, 1))
    ref = float(np.sum((2.0 * w)[:, None] * gaussian_expectation(Yt, mu, var, noise))) - kl
    assert f == pytest.approx(ref, rel=1e-10)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n_layers,expectation", [(2, "monte_carlo"), (3, "unscented")])
def test_bound_bit_identical_for_every_thread_count(n_layers, expectation):
    model, x, Xs, Ys = _model(n_layers, expectation)
    results = []
    for n_jobs in (1, 2, 3):
        with threads(n_jobs):
            results.append(_elbo(model, x, Xs, Ys, 4))
    for f, g in results[1:]:
        assert f == results[0][0]
        np.testing.assert_array_equal(g, results[0][1])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n_layers,expectation", [(3, "monte_carlo"), (3, "unscented")])
def test_chunked_bound_gradient_matches_finite_differences(n_layers, expectation):
    model, x, Xs, Ys = _model(n_layers, expectation, n=12)
    r = np.random.default_rng(3)
    eps = [r.standard_normal((3 * 12, 2)) for _ in range(n_layers - 1)]
    model.chunk_rows = 5
    try:
        # step 1e-5: the bound (|F| ~ 360) carries rounding noise that at 1e-6 is 6e-8 in
        # every entry, 1.3e-6 of the Z0 block's largest (0.05)
        check_grad(lambda z: model.elbo(z, Xs, Ys, 2.0, 3, eps=eps), x, eps=1e-5, rtol=1e-6,
                   blocks=model.packer)
    finally:
        model.chunk_rows = None


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n_layers,expectation", CONFIGS)
def test_chunk_partials_do_not_alias_the_workspace(n_layers, expectation):
    """A chunk's partials are fresh arrays: a Dask worker holds one partition's result while
    the same thread runs the next partition's pass with the same buffers."""
    import copy

    from sklearn_lvgp._core.workspace import Workspace
    from sklearn_lvgp.bounds._dsvi import BoundParams, from_row_layout

    model, x, Xs, Ys = _model(n_layers, expectation)
    n, S = Xs.shape[0], 3
    G = model.global_terms(BoundParams(x, 1.0, S))
    eps = model.draw_rows(n, S, np.random.RandomState(0))
    ws = [Workspace() for _ in range(n_layers)]

    def run(a, b):
        draws = [from_row_layout(eps[f"eps{ell}"][a:b], G.S, model.dims[ell + 1])
                 for ell in range(model.n_draw_layers)]
        return model.chunk_pass(G.layers, G.priors, G.noise, Xs[a:b], Ys[a:b], 1.0, G.S, draws,
                                ws)

    def arrays(r):
        return [np.asarray(r[0]), np.asarray(r[1])] + [np.asarray(a) for p in r[2] for a in p]

    first = run(0, 11)
    kept = copy.deepcopy(first)
    run(11, n)
    for a, b in zip(arrays(first), arrays(kept), strict=True):
        np.testing.assert_array_equal(a, b)
