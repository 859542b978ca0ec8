"""Row-aligned arrays in memory, run through a bound's chunk passes on the thread executor.

:class:`InMemoryRows` is the in-memory row source of the bound protocol
(:mod:`sklearn_lvgp.engine._protocol`); :class:`~sklearn_lvgp.engine._dask.DaskRows` is the
partitioned one. It fixes the chunk partition from the bound's cost estimate and the problem
size only (:func:`~sklearn_lvgp.engine._executor.plan_chunks`), gives each chunk its context
(its rows, its workspace, the slot of its kept cache), runs the passes on
:class:`~sklearn_lvgp.engine._executor.ChunkExecutor` and reduces in chunk order, so the result
is the same for every thread count.
"""

from typing import NamedTuple

import numpy as np

from .._core.workspace import chunk_workspace, thread_workspace
from ._executor import ChunkExecutor, plan_chunks
from ._protocol import ChunkContext

__all__ = ["InMemoryRows", "KEEP_TOTAL"]

#: Largest number of float64 entries of per-chunk caches kept between the two passes (32 MiB).
KEEP_TOTAL = 2 ** 22


class _Plan(NamedTuple):
    chunks: list
    keep: bool
    cache: list


class InMemoryRows:
    """Row-aligned arrays held in memory, cut into fixed chunks.

    Parameters
    ----------
    arrays : dict of str to ndarray
        Arrays with the same number of rows (data and the rows' local parameters); not copied.
    chunk_rows : int, default=None
        Rows per chunk; ``None`` chooses from the bound's cost and the problem size (never from
        the thread count).
    n_threads : int, default=None
        Threads; ``None`` takes the enclosing :func:`sklearn_lvgp._core.parallel.threads`
        context.
    prefix : str, default="chunk"
        Name of the chunks' workspaces (in the thread's workspace when caches are not kept).
    """

    def __init__(self, arrays, *, chunk_rows=None, n_threads=None, prefix="chunk"):
        self.arrays = dict(arrays)
        self.n_rows = next(iter(self.arrays.values())).shape[0] if self.arrays else 0
        self.chunk_rows = chunk_rows
        self.n_threads = n_threads
        self.prefix = prefix
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
                            prefix=self.prefix)

    def chunks(self, bound, G):
        """``(chunks, keep)``: the row ranges of ``bound``'s passes at ``G`` and whether the
        forward caches are kept for the backward pass (cached per :meth:`bound.plan_key`)."""
        key = bound.plan_key(G)
        if key not in self._plans:
            work, max_rows, kept = bound.chunk_cost(G)
            chunks = plan_chunks(self.n_rows, work,
                                 max_rows=None if max_rows is None else max(1, max_rows),
                                 chunk_rows=self.chunk_rows)
            self._plans[key] = (chunks, kept > 0 and self.n_rows * kept <= KEEP_TOTAL)
        return self._plans[key]

    def plan(self, bound, G):
        """The plan of one evaluation: its chunks, keep decision and a fresh cache slot list."""
        chunks, keep = self.chunks(bound, G)
        return _Plan(chunks, keep, [None] * len(chunks))

    def _context(self, plan, i, a, b):
        if plan.keep:
            workspace = chunk_workspace(self.chunk_workspaces, i, True, self.prefix)
        else:
            workspace = thread_workspace().child(self.prefix)
        return ChunkContext(i, a, b, len(plan.chunks), workspace, plan.keep, plan.cache)

    def _rows(self, names, a, b):
        return {name: self.arrays[name][a:b] for name in names}

    def map_reduce(self, fn, G, plan, names=None):
        """Sum over chunks (in chunk order) of ``fn(G, rows, ctx)``."""
        names = tuple(self.arrays) if names is None else names

        def chunk(i, a, b):
            return fn(G, self._rows(names, a, b), self._context(plan, i, a, b))

        return ChunkExecutor(self.n_threads).map_reduce(chunk, plan.chunks)

    def map_reduce_backward(self, fn, G, step, plan, need_local, names=None):
        """``(Σ partials, local)`` of ``fn(G, step, rows, ctx, need_local) -> (local, partial)``
        over the chunks: partials added in chunk order, local gradients stacked in row order
        (``None`` when not asked for)."""
        names = tuple(self.arrays) if names is None else names
        locals_ = [None] * len(plan.chunks)

        def chunk(i, a, b):
            local, partial = fn(G, step, self._rows(names, a, b), self._context(plan, i, a, b),
                                need_local)
            plan.cache[i] = None
            locals_[i] = local
            return partial

        partials = ChunkExecutor(self.n_threads).map_reduce(chunk, plan.chunks)
        return partials, (stack_locals(locals_) if need_local else None)


def stack_locals(parts):
    """The chunks' local gradients (dicts of row-aligned arrays) stacked in row order."""
    if not parts or parts[0] is None:
        return None
    return {name: (None if parts[0][name] is None
                   else np.concatenate([p[name] for p in parts], axis=0))
            for name in parts[0]}
