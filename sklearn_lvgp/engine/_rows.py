"""Row-aligned arrays in memory, run through a bound's chunk passes on the thread executor.

:class:`InMemoryRows` is the in-memory row source of the bound protocol
(:mod:`sklearn_lvgp.engine._protocol`); :class:`~sklearn_lvgp.engine._dask.DaskRows` is the
partitioned one. Both cut the rows into the same fixed blocks, planned from the bound's cost
estimate and the problem size only (:func:`plan_blocks`), run the bound's chunk functions once
per block and add the blocks' partials over the pairwise tree of the block index
(:class:`~sklearn_lvgp.engine._executor.PairwiseSum`): the result has the same bits for every
thread count, every grouping of the blocks into the executor's tasks and every Dask
partitioning. This one gives each block its context (its rows, its workspace, the slot of its
kept cache) and runs runs of blocks on :class:`~sklearn_lvgp.engine._executor.ChunkExecutor`.
"""

from typing import NamedTuple

import numpy as np

from .._core.workspace import chunk_workspace, thread_workspace
from ._executor import ChunkExecutor, PairwiseSum, plan_chunks
from ._protocol import ChunkContext

__all__ = ["InMemoryRows", "KEEP_TOTAL", "plan_blocks", "run_blocks"]

#: Largest number of float64 entries of per-chunk caches kept between the two passes (32 MiB).
KEEP_TOTAL = 2 ** 22


def plan_blocks(bound, G, n_rows, chunk_rows=None):
    """The blocks ``[(start, stop), ...]`` of ``bound``'s passes at ``G`` over ``n_rows`` rows:
    :func:`~sklearn_lvgp.engine._executor.plan_chunks` of the bound's cost estimate
    (:meth:`~sklearn_lvgp.engine._protocol.ChunkedBound.chunk_cost`), or blocks of
    ``chunk_rows`` rows when given. Every row source cuts the rows into these blocks."""
    cost = bound.chunk_cost(G)
    work, max_rows = cost[:2]
    return plan_chunks(n_rows, work, max_rows=None if max_rows is None else max(1, max_rows),
                       chunk_rows=chunk_rows, min_work=cost[3] if len(cost) > 3 else None)


def run_blocks(fn, head, rows_of, blocks, first, n_blocks, context_of, backward=False):
    """Run ``fn(*head, rows, ctx)`` on a run of consecutive blocks in order (one task's):
    ``blocks`` are their row ranges, the first of them block ``first`` of the ``n_blocks`` of
    the pass. Returns the run's nodes of the pairwise tree
    (:meth:`~sklearn_lvgp.engine._executor.PairwiseSum.nodes`) and, when ``backward`` (``fn``
    returns ``(local, partial)``), the blocks' local results in block order.

    ``rows_of(a, b)`` gives the rows ``a:b`` of the whole data, ``context_of(j, a, b)`` block
    ``j``'s :class:`~sklearn_lvgp.engine._protocol.ChunkContext`.
    """
    if len(blocks) == 1:  # one block: its node is its partial
        (a, b), = blocks
        out = fn(*head, rows_of(a, b), context_of(first, a, b))
        if backward:
            return [(0, first, out[1], False)], [out[0]]
        return [(0, first, out, False)], []
    total = PairwiseSum(n_blocks, first)
    local = []
    for j, (a, b) in enumerate(blocks, start=first):
        out = fn(*head, rows_of(a, b), context_of(j, a, b))
        if backward:
            local.append(out[0])
            out = out[1]
        total.add_block(j, out)
    return total.nodes(), local


class _Plan(NamedTuple):
    chunks: list
    keep: bool
    cache: list
    tasks: list


class InMemoryRows:
    """Row-aligned arrays held in memory, cut into fixed blocks.

    Parameters
    ----------
    arrays : dict of str to ndarray
        Arrays with the same number of rows (data and the rows' local parameters); not copied.
    chunk_rows : int, default=None
        Rows per block; ``None`` chooses from the bound's cost and the problem size
        (:func:`plan_blocks`; never from the thread count).
    n_threads : int, default=None
        Threads; ``None`` takes the enclosing :func:`sklearn_lvgp._core.parallel.threads`
        context.
    prefix : str, default="chunk"
        Name of the blocks' workspaces (in the thread's workspace when caches are not kept).
    blocks_per_task : int, default=1
        Consecutive blocks a thread takes at a time (no bit of a result depends on it).
    """

    def __init__(self, arrays, *, chunk_rows=None, n_threads=None, prefix="chunk",
                 blocks_per_task=1):
        self.arrays = dict(arrays)
        self.n_rows = next(iter(self.arrays.values())).shape[0] if self.arrays else 0
        self.chunk_rows = chunk_rows
        self.n_threads = n_threads
        self.prefix = prefix
        self.blocks_per_task = max(1, int(blocks_per_task))
        self._plans = {}
        self.chunk_workspaces = []

    @property
    def shapes(self):
        """Shape of each row array."""
        return {name: A.shape for name, A in self.arrays.items()}

    def update(self, **arrays):
        """Replace some row arrays (e.g. the local parameters of a new evaluation)."""
        self.arrays.update(arrays)

    def subset(self, idx, extra=None):
        """The rows ``idx`` (a minibatch; ``None``: all rows, not copied) as a new in-memory
        source, with ``extra`` row-aligned arrays of the minibatch itself (e.g. its Monte Carlo
        draws)."""
        if idx is None:
            arrays = dict(self.arrays)
        else:
            arrays = {name: A[np.asarray(idx)] for name, A in self.arrays.items()}
        arrays.update(extra or {})
        return InMemoryRows(arrays, chunk_rows=self.chunk_rows, n_threads=self.n_threads,
                            prefix=self.prefix, blocks_per_task=self.blocks_per_task)

    def chunks(self, bound, G):
        """``(blocks, keep)``: the row ranges of ``bound``'s passes at ``G`` (:func:`plan_blocks`)
        and whether the forward caches are kept for the backward pass (cached per
        :meth:`bound.plan_key`)."""
        key = bound.plan_key(G)
        if key not in self._plans:
            kept = bound.chunk_cost(G)[2]
            self._plans[key] = (plan_blocks(bound, G, self.n_rows, self.chunk_rows),
                                kept > 0 and self.n_rows * kept <= KEEP_TOTAL)
        return self._plans[key]

    def plan(self, bound, G):
        """The plan of one evaluation: its blocks, keep decision, a fresh cache slot list and
        the executor's tasks (runs of :attr:`blocks_per_task` blocks)."""
        chunks, keep = self.chunks(bound, G)
        k = self.blocks_per_task
        tasks = [(a, min(len(chunks), a + k)) for a in range(0, len(chunks), k)]
        return _Plan(chunks, keep, [None] * len(chunks), tasks)

    def _context(self, plan, i, a, b):
        if plan.keep:
            workspace = chunk_workspace(self.chunk_workspaces, i, True, self.prefix)
        else:
            workspace = thread_workspace().child(self.prefix)
        return ChunkContext(i, a, b, len(plan.chunks), workspace, plan.keep, plan.cache)

    def _rows(self, names, a, b):
        return {name: self.arrays[name][a:b] for name in names}

    def _pass(self, fn, head, plan, names, backward):
        """Run ``fn(*head, rows, ctx)`` on every block; the pairwise sum of the partials and,
        when ``backward``, the blocks' local results in block order."""
        names = tuple(self.arrays) if names is None else names
        n_blocks = len(plan.chunks)
        total = PairwiseSum(n_blocks)
        locals_ = [None] * n_blocks

        def rows_of(a, b):
            return self._rows(names, a, b)

        def context_of(j, a, b):
            return self._context(plan, j, a, b)

        def task(t, first, last):
            nodes, local = run_blocks(fn, head, rows_of, plan.chunks[first:last], first,
                                      n_blocks, context_of, backward)
            if backward:
                locals_[first:last] = local
                plan.cache[first:last] = [None] * (last - first)
            return nodes

        ChunkExecutor(self.n_threads).run(task, plan.tasks, total.extend)
        return total.total(), locals_

    def map_reduce(self, fn, G, plan, names=None):
        """Sum over the blocks (pairwise, :class:`~sklearn_lvgp.engine._executor.PairwiseSum`)
        of ``fn(G, rows, ctx)``."""
        return self._pass(fn, (G,), plan, names, False)[0]

    def map_reduce_backward(self, fn, G, step, plan, need_local, names=None):
        """``(Σ partials, local)`` of ``fn(G, step, rows, ctx, need_local) -> (local, partial)``
        over the blocks: partials added pairwise, local gradients stacked in row order
        (``None`` when not asked for)."""
        total, locals_ = self._pass(_backward_of(fn, need_local), (G, step), plan, names, True)
        return total, (stack_locals(locals_) if need_local else None)


class _backward_of:
    """``fn(G, step, rows, ctx, need_local)`` as a picklable ``(G, step, rows, ctx)`` callable."""

    def __init__(self, fn, need_local):
        self.fn, self.need_local = fn, need_local

    def __call__(self, G, step, rows, ctx):
        return self.fn(G, step, rows, ctx, self.need_local)


def stack_locals(parts):
    """The chunks' local gradients (dicts of row-aligned arrays) stacked in row order."""
    if not parts or parts[0] is None:
        return None
    return {name: (None if parts[0][name] is None
                   else np.concatenate([p[name] for p in parts], axis=0))
            for name in parts[0]}
