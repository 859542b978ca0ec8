"""One conformance test for every bound of the protocol (:mod:`sklearn_lvgp.engine._protocol`).

For each bound of the registry (``conformance.py``): chunk sizes 1, 7 and N give the same value
and gradient blocks; finite differences agree block by block; ``n_jobs`` 1, 2 and 3 give the
same bits; the Dask row source on a 2-worker ``LocalCluster`` gives the in-memory bits for any
partitioning.
"""


import numpy as np
import pytest
from conformance import REGISTRY, N

from sklearn_lvgp._core.parallel import threads
from sklearn_lvgp.engine import ChunkedBound, InMemoryRows, evaluate_bound
from sklearn_lvgp.utils.gradcheck import fd_gradient

NAMES = sorted(REGISTRY)


def _evaluate(problem, blocks=None, rows=None, chunk_rows=None, n_threads=None, source=None):
    blocks = problem.blocks if blocks is None else blocks
    rows = problem.rows if rows is None else rows
    if source is None:
        source = InMemoryRows({k: rows[k] for k in problem.bound.row_names},
                              chunk_rows=chunk_rows, n_threads=n_threads)
    out = evaluate_bound(problem.bound, problem.params(blocks, N), source,
                         need_local=bool(problem.local_blocks))
    grads = problem.grads(out.grads)
    for name in problem.local_blocks:
        grads[name] = out.local[name]
    return out.value, grads


def _close(a, b, rtol, what):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale, err_msg=what)


@pytest.mark.parametrize("name", NAMES)
def test_chunk_sizes_give_the_same_bound(name):
    problem = REGISTRY[name]()
    ref_value, ref = _evaluate(problem, chunk_rows=N)
    for chunk_rows in (1, 7):
        value, grads = _evaluate(problem, chunk_rows=chunk_rows)
        _close(value, ref_value, 1e-10, f"value, chunks of {chunk_rows}")
        for block in ref:
            _close(grads[block], ref[block], 1e-10, f"{block}, chunks of {chunk_rows}")


@pytest.mark.parametrize("name", NAMES)
def test_gradient_blocks_match_finite_differences(name):
    problem = REGISTRY[name]()
    _, grads = _evaluate(problem, chunk_rows=7)
    r = np.random.default_rng(0)
    for block in list(problem.blocks) + list(problem.local_blocks):
        is_local = block in problem.local_blocks
        x0 = (problem.rows if is_local else problem.blocks)[block]
        direction = r.standard_normal(np.shape(x0))

        def along(t, block=block, is_local=is_local, x0=x0, direction=direction):
            moved = x0 + t[0] * direction
            if is_local:
                return _evaluate(problem, rows={**problem.rows, block: moved}, chunk_rows=7)[0]
            return _evaluate(problem, blocks={**problem.blocks, block: moved}, chunk_rows=7)[0]

        fd = fd_gradient(along, np.zeros(1))[0]
        analytic = float(np.sum(np.asarray(grads[block]) * direction))
        assert analytic == pytest.approx(fd, rel=problem.smooth * 100, abs=1e-6 * abs(fd) + 1e-7), \
            block


@pytest.mark.parametrize("name", NAMES)
def test_thread_counts_give_the_same_bits(name):
    problem = REGISTRY[name]()
    results = []
    for n_jobs in (1, 2, 3):
        with threads(n_jobs):
            results.append(_evaluate(problem, chunk_rows=3))
    for value, grads in results[1:]:
        assert value == results[0][0]
        for block, g in grads.items():
            np.testing.assert_array_equal(g, results[0][1][block], err_msg=block)


def test_every_protocol_bound_is_registered():
    import sklearn_lvgp.bounds  # noqa: F401 - defines the bounds

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    registered = {type(REGISTRY[name]().bound) for name in NAMES}
    defined = {cls for cls in subclasses(ChunkedBound) if cls.__module__.startswith("sklearn_lvgp")}
    assert defined <= registered, sorted(c.__name__ for c in defined - registered)


@pytest.mark.parametrize("name", NAMES)
def test_dask_rows_give_the_in_memory_bits(name, client):
    """The same blocks on Dask: partitions of 5 and 16 rows (moved to the blocks' boundaries)
    give the in-memory value and gradients to the last bit."""
    da = pytest.importorskip("dask.array")
    from sklearn_lvgp.engine._dask import DaskRows

    problem = REGISTRY[name]()
    ref_value, ref = _evaluate(problem, chunk_rows=7)
    for rows_per_partition in (5, 16):
        rows = DaskRows({k: da.from_array(problem.rows[k],
                                          chunks=(rows_per_partition,) + problem.rows[k].shape[1:])
                         for k in problem.bound.row_names}, chunk_rows=7)
        value, grads = _evaluate(problem, source=rows)
        assert value == ref_value, rows_per_partition
        for block in ref:
            np.testing.assert_array_equal(grads[block], ref[block], err_msg=block)
