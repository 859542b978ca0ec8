"""The chunked engine on Dask: chunk passes run as tasks where the row partitions live.

A fit given a :class:`dask.array.Array` (or a dask DataFrame) keeps its rows partitioned: the
data are persisted once (on the active ``dask.distributed`` client, or by dask's default
scheduler), and each evaluation of a collapsed bound sends only global-sized messages — the
kernel, Z, the M × M factors of the global step — to the partitions, whose tasks return the
O(M² + M·D) partial statistics and the partial gradients of the globals (Gal, van der Wilk &
Rasmussen 2014). The rows are cut into the blocks the in-memory engine uses
(:func:`~sklearn_lvgp.engine._rows.plan_blocks`: from the problem size and the bound's cost,
never from the partitions); the partitions are moved once, where needed, so that each holds
whole blocks, a partition's task runs the bound on each of its blocks and returns its share of
the pairwise tree over the block index
(:class:`~sklearn_lvgp.engine._executor.PairwiseSum`), and the driver completes the tree. So
every partitioning gives the in-memory result to the last bit.

For a GPLVM the local q(x_n) stay partitioned too: the alternating optimiser's local step runs
as one task per partition, and its results stay on the workers (persisted) for the next global
step; only the fitted latent means and variances are gathered at the end.
"""

from typing import NamedTuple

import numpy as np

from .._core.pairwise import row_tree_nodes
from .._core.parallel import serial_section
from ._executor import PairwiseSum, reduce_in_order
from ._protocol import ChunkContext
from ._rows import _backward_of, plan_blocks, run_blocks, stack_locals

__all__ = ["is_dask_collection", "DaskPairwiseRows", "DaskRows", "gather_rows", "map_row_blocks"]


def is_dask_collection(X):
    """Whether ``X`` is a dask collection (checked without importing dask)."""
    module = type(X).__module__ or ""
    return module.startswith("dask") and hasattr(X, "__dask_graph__")


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - dask is an optional extra
        raise ImportError("Fitting on dask collections needs dask: "
                          "pip install 'sklearn_lvgp[dask]'.") from exc
    return dask, da


def _as_2d_array(X, name):
    """A float64, 2-D dask array of a dask array or DataFrame, one chunk across columns."""
    dask, da = _dask()
    columns = None
    if hasattr(X, "to_dask_array"):  # a dask DataFrame or Series
        columns = list(X.columns) if hasattr(X, "columns") else None
        X = X.to_dask_array(lengths=True)
    elif not isinstance(X, da.Array):  # in-memory targets next to a dask X
        X = np.asarray(X)
        if X.dtype == object or not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise ValueError(f"{name} must be numeric, got dtype {X.dtype}.")
        X = da.from_array(X, chunks=X.shape or (1,))
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got a dask array with {X.ndim} dimensions.")
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError(f"{name} has unknown chunk sizes; call compute_chunk_sizes() first.")
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise ValueError(f"{name} must be numeric, got dtype {X.dtype}.")
    return X.astype(np.float64).rechunk({1: -1}), columns


class DaskRows:
    """Row partitions of aligned dask arrays, persisted once and validated.

    Parameters
    ----------
    arrays : dict of str to dask array or DataFrame
        The arrays (same number of rows); the first one's row chunks are the partitions.
    chunk_rows : int, default=None
        Rows per block, as in :class:`~sklearn_lvgp.engine._rows.InMemoryRows` (``None``:
        from the bound's cost and the problem size).

    The first pass of a bound (:meth:`plan`) moves the partition boundaries that fall inside a
    block of its plan to the nearest block boundary (fewer than a block's rows per boundary,
    once: the arrays are rechunked and persisted again).

    Attributes
    ----------
    n_rows : int
    shapes : dict of str to tuple
    parts : dict of str to list of dask.delayed.Delayed
        One delayed block per partition and array.
    columns : list or None
        Column names of the first array when it was a DataFrame.
    """

    def __init__(self, arrays, *, chunk_rows=None):
        dask, da = _dask()
        names = list(arrays)
        converted = {}
        self.columns = None
        for i, name in enumerate(names):
            A, columns = _as_2d_array(arrays[name], name)
            if i == 0:
                self.columns = columns
                row_chunks = A.chunks[0]
            elif A.shape[0] != sum(row_chunks):
                raise ValueError(f"{name} has {A.shape[0]} rows but {names[0]} has "
                                 f"{sum(row_chunks)}.")
            converted[name] = A.rechunk({0: row_chunks})
        persisted = dask.persist(*converted.values())
        ok = dask.compute(*[da.isfinite(A).all() for A in persisted])
        for name, good in zip(names, ok, strict=True):
            if not good:
                raise ValueError(f"Input {name} contains NaN or infinity. Missing values (NaN) "
                                 "are not taken from Dask input: fit a numpy array, or impute "
                                 "them first.")
        self.arrays = dict(zip(names, persisted, strict=True))
        self.n_rows = int(sum(row_chunks))
        self.shapes = {k: v.shape for k, v in self.arrays.items()}
        self.row_chunks = tuple(int(c) for c in row_chunks)
        self.parts = {k: list(v.to_delayed().ravel()) for k, v in self.arrays.items()}
        self._held = {}
        self.chunk_rows = chunk_rows
        self._blocks = {}

    @property
    def n_partitions(self):
        """Number of row partitions."""
        return len(self.row_chunks)

    @property
    def offsets(self):
        """First row of each partition, and the number of rows last."""
        return np.concatenate([[0], np.cumsum(self.row_chunks)]).astype(int)

    def gather(self, n_max, random_state):
        """At most ``n_max`` rows of every array, gathered to the driver (e.g. for a
        data-derived initialisation): all rows when there are not more, else a sorted random
        choice from ``random_state``. Returns the numpy arrays in the order of :attr:`arrays`."""
        dask, _ = _dask()
        idx = (np.arange(self.n_rows) if self.n_rows <= n_max
               else np.sort(random_state.choice(self.n_rows, n_max, replace=False)))
        return [np.asarray(A) for A in dask.compute(*[A[idx] for A in self.arrays.values()])]

    def replace(self, name, parts, hold, width=None):
        """Make ``parts`` (one delayed ``(rows, width)`` block per partition, e.g. a local
        step's results on the workers) the row array ``name``; ``hold`` keeps their persisted
        futures alive. ``width`` may be left out when ``name`` is already a row array."""
        if len(parts) != self.n_partitions:
            raise ValueError(f"{name} needs one block per partition ({self.n_partitions}), "
                             f"got {len(parts)}.")
        if width is None:
            if name not in self.shapes:
                raise ValueError(f"the width of the new row array {name} is needed.")
            width = self.shapes[name][1]
        self.parts[name] = list(parts)
        self.shapes[name] = (self.n_rows, int(width))
        self._held[name] = hold

    def align(self, boundaries):
        """Move the partition boundaries that are not in ``boundaries`` (sorted row positions
        from 0 to ``n_rows``: block boundaries) to the nearest one; partitions left empty
        are dropped. Every row array is rechunked and persisted again, once."""
        dask, da = _dask()
        boundaries = np.asarray(boundaries)
        offsets = self.offsets
        inner = offsets[1:-1]
        if np.all(np.isin(inner, boundaries)) and min(self.row_chunks) > 0:
            return
        at = np.clip(np.searchsorted(boundaries, inner), 1, boundaries.size - 1)
        lower, upper = boundaries[at - 1], boundaries[at]
        moved = np.where(inner - lower <= upper - inner, lower, upper)
        new = np.unique(np.concatenate([[0], moved, [self.n_rows]]))
        chunks = tuple(int(c) for c in np.diff(new))
        names = list(self.parts)
        arrays = [da.concatenate([da.from_delayed(part, shape=(rows, self.shapes[name][1]),
                                                  dtype=np.float64)
                                  for part, rows in zip(self.parts[name], self.row_chunks,
                                                        strict=True)], axis=0)
                  .rechunk({0: chunks, 1: -1}) for name in names]
        persisted = dask.persist(*arrays)
        self.row_chunks = chunks
        for name, A in zip(names, persisted, strict=True):
            self.parts[name] = list(A.to_delayed().ravel())
            if name in self.arrays:
                self.arrays[name] = A
            else:
                self._held[name] = A

    # ------------------------------------------------------------ the bound protocol
    def plan(self, bound, G):
        """The blocks of ``bound``'s passes at ``G`` (:func:`~sklearn_lvgp.engine._rows.
        plan_blocks`, cached per :meth:`bound.plan_key`), with the partitions aligned to them
        (:meth:`align`); their caches are never kept across passes."""
        key = bound.plan_key(G)
        blocks = self._blocks.get(key)
        if blocks is None:
            blocks = self._blocks[key] = plan_blocks(bound, G, self.n_rows, self.chunk_rows)
        starts = [a for a, _ in blocks] + [self.n_rows]
        self.align(starts)
        first = np.searchsorted(starts, self.offsets)
        return _DaskPlan(blocks, [(int(a), int(b)) for a, b in zip(first[:-1], first[1:],
                                                                   strict=True)])

    def _tasks(self, fn, names, head, plan, backward):
        dask, _ = _dask()
        head = dask.delayed(head, traverse=False)
        task = dask.delayed(_protocol_task, pure=True)
        offsets = self.offsets
        return [task(fn, names, head, _Run(plan.blocks[a:b], a, len(plan.blocks),
                                           int(offsets[p]), backward),
                     *[self.parts[name][p] for name in names])
                for p, (a, b) in enumerate(plan.runs)]

    def map_reduce(self, fn, G, plan, names):
        """Sum over the blocks (pairwise, as in memory) of ``fn(G, rows, ctx)``, one task per
        partition."""
        dask, _ = _dask()
        total = PairwiseSum(len(plan.blocks))
        for nodes, _ in dask.compute(*self._tasks(fn, names, (G,), plan, False)):
            total.extend(nodes)
        return total.total()

    def map_reduce_backward(self, fn, G, step, plan, need_local, names):
        """``(Σ partials, local)`` of ``fn(G, step, rows, ctx, need_local)``, one task per
        partition; the local gradients are gathered only when asked for."""
        dask, _ = _dask()
        out = dask.compute(*self._tasks(_backward_of(fn, need_local), names, (G, step), plan,
                                        True))
        total = PairwiseSum(len(plan.blocks))
        for nodes, _ in out:
            total.extend(nodes)
        return total.total(), (stack_locals([local for _, local in out]) if need_local
                               else None)

    def subset(self, idx, extra=None):
        """The rows ``idx`` (a minibatch) as a row source whose tasks run where they live.

        Parameters
        ----------
        idx : array-like of int or None
            Row positions in the whole data (``None``: all rows).
        extra : dict of str to ndarray, default=None
            Row-aligned arrays of the minibatch itself (e.g. its Monte Carlo draws), shipped
            with the tasks: row ``j`` belongs to ``idx[j]``.
        """
        idx = np.arange(self.n_rows) if idx is None else np.asarray(idx)
        return _DaskSubset(self, idx, dict(extra or {}))

    def map_blocks(self, fn, names, shared, extra_parts=None):
        """Delayed ``fn(*blocks, *shared)`` per partition (blocks of ``names``, then extras)."""
        dask, _ = _dask()
        shared = dask.delayed(shared, traverse=False)
        columns = [self.parts[n] for n in names] + list(extra_parts or [])
        task = dask.delayed(_serial_task, pure=True)
        return [task(fn, *blocks, shared) for blocks in zip(*columns, strict=True)]

    def reduce_blocks(self, fn, names, shared, extra_parts=None):
        """Sum over partitions (in partition order) of ``fn(*blocks, *shared)``."""
        dask, _ = _dask()
        return reduce_in_order(list(dask.compute(*self.map_blocks(fn, names, shared,
                                                                  extra_parts))))


class _DaskSubset:
    """A minibatch of a :class:`DaskRows`: each partition holding some of its rows runs them
    as one task (data-parallel minibatch gradients). The partials are added in partition order;
    the local gradients come back in minibatch order. A chunk's context has ``start`` and
    ``stop`` ``None``: its rows are not a contiguous range of the minibatch."""

    def __init__(self, rows, idx, extra):
        self.rows, self.extra = rows, extra
        self.n_rows = idx.size
        offsets = rows.offsets
        part = np.searchsorted(offsets, idx, side="right") - 1
        self.groups = []
        for p in range(rows.n_partitions):
            pos = np.flatnonzero(part == p)
            if pos.size:
                self.groups.append((p, pos, idx[pos] - offsets[p]))

    def plan(self, bound, G):
        return self.groups

    def _tasks(self, fn, names, head, groups):
        dask, _ = _dask()
        head = dask.delayed(head, traverse=False)
        task = dask.delayed(_subset_task, pure=True)
        block_names = [name for name in names if name not in self.extra]
        tasks = []
        for j, (p, pos, local) in enumerate(groups):
            ctx = ChunkContext(j, None, None, len(groups))
            extra = {name: self.extra[name][pos] for name in names if name in self.extra}
            tasks.append(task(fn, names, head, ctx, local, extra, block_names,
                              *[self.rows.parts[name][p] for name in block_names]))
        return tasks

    def map_reduce(self, fn, G, plan, names):
        dask, _ = _dask()
        return reduce_in_order(list(dask.compute(*self._tasks(fn, names, (G,), plan))))

    def map_reduce_backward(self, fn, G, step, plan, need_local, names):
        dask, _ = _dask()
        out = dask.compute(*self._tasks(_backward_of(fn, need_local), names, (G, step), plan))
        partials = reduce_in_order([partial for _, partial in out])
        if not need_local or out[0][0] is None:
            return partials, None
        local = {}
        for name, first in out[0][0].items():
            if first is None:
                local[name] = None
                continue
            local[name] = np.empty((self.n_rows,) + first.shape[1:])
            for (_, pos, _), (parts, _) in zip(plan, out, strict=True):
                local[name][pos] = parts[name]
        return partials, local


def _subset_task(fn, names, head, ctx, local, extra, block_names, *blocks):
    """One partition's share of a minibatch: its rows ``local`` of the blocks, and the extras."""
    rows = {name: block[local] for name, block in zip(block_names, blocks, strict=True)}
    rows.update(extra)
    with serial_section():
        return fn(*head, {name: rows[name] for name in names}, ctx)


def _serial_task(fn, *args):
    """Run a chunk function inside a Dask task: serially (the workers are the parallelism)."""
    *blocks, shared = args
    with serial_section():
        return fn(*blocks, *shared)


class _DaskPlan(NamedTuple):
    """The blocks of a pass and each partition's run of them ``(first, last)``."""

    blocks: list
    runs: list


class _Run(NamedTuple):
    """A partition's blocks (row ranges of the whole data), the index of its first block, the
    blocks in the pass, the partition's first row and whether the pass is a backward one."""

    blocks: list
    first: int
    n_blocks: int
    offset: int
    backward: bool


def _protocol_task(fn, names, head, run, *arrays):
    """One partition's pass of a protocol bound: ``fn(*head, rows, ctx)`` on each of its blocks,
    serially; returns its nodes of the pairwise tree and (backward) its local results
    stacked."""
    part = dict(zip(names, arrays, strict=True))
    o = run.offset

    def rows_of(a, b):
        return {name: A[a - o:b - o] for name, A in part.items()}

    def context_of(j, a, b):
        return ChunkContext(j, a, b, run.n_blocks)

    with serial_section():
        nodes, local = run_blocks(fn, head, rows_of, run.blocks, run.first, run.n_blocks,
                                  context_of, run.backward)
    return nodes, (stack_locals(local) if run.backward else None)


class DaskPairwiseRows:
    """Reductions over the rows of a dask array on the pairwise tree of the row index: the
    dask twin of :class:`~sklearn_lvgp._core.pairwise.PairwiseRows`, with its bits for every
    partitioning (each partition reduces its rows to the tree nodes they cover, on its worker;
    the driver completes the tree).

    Parameters
    ----------
    X : dask array of shape (n_rows, n_columns)
        Float64 rows, one chunk across the columns.
    """

    def __init__(self, X):
        self.X = X
        self.n_rows, self.n_columns = (int(n) for n in X.shape)
        self._offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(int)

    def _blocks(self):
        return zip(self.X.to_delayed().ravel(), self._offsets[:-1], self._offsets[1:],
                   strict=True)

    def sum(self, fn):
        """Σ over the rows of ``fn(block)``, one task per partition."""
        dask, _ = _dask()
        task = dask.delayed(_row_tree_task)
        nodes = dask.compute(*[task(fn, block, int(a), int(b), self.n_rows)
                               for block, a, b in self._blocks() if b > a])
        total = PairwiseSum(self.n_rows)
        for part in nodes:
            total.extend(part)
        return total.total()

    def max(self, fn):
        """The maximum over the rows of ``fn(block)``."""
        dask, _ = _dask()
        task = dask.delayed(_max_task)
        parts = dask.compute(*[task(fn, block) for block, a, b in self._blocks() if b > a])
        return np.max(np.stack(parts), axis=0)

    def map(self, fn, width):
        """``fn(block, first_row)`` of every partition, as a dask array ``(n_rows, width)``
        partitioned like the rows."""
        return self.X.map_blocks(_rows_with_offset, fn=fn, dtype=np.float64,
                                 chunks=(self.X.chunks[0], (int(width),)))

    def like(self, B):
        """The same reductions over the rows of ``B`` (a result of :meth:`map`)."""
        return DaskPairwiseRows(B)


def _row_tree_task(fn, block, start, stop, n_rows):
    with serial_section():
        return row_tree_nodes(lambda lo, hi: fn(block[lo - start:hi - start]), start, stop,
                              n_rows)


def _max_task(fn, block):
    with serial_section():
        return np.max(fn(block), axis=0)


def _rows_with_offset(block, fn=None, block_info=None):
    with serial_section():
        return fn(block, block_info[0]["array-location"][0][0])


def _block_outputs(fn, block, n_outputs):
    with serial_section():
        out = fn(block)
    return out if n_outputs > 1 else (out,)


def map_row_blocks(fn, X, out_columns, n_outputs=1):
    """Apply a row-wise ``fn`` (an estimator's ``predict``/``transform``) to each partition.

    Parameters
    ----------
    fn : callable
        ``fn(block)`` on an in-memory ``(rows, n_features)`` block; returns one array or a
        tuple of ``n_outputs`` arrays with ``rows`` leading entries.
    X : dask array or DataFrame
        Rows.
    out_columns : int or None
        Trailing size of each output (``None``: 1-D outputs).
    n_outputs : int, default=1
        Number of arrays ``fn`` returns.

    Returns
    -------
    dask array or tuple of dask arrays
        Lazily computed outputs, partitioned like ``X``.
    """
    dask, da = _dask()
    X, _ = _as_2d_array(X, "X")
    blocks = X.to_delayed().ravel()
    outs = [[] for _ in range(n_outputs)]
    for block, rows in zip(blocks, X.chunks[0], strict=True):
        res = dask.delayed(_block_outputs, nout=n_outputs)(fn, block, n_outputs)
        for k in range(n_outputs):
            shape = (rows,) if out_columns is None else (rows, out_columns)
            outs[k].append(da.from_delayed(res[k], shape=shape, dtype=np.float64))
    arrays = tuple(da.concatenate(o, axis=0) for o in outs)
    return arrays if n_outputs > 1 else arrays[0]


def gather_rows(A, idx):
    """Rows ``idx`` of the 2-D dask array ``A``, in that order, as an ndarray on the driver
    (dask indexes them in increasing order; they are put back in the order asked)."""
    order = np.argsort(idx, kind="stable")
    out = np.empty((idx.size, A.shape[1]))
    out[order] = np.asarray(A[idx[order]].compute())
    return out
