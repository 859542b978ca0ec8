"""The chunked objective engine: chunked == unchunked, identical for every thread count, exact
gradients through the map-reduce, and estimators that give the same fit for every ``n_jobs``."""

import math

import numpy as np
import pytest

from sklearn_lvgp import SparseGPRegressor, UnscentedGPLVM
from sklearn_lvgp._core import workspace as engine_workspace
from sklearn_lvgp._core.parallel import threads
from sklearn_lvgp._core.params import ParamPacker
from sklearn_lvgp.bounds import _collapsed as engine_collapsed
from sklearn_lvgp.bounds._collapsed import CollapsedKernelBound, CollapsedPsiBound
from sklearn_lvgp.bounds._collapsed_global import collapsed_bound, collapsed_bound_vjp
from sklearn_lvgp.engine import ChunkExecutor, plan_chunks, reduce_in_order
from sklearn_lvgp.engine import _executor as engine_executor
from sklearn_lvgp.engine import _rows as engine_rows
from sklearn_lvgp.engine._executor import PairwiseSum, reduce_pairwise
from sklearn_lvgp.expectations import make_rule, monte_carlo_rule, psi_statistics, psi_vjp
from sklearn_lvgp.kernels import RBF, Linear, Matern32
from sklearn_lvgp.utils.gradcheck import check_grad

N, Q, M, D = 23, 2, 5, 3


def _problem(seed=0):
    r = np.random.default_rng(seed)
    Y = r.standard_normal((N, D))
    mu = r.standard_normal((N, Q))
    S = r.uniform(0.05, 0.4, (N, Q))
    Z = r.standard_normal((M, Q))
    return Y, mu, S, Z


RULES = {
    "analytic-rbf": (lambda: RBF(length_scale=[0.9, 1.3], variance=1.1), "analytic"),
    "analytic-rbf+linear": (lambda: RBF(length_scale=[1.0, 0.8]) + Linear(variances=[0.3, 0.2]),
                            "analytic"),
    "unscented-matern32": (lambda: Matern32(length_scale=[0.9, 1.2]), "unscented"),
    "gauss_hermite-matern32": (lambda: Matern32(length_scale=[1.1, 0.7]), "gauss_hermite"),
    "monte_carlo-per-point": (lambda: Matern32(length_scale=[1.0, 1.0]), "monte_carlo"),
}


def _rule(name, kernel):
    if name == "monte_carlo":
        return monte_carlo_rule(8, Q, np.random.RandomState(1), n_points=N)
    return make_rule(name, kernel, Q)[1]


def _unchunked(kernel, Y, mu, S, Z, s2, rule):
    """Reference: the whole-data Ψ-statistics, bound and backward pass in one piece."""
    stats, pcache = psi_statistics(kernel, Z, mu, S, rule)
    Kuu, kcache = kernel.K_cached(Z)
    F, post = collapsed_bound(Y, stats.psi0, stats.Psi1, stats.Psi2, Kuu, s2)
    adj = collapsed_bound_vjp(post)
    pv = psi_vjp(adj.psi0, adj.Psi1, adj.Psi2, pcache)
    kv = kernel.vjp_cached(adj.Kuu, kcache)
    return F, {"mu": pv.mu, "S": pv.S, "Z": pv.Z + kv.X, "theta": pv.theta + kv.theta,
               "noise": adj.noise_variance}


def _assert_close(F, grads, F_ref, grads_ref, rtol=1e-10):
    assert F == pytest.approx(F_ref, rel=rtol)
    for key, ref in grads_ref.items():
        np.testing.assert_allclose(grads[key], ref, rtol=rtol, atol=rtol * np.max(np.abs(ref)),
                                   err_msg=key)


# ----------------------------------------------------------------------------- executor

def test_plan_covers_rows_in_order_and_ignores_threads():
    chunks = plan_chunks(1000, work_per_row=1e5)
    assert chunks[0][0] == 0 and chunks[-1][1] == 1000
    assert all(b == c for (_, b), (c, _) in zip(chunks[:-1], chunks[1:], strict=True))
    with threads(2):
        assert plan_chunks(1000, work_per_row=1e5) == chunks
    assert plan_chunks(1000, work_per_row=10.0) == [(0, 1000)]  # too little work to split
    assert plan_chunks(10, 1.0, chunk_rows=3) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert plan_chunks(0, 1.0) == []
    with pytest.raises(ValueError, match="chunk_rows"):
        plan_chunks(10, 1.0, chunk_rows=0)


@pytest.mark.parametrize("n_rows", [3, 442, 1000, 10_000, 50_000, 1_000_003])
@pytest.mark.parametrize("work_per_row", [10.0, 6e3, 1e5, 1e7])
def test_planned_chunks_are_balanced_for_2_4_8_16_threads(n_rows, work_per_row):
    """Sizes differ by at most a row, and the count is a power of two up to 16 or a multiple
    of 16 (even shares for 2, 4, 8 and 16 threads), within the memory cap."""
    chunks = plan_chunks(n_rows, work_per_row, max_rows=5000)
    sizes = [b - a for a, b in chunks]
    assert chunks[0][0] == 0 and chunks[-1][1] == n_rows and sum(sizes) == n_rows
    assert max(sizes) - min(sizes) <= 1 and max(sizes) <= 5000
    k = len(chunks)
    assert k & (k - 1) == 0 or k % 16 == 0 or k == n_rows  # (fewer rows than chunks)
    # no more chunks than the size estimate asks for, short of the rounding
    unbalanced = math.ceil(n_rows / max(1, min(5000, max(
        math.ceil(engine_executor.MIN_CHUNK_WORK / work_per_row),
        math.ceil(n_rows / engine_executor.TARGET_CHUNKS)))))
    assert k <= max(1, min(n_rows, 2 * unbalanced))


def test_plan_takes_a_bounds_least_chunk_work():
    """A bound whose glue per chunk is small next to its unit of work sets a smaller least
    work per chunk: a 10⁴-row LDGD batch (4801 units a row) is 8 chunks at the default and 64
    at 2^16, a small batch stays one chunk, and the memory cap still rules."""
    assert len(plan_chunks(10_000, 4801.0)) == 8
    assert len(plan_chunks(10_000, 4801.0, min_work=2 ** 16)) == 64
    assert len(plan_chunks(10, 4801.0, min_work=2 ** 16)) == 1
    assert len(plan_chunks(10_000, 4801.0, max_rows=100, min_work=2 ** 16)) == 112
    with threads(3):
        assert plan_chunks(10_000, 4801.0, min_work=2 ** 16) == plan_chunks(
            10_000, 4801.0, min_work=2 ** 16)


def test_executor_returns_in_chunk_order_and_reraises():
    chunks = plan_chunks(50, 1.0, chunk_rows=4)
    out = ChunkExecutor(3).map(lambda i, a, b: (i, a, b), chunks)
    assert out == [(i, a, b) for i, (a, b) in enumerate(chunks)]

    def fail(i, a, b):
        if i == 5:
            raise FloatingPointError("chunk 5")
        return i

    with pytest.raises(FloatingPointError, match="chunk 5"):
        ChunkExecutor(3).map(fail, chunks)


def test_executor_hands_out_chunks_within_its_window():
    """At most ``2 n_threads`` chunks run or wait ahead of the next one to be consumed."""
    import threading
    import time

    chunks = plan_chunks(60, 1.0, chunk_rows=1)
    consumed, ahead, lock = [], [], threading.Lock()

    def fn(i, a, b):
        with lock:
            ahead.append(i - len(consumed))
        time.sleep(0.002 if i % 7 == 0 else 0.0)  # uneven chunks: results arrive out of order
        return i

    with threads(3):
        ChunkExecutor(3).run(fn, chunks, consumed.append)
    assert consumed == list(range(60))
    assert max(ahead) < 2 * 3


def test_executor_interrupt_wins_over_a_chunk_error_and_the_pool_stays_usable():
    """A KeyboardInterrupt in a chunk stops the pass and is re-raised even when a chunk of a
    lower index failed with an ordinary exception; the next pass runs normally."""
    import time

    chunks = plan_chunks(40, 1.0, chunk_rows=1)

    def fail(i, a, b):
        if i == 0:
            time.sleep(0.05)
            raise ValueError("chunk 0")
        if i == 1:
            raise KeyboardInterrupt
        return float(i)

    with threads(2):
        for _ in range(3):
            with pytest.raises(KeyboardInterrupt):
                ChunkExecutor(2).map_reduce(fail, chunks)
        assert ChunkExecutor(2).map_reduce(lambda i, a, b: float(i), chunks) == 780.0


def test_executor_keeps_one_pool_per_thread_count(monkeypatch):
    """Passes with fewer chunks than threads use the same pool (no pool per chunk count)."""
    monkeypatch.setattr(engine_executor, "_pools", {})
    with threads(7):
        for n_chunks in (2, 3, 9):
            out = ChunkExecutor(7).map(lambda i, a, b: i, plan_chunks(n_chunks, 1.0,
                                                                      chunk_rows=1))
            assert out == list(range(n_chunks))
    assert list(engine_executor._pools) == [6]


def _tree_sum(parts):
    """Reference: the pairwise tree of the block index, recursively."""
    top = (len(parts) - 1).bit_length()

    def node(level, i):
        if level == 0:
            return parts[i]
        left = node(level - 1, 2 * i)
        if (2 * i + 1) << (level - 1) >= len(parts):
            return left
        return left + node(level - 1, 2 * i + 1)

    return node(top, 0)


@pytest.mark.parametrize("n_blocks", [1, 2, 3, 5, 8, 13, 64, 100])
def test_pairwise_sum_is_the_same_for_every_run_of_blocks(n_blocks):
    """Any cut of the blocks into runs, each reduced to its tree nodes, gives the tree's bits;
    a run holds few nodes and the partials are not modified."""
    r = np.random.default_rng(n_blocks)
    parts = [(r.standard_normal(3) * 10.0 ** r.integers(-8, 8), float(r.standard_normal()),
              None) for _ in range(n_blocks)]
    copies = [p[0].copy() for p in parts]
    ref = _tree_sum([p[0] for p in parts])
    np.testing.assert_array_equal(reduce_pairwise(parts)[0], ref)
    for _ in range(10):
        cuts = np.unique(r.integers(1, max(2, n_blocks), size=r.integers(0, 6)))
        bounds = [0, *[int(c) for c in cuts if c < n_blocks], n_blocks]
        total = PairwiseSum(n_blocks)
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            run = PairwiseSum(n_blocks, a)
            for j in range(a, b):
                run.add_block(j, parts[j])
            assert len(run.nodes()) <= 2 * max(1, n_blocks.bit_length())
            total.extend(run.nodes())
        value, scalar, none = total.total()
        np.testing.assert_array_equal(value, ref)
        assert none is None
    for part, copy in zip(parts, copies, strict=True):
        np.testing.assert_array_equal(part[0], copy)
    with pytest.raises(ValueError, match="starts at block"):
        PairwiseSum(4).add_block(1, 1.0)


@pytest.mark.parametrize("n_rows", [1, 7, 300, 5000])
def test_row_tree_sums_of_any_runs_of_rows_agree(n_rows):
    from sklearn_lvgp._core.pairwise import PairwiseRows, row_tree_nodes, row_tree_sum

    A = np.random.default_rng(0).standard_normal((n_rows, 3)) * 1e3
    ref = _tree_sum(list(A))
    for piece in (1, 4, 4096):
        np.testing.assert_array_equal(row_tree_sum(lambda a, b: A[a:b], n_rows, piece), ref)
    total = PairwiseSum(n_rows)
    for a, b in ((0, n_rows // 3), (n_rows // 3, n_rows // 2), (n_rows // 2, n_rows)):
        if b > a:
            total.extend(row_tree_nodes(lambda lo, hi: A[lo:hi], a, b, n_rows, piece=2))
    np.testing.assert_array_equal(total.total(), ref)
    np.testing.assert_array_equal(PairwiseRows(A).sum(lambda B: B), ref)


def test_reduce_in_order_sums_nested_partials():
    parts = [(1.0, np.ones(2), None), (2.0, 2 * np.ones(2), None)]
    total = reduce_in_order(parts)
    assert total[0] == 3.0 and total[2] is None
    np.testing.assert_array_equal(total[1], [3.0, 3.0])
    np.testing.assert_array_equal(parts[0][1], [1.0, 1.0])  # partials not modified


# --------------------------------------------------------------------- collapsed, Ψ-statistics

@pytest.mark.parametrize("chunk_rows", [1, 7, N])
@pytest.mark.parametrize("config", list(RULES))
def test_chunked_psi_bound_equals_unchunked(config, chunk_rows):
    make_kernel, name = RULES[config]
    kernel = make_kernel().initialize(Q, np.random.RandomState(0))
    rule = _rule(name, kernel)
    Y, mu, S, Z = _problem()
    F_ref, g_ref = _unchunked(kernel, Y, mu, S, Z, 0.3, rule)
    bound = CollapsedPsiBound(Y, chunk_rows=chunk_rows)
    for _ in range(2):  # the second evaluation reuses the chunk buffers
        F, grads, _ = bound.evaluate(kernel, Z, mu, S, 0.3, rule)
        _assert_close(F, grads, F_ref, g_ref)


@pytest.mark.parametrize("chunk_rows", [7, N])
def test_unscented_chunks_take_one_jitted_call_when_there_are_several(chunk_rows, monkeypatch):
    """The unscented rule with a stationary kernel: a pass of several chunks computes each
    chunk in one jitted call per pass (no numpy glue to share the GIL over), a single chunk
    takes the point-set path; both give the unchunked bound (checked above)."""
    make_kernel, name = RULES["unscented-matern32"]
    kernel = make_kernel().initialize(Q, np.random.RandomState(0))
    rule = _rule(name, kernel)
    Y, mu, S, Z = _problem()
    calls = []
    for fn in ("axis_point_chunk_stats", "axis_point_chunk_grads"):
        real = getattr(engine_collapsed, fn)
        monkeypatch.setattr(engine_collapsed, fn,
                            lambda *a, _real=real, _fn=fn: calls.append(_fn) or _real(*a))
    CollapsedPsiBound(Y, chunk_rows=chunk_rows).evaluate(kernel, Z, mu, S, 0.3, rule)
    n_chunks = math.ceil(N / chunk_rows)
    expected = 2 * n_chunks if n_chunks > 1 else 0
    assert len(calls) == expected and calls.count("axis_point_chunk_grads") == expected // 2


@pytest.mark.parametrize("config", ["analytic-rbf", "unscented-matern32"])
def test_psi_bound_recomputing_chunks_equals_keeping_them(config, monkeypatch):
    make_kernel, name = RULES[config]
    kernel = make_kernel().initialize(Q, np.random.RandomState(0))
    rule = _rule(name, kernel)
    Y, mu, S, Z = _problem(1)
    F_keep, g_keep, _ = CollapsedPsiBound(Y, chunk_rows=7).evaluate(kernel, Z, mu, S, 0.2, rule)
    monkeypatch.setattr(engine_rows, "KEEP_TOTAL", 0)
    bound = CollapsedPsiBound(Y, chunk_rows=7)
    assert not bound.plan(rule, M, Q)[1]
    F, grads, _ = bound.evaluate(kernel, Z, mu, S, 0.2, rule)
    assert F == F_keep
    for key in g_keep:
        np.testing.assert_array_equal(grads[key], g_keep[key])


@pytest.mark.parametrize("config", ["analytic-rbf", "unscented-matern32", "analytic-rbf+linear"])
def test_psi_bound_bit_identical_for_every_thread_count(config):
    make_kernel, name = RULES[config]
    kernel = make_kernel().initialize(Q, np.random.RandomState(0))
    rule = _rule(name, kernel)
    Y, mu, S, Z = _problem(2)
    results = []
    for n_jobs in (1, 2, 3):
        with threads(n_jobs):
            results.append(CollapsedPsiBound(Y, chunk_rows=3).evaluate(kernel, Z, mu, S, 0.25,
                                                                       rule))
    for F, grads, _ in results[1:]:
        assert F == results[0][0]
        for key in grads:
            np.testing.assert_array_equal(grads[key], results[0][1][key])


@pytest.mark.parametrize("config", ["analytic-rbf", "unscented-matern32"])
def test_chunked_psi_bound_gradient_matches_finite_differences(config):
    make_kernel, name = RULES[config]
    kernel = make_kernel().initialize(Q, np.random.RandomState(0))
    rule = _rule(name, kernel)
    Y, mu0, S0, Z0 = _problem(3)
    packer = ParamPacker([("mu", (N, Q)), ("S", (N, Q), "log"), ("Z", (M, Q)),
                          ("theta", (kernel.n_theta,)), ("noise", (), "log")])
    bound = CollapsedPsiBound(Y, chunk_rows=7)

    def fun(flat):
        p = packer.unpack(flat)
        kernel.theta = p["theta"]
        F, grads, _ = bound.evaluate(kernel, p["Z"], p["mu"], p["S"], float(p["noise"]), rule,
                                     jitter=0.0)
        return F, packer.pack_grad(grads, p)

    x0 = packer.pack({"mu": mu0, "S": S0, "Z": Z0, "theta": kernel.theta, "noise": 0.3})
    check_grad(fun, x0, rtol=1e-5, blocks=packer)


# --------------------------------------------------------------- collapsed, deterministic inputs

def _kernel_problem(seed=0):
    r = np.random.default_rng(seed)
    X = r.uniform(-2, 2, (N, Q))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1], X[:, 0] * X[:, 1]])
    Y = Y + 0.1 * r.standard_normal(Y.shape)
    kernel = (RBF(length_scale=[0.9, 1.3], variance=1.2) + Linear(variances=[0.3, 0.2]))
    return X, Y, X[:M] + 0.05, kernel.initialize(Q, np.random.RandomState(0))


@pytest.mark.parametrize("chunk_rows", [1, 7, N])
def test_chunked_kernel_bound_equals_dense_bound(chunk_rows):
    X, Y, Z, kernel = _kernel_problem()
    Kfu = kernel.K(X, Z)
    F_ref, _ = collapsed_bound(Y, float(np.sum(kernel.Kdiag(X))), Kfu, Kfu.T @ Kfu, kernel.K(Z),
                               0.2)
    _, g_full, _ = CollapsedKernelBound(X, Y, chunk_rows=N).evaluate(kernel, Z, 0.2)
    F, grads, _ = CollapsedKernelBound(X, Y, chunk_rows=chunk_rows).evaluate(kernel, Z, 0.2)
    assert F == pytest.approx(F_ref, rel=1e-10)
    for key in ("Z", "theta", "noise"):
        np.testing.assert_allclose(grads[key], g_full[key], rtol=1e-10, err_msg=key)


def test_chunked_kernel_bound_gradient_matches_finite_differences():
    X, Y, Z0, kernel = _kernel_problem(1)
    packer = ParamPacker([("Z", (M, Q)), ("theta", (kernel.n_theta,)), ("noise", (), "log")])
    bound = CollapsedKernelBound(X, Y, chunk_rows=7)

    def fun(flat):
        p = packer.unpack(flat)
        kernel.theta = p["theta"]
        F, grads, _ = bound.evaluate(kernel, p["Z"], float(p["noise"]), jitter=0.0)
        return F, packer.pack_grad(grads, p)

    check_grad(fun, packer.pack({"Z": Z0, "theta": kernel.theta, "noise": 0.3}), rtol=1e-5)


def test_kernel_bound_bit_identical_for_every_thread_count(monkeypatch):
    X, Y, Z, kernel = _kernel_problem(2)
    monkeypatch.setattr(engine_rows, "KEEP_TOTAL", 0)  # the recomputing backward map too
    results = []
    for n_jobs in (1, 2, 3):
        with threads(n_jobs):
            results.append(CollapsedKernelBound(X, Y, chunk_rows=4).evaluate(kernel, Z, 0.2))
    for F, grads, _ in results[1:]:
        assert F == results[0][0]
        for key in grads:
            np.testing.assert_array_equal(grads[key], results[0][1][key])


@pytest.mark.parametrize("keep", [True, False])
def test_kernel_bound_workspaces_change_no_bit_and_keep_their_memory(monkeypatch, keep):
    """The chunk maps with workspaces (K_fu, A and the (rows, M) products in reused buffers)
    give the bits of the maps without them; kept K_fu reuse the first evaluation's memory."""
    from sklearn_lvgp.kernels import RBF

    r = np.random.default_rng(3)
    X = r.uniform(-2, 2, (N, Q))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1]]) + 0.1 * r.standard_normal((N, 2))
    Z = X[:M] + 0.05
    if not keep:
        monkeypatch.setattr(engine_rows, "KEEP_TOTAL", 0)
    for kernel in (RBF(length_scale=[0.9, 1.3], variance=1.2),
                   RBF(length_scale=0.8) + Linear(variances=[0.3, 0.2])):
        kernel = kernel.initialize(Q, np.random.RandomState(0))
        bound = CollapsedKernelBound(X, Y, chunk_rows=7)
        chunks, kept = bound.plan(M)
        assert kept == keep and len(chunks) > 1
        prior = engine_collapsed.kernel_prior(kernel, Z, 0.2)
        plain = [engine_collapsed.kernel_chunk_stats(kernel, Z, prior, X[a:b], Y[a:b])
                 for a, b in chunks]
        step = engine_collapsed.kernel_global_step(N, 2, prior, reduce_in_order(
            [stats for stats, _ in plain]))
        for (a, b), (stats, cache) in zip(chunks, plain, strict=True):
            ws, scratch = engine_workspace.Workspace(), engine_workspace.Workspace()
            stats_ws, cache_ws = engine_collapsed.kernel_chunk_stats(
                kernel, Z, prior, X[a:b], Y[a:b], workspace=ws, scratch=scratch)
            for s_ws, s_plain in zip(stats_ws, stats, strict=True):
                np.testing.assert_array_equal(s_ws, s_plain)
            ref = engine_collapsed.kernel_chunk_grads(kernel, Z, prior, step, X[a:b], Y[a:b],
                                                      cache)
            for kept_cache in (cache_ws, None):
                got = engine_collapsed.kernel_chunk_grads(
                    kernel, Z, prior, step, X[a:b], Y[a:b], kept_cache, workspace=ws,
                    scratch=scratch)
                for g_ws, g_plain in zip(got, ref, strict=True):
                    np.testing.assert_array_equal(g_ws, g_plain)
        first = bound.evaluate(kernel, Z, 0.2)
        buffers = [w._flat.get("Kfu") for w in bound._chunk_ws]
        second = bound.evaluate(kernel, Z, 0.2)
        assert first[0] == second[0]
        np.testing.assert_array_equal(first[1]["Z"], second[1]["Z"])
        if keep and isinstance(kernel, RBF):
            assert len(buffers) == len(chunks) and all(buf is not None for buf in buffers)
            assert all(w._flat["Kfu"] is buf for w, buf in zip(bound._chunk_ws, buffers,
                                                                 strict=True))
        if not keep:
            assert bound._chunk_ws == []


# ------------------------------------------------------------------------------- estimators

@pytest.fixture
def small_chunks(monkeypatch):
    """Split even tiny problems into several chunks, as large ones are."""
    monkeypatch.setattr(engine_executor, "MIN_CHUNK_WORK", 1)
    monkeypatch.setattr(engine_executor, "TARGET_CHUNKS", 6)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_gplvm_fit_identical_for_every_n_jobs(small_chunks):
    Y = np.random.default_rng(0).standard_normal((40, 4))
    fits = [UnscentedGPLVM(n_inducing=6, max_iter=15, n_jobs=n, random_state=0).fit(Y)
            for n in (1, 2, 3)]
    for model in fits[1:]:
        np.testing.assert_array_equal(model.latent_mean_, fits[0].latent_mean_)
        assert model.elbo_ == fits[0].elbo_


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sgpr_fit_identical_for_every_n_jobs(small_chunks):
    r = np.random.default_rng(1)
    X = r.uniform(-2, 2, (60, 2))
    y = np.sin(X[:, 0]) + 0.1 * r.standard_normal(60)
    fits = [SparseGPRegressor(n_inducing=8, max_iter=15, n_jobs=n, random_state=0).fit(X, y)
            for n in (1, 2, 3)]
    for model in fits[1:]:
        np.testing.assert_array_equal(model.predict(X), fits[0].predict(X))
        assert model.elbo_ == fits[0].elbo_


def test_pool_threads_run_the_serial_twins():
    """A chunk never opens a numba parallel region of its own (the pool is the parallelism)."""
    from sklearn_lvgp._core.parallel import current_threads

    chunks = plan_chunks(8, 1.0, chunk_rows=2)
    with threads(2):
        seen = ChunkExecutor(2).map(lambda i, a, b: current_threads(), chunks)
        inline = ChunkExecutor(2).map(lambda i, a, b: current_threads(), chunks[:1])
        assert current_threads() == 2
    assert seen == [1] * len(chunks) and inline == [1]


def test_global_steps_between_the_passes_run_serially(monkeypatch):
    """An engine evaluation opens no numba parallel region outside its chunk passes: an
    M-sized kernel there would leave OpenMP threads spinning into the next pass. Its passes
    still get the context's thread count."""
    import numba

    from sklearn_lvgp._compile import jit as _jit
    from sklearn_lvgp.engine._executor import serial_global_steps

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two numba threads")
    opened = []
    call = _jit._Twins.__call__

    def recorded(self, *args):
        if not self.runs_serial(*args):
            opened.append(self.__name__)
        return call(self, *args)

    monkeypatch.setattr(_jit._Twins, "__call__", recorded)
    r = np.random.default_rng(0)
    q, m = 5, 120  # K_uu: 2 m² q = 144 000 kernel entries and adjoints, above the threshold
    kernel = RBF(length_scale=np.ones(q))
    Z = r.standard_normal((m, q))
    Y = r.standard_normal((40, 3))
    mu, S = r.standard_normal((40, q)), np.full((40, q), 0.2)
    bound = CollapsedPsiBound(Y, chunk_rows=10)
    with threads(2):
        kernel.K(Z)  # outside an evaluation the same kernel opens a region
        assert opened == ["stationary_K"]
        opened.clear()
        F, grads, _ = bound.evaluate(kernel, Z, mu, S, 0.1, "analytic")
        assert opened == []

        @serial_global_steps
        def step():
            kernel.K(Z)
            return ChunkExecutor().n_threads

        assert step() == 2 and opened == []
        kernel.K(Z)
        assert opened == ["stationary_K"]
    with threads(1):  # the same bits as a one-thread evaluation
        F1, grads1, _ = bound.evaluate(kernel, Z, mu, S, 0.1, "analytic")
    assert F == F1
    for key in ("mu", "S", "Z", "theta"):
        np.testing.assert_array_equal(grads[key], grads1[key])


def test_every_engine_evaluation_holds_its_global_steps_serial():
    """Each objective's entry point into the engine carries :func:`serial_global_steps`."""
    from sklearn_lvgp.bounds._dvmgp import dvmgp_elbo_and_grads
    from sklearn_lvgp.bounds._gpcde import CDEModel
    from sklearn_lvgp.bounds._ldgd import ldgd_value_and_vjp
    from sklearn_lvgp.engine._protocol import evaluate_bound

    entries = [evaluate_bound, dvmgp_elbo_and_grads, ldgd_value_and_vjp, CDEModel.elbo]
    for entry in entries:
        assert entry.__code__ is engine_executor.serial_global_steps(len).__code__, entry


def test_map_reduce_adds_pairwise_with_a_bounded_window():
    chunks = plan_chunks(40, 1.0, chunk_rows=1)
    parts = [np.full(3, 0.1 * i) for i in range(40)]
    expected = reduce_pairwise(parts)
    for n in (1, 3):
        total = ChunkExecutor(n).map_reduce(lambda i, a, b: (float(i), parts[i]), chunks)
        assert total[0] == float(sum(range(40)))
        np.testing.assert_array_equal(total[1], expected)  # same tree, same bits
    np.testing.assert_array_equal(parts[5], np.full(3, 0.5))  # partials not modified


def test_map_reduce_reraises_a_failed_chunk():
    def fail(i, a, b):
        if i == 7:
            raise ArithmeticError("chunk 7")
        return 1.0

    for n in (1, 2):
        with pytest.raises(ArithmeticError, match="chunk 7"):
            ChunkExecutor(n).map_reduce(fail, plan_chunks(30, 1.0, chunk_rows=1))


# ------------------------------------------------------------------ alternating optimiser

@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("expectation", ["analytic", "unscented"])
def test_alternating_rounds_never_lower_the_bound(small_chunks, expectation):
    Y = np.random.default_rng(4).standard_normal((50, 4))
    kernel = Matern32(length_scale=[1.0, 1.0]) if expectation == "unscented" else None
    model = UnscentedGPLVM(n_inducing=6, optimizer="alternating", max_iter=6, kernel=kernel,
                           expectation=expectation, random_state=0).fit(Y)
    hist = model.elbo_history_
    assert model.optimizer_ == "alternating" and model.n_iter_ == hist.size
    assert np.all(np.diff(hist) >= -1e-8 * np.abs(hist[:-1]))
    assert model.elbo_ == pytest.approx(hist[-1], rel=1e-10)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_alternating_reaches_the_joint_optimisers_bound():
    Y = np.random.default_rng(5).standard_normal((60, 3)) @ np.diag([2.0, 1.0, 0.5])
    joint = UnscentedGPLVM(n_inducing=6, optimizer="lbfgs", max_iter=500, random_state=0).fit(Y)
    alt = UnscentedGPLVM(n_inducing=6, optimizer="alternating", max_iter=200,
                         random_state=0).fit(Y)
    assert alt.elbo_ > joint.elbo_ - 0.01 * abs(joint.elbo_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_alternating_fit_identical_for_every_n_jobs(small_chunks):
    Y = np.random.default_rng(6).standard_normal((40, 4))
    fits = [UnscentedGPLVM(n_inducing=5, optimizer="alternating", max_iter=3, n_jobs=n,
                           random_state=0).fit(Y) for n in (1, 2, 3)]
    for model in fits[1:]:
        np.testing.assert_array_equal(model.latent_mean_, fits[0].latent_mean_)
        np.testing.assert_array_equal(model.inducing_inputs_, fits[0].inducing_inputs_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_auto_optimizer_alternates_from_the_row_threshold(monkeypatch):
    from sklearn_lvgp.models import _unscented_gplvm

    Y = np.random.default_rng(7).standard_normal((30, 3))
    small = UnscentedGPLVM(n_inducing=5, max_iter=2, random_state=0).fit(Y)
    assert small.optimizer_ == "lbfgs"
    monkeypatch.setattr(_unscented_gplvm, "ALTERNATING_MIN_ROWS", 30)
    large = UnscentedGPLVM(n_inducing=5, max_iter=2, random_state=0).fit(Y)
    assert large.optimizer_ == "alternating"
    mc = UnscentedGPLVM(n_inducing=5, max_iter=2, expectation="monte_carlo", random_state=0)
    assert mc.fit(Y).optimizer_ == "adam"
    with pytest.raises(ValueError, match="stochastic objective.*'alternating'"):
        mc.set_params(optimizer="alternating").fit(Y)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_runs_chunks_after_the_parent_did():
    """The child starts its own thread pool (the inherited one has no threads)."""
    import multiprocessing

    chunks = plan_chunks(12, 1.0, chunk_rows=2)
    assert ChunkExecutor(2).map_reduce(lambda i, a, b: float(i), chunks) == 15.0
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child_sum, args=(queue,))
    child.start()
    child.join(timeout=30)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child hung in the chunk executor")
    assert queue.get(timeout=5) == 15.0


def _child_sum(queue):
    chunks = plan_chunks(12, 1.0, chunk_rows=2)
    queue.put(ChunkExecutor(2).map_reduce(lambda i, a, b: float(i), chunks))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_transform_runs_chunks_on_threads_and_blocks_its_distances(small_chunks, monkeypatch):
    """New rows: one L-BFGS-B problem per chunk, the same for every n_jobs; the nearest-row
    start is found in blocks of rows (memory bounded in the number of new rows)."""
    from sklearn_lvgp._core import init

    r = np.random.default_rng(8)
    Y = r.standard_normal((60, 4))
    model = UnscentedGPLVM(n_inducing=6, max_iter=20, transform_max_iter=15,
                           random_state=0).fit(Y)
    new = Y[:30] + 0.1 * r.standard_normal((30, 4))
    out = []
    for n_jobs in (1, 2, 3):
        out.append(model.set_params(n_jobs=n_jobs).transform(new, return_std=True))
    for mu, S in out[1:]:
        np.testing.assert_array_equal(mu, out[0][0])
        np.testing.assert_array_equal(S, out[0][1])
    refs = model._Y
    full = np.argmin(np.sum(new ** 2, 1)[:, None] - 2 * new @ refs.T + np.sum(refs ** 2, 1), 1)
    monkeypatch.setattr(init, "DISTANCE_BLOCK", 7 * refs.shape[0])
    np.testing.assert_array_equal(init.nearest_rows(new, refs), full)
