"""The bound protocol: an objective as global terms plus sums over row chunks.

Every objective of the package is a :class:`ChunkedBound` (Gal, van der Wilk & Rasmussen 2014,
:cite:`gal2014distributed`): its global terms come from the parameters alone
(:meth:`~ChunkedBound.prepare`); everything that touches the data is a sum over rows, computed
chunk by chunk; and a global step between the passes turns the reduced statistics into the value
and the adjoints the backward pass needs. A row source runs the passes — the thread executor
(:class:`~sklearn_lvgp.engine._executor.InMemoryRows`) or the Dask one
(:class:`~sklearn_lvgp.engine._dask.DaskRows`) — and :func:`evaluate_bound` strings them
together. Neither knows which model it runs; a chunk's rows and its local gradients never leave
the worker that computed them, except when the caller asks for the local gradients.

The "chunks" a bound sees are the *blocks* of the rows: a fixed partition planned from the
problem size and the bound's cost only (:func:`~sklearn_lvgp.engine._rows.plan_blocks`), the
same for every row source, thread count and Dask partitioning. Every sum Σ_c below is taken
over the pairwise tree of the block index
(:class:`~sklearn_lvgp.engine._executor.PairwiseSum`), whichever thread or worker ran which
blocks, so the value and every gradient have the same bits for all of them — with no code in
the bound.

A two-pass bound (the collapsed bounds, whose global step needs the reduced statistics)::

    G = bound.prepare(params)
    S = Σ_c bound.chunk_stats(G, rows_c, ctx_c)            # forward pass, added pairwise
    step = bound.finish(G, S)                              # global step: value, adjoints of S
    local_c, P_c = bound.chunk_backward(G, step, rows_c, ctx_c)
    value, grads = bound.gradient(G, step, Σ_c P_c)

A one-pass bound (``two_pass = False``: the uncollapsed bounds, whose chunk terms are independent
given the globals) skips the first two lines: its ``chunk_backward`` receives ``step=None`` and
returns its value contribution inside the partial.
"""

from typing import NamedTuple

from ._executor import serial_global_steps

__all__ = ["ChunkContext", "ChunkedBound", "Evaluation", "evaluate_bound"]


class ChunkContext(NamedTuple):
    """Where a chunk's (a block's) pass runs.

    Attributes
    ----------
    index : int
        The block's position in its pass.
    start, stop : int or None
        Its rows ``start:stop`` of the whole data (``None`` where they are not a contiguous
        range: a minibatch's rows in one Dask partition).
    n_chunks : int
        Blocks in the pass: a function of the problem size and the bound's cost only (so a
        choice made from it is the same for every thread count and Dask partitioning).
    workspace : Workspace or None
        Buffers the chunk may use: its own when :attr:`keep` (they outlive the pass), else its
        thread's; ``None`` where the pass runs on Dask.
    keep : bool
        Whether the forward pass's cache of this chunk is kept for its backward pass.
    cache : list or None
        One slot per chunk (``cache[index]``), written by the forward pass and read by the
        backward pass when :attr:`keep`.
    """

    index: int
    start: int
    stop: int
    n_chunks: int
    workspace: object = None
    keep: bool = False
    cache: list = None


class Evaluation(NamedTuple):
    """What :func:`evaluate_bound` returns."""

    value: float
    grads: object
    local: dict
    globals: object
    step: object


class ChunkedBound:
    """An objective written as global terms plus sums over row chunks.

    Subclasses set :attr:`row_names` (the row-aligned arrays a chunk reads, in the order the
    row source holds them) and :attr:`two_pass`, and implement the methods below. A bound
    holds no data: the rows live with the row source (in memory, or partitioned on Dask
    workers), and the same bound object runs on either.
    """

    #: Names of the row-aligned arrays a chunk reads (data, and the rows' local parameters).
    row_names = ()
    #: Whether a global step (:meth:`finish`) sits between a forward and a backward pass.
    two_pass = True

    def prepare(self, params):
        """Global terms from the parameters (kernel matrices of the inducing inputs, q(u),
        priors, KL(q(u) ‖ p(u))): the object every chunk pass and the global step read."""
        raise NotImplementedError

    def chunk_cost(self, G):
        """``(work_per_row, max_rows, kept_per_row[, min_work])``: the inner-loop work of a row
        (relative), the largest chunk the memory of one chunk allows (``None``: no limit), the
        number of floats a row's forward cache holds (0: nothing kept) and, optionally, the
        least work worth a chunk of its own in the same units (default
        :data:`~sklearn_lvgp.engine._executor.MIN_CHUNK_WORK`). Every row source plans its
        blocks from these (:func:`~sklearn_lvgp.engine._rows.plan_blocks`), never from the
        thread count or the partitions."""
        raise NotImplementedError

    def plan_key(self, G):
        """A hashable key of what :meth:`chunk_cost` depends on (the plan is cached by it)."""
        return None

    def chunk_stats(self, G, rows, ctx):
        """Forward pass of one chunk: its partial statistics (arrays and floats, or tuples and
        lists of them, added over the blocks by
        :class:`~sklearn_lvgp.engine._executor.PairwiseSum`; never modified there)."""
        raise NotImplementedError

    def finish(self, G, stats):
        """Global step: the value and the adjoints of the reduced statistics (any object the
        backward pass reads)."""
        raise NotImplementedError

    def chunk_backward(self, G, step, rows, ctx, need_local=True):
        """Backward pass of one chunk: ``(local, partial)``.

        ``local`` maps names to row-aligned local gradients of the chunk's rows (``None`` when
        ``need_local`` is false or the bound has none); ``partial`` is the chunk's share of the
        global gradients (and, for a one-pass bound, of the value).
        """
        raise NotImplementedError

    def gradient(self, G, step, partials):
        """``(value, grads)`` from the reduced backward partials and the global terms."""
        raise NotImplementedError


@serial_global_steps
def evaluate_bound(bound, params, source, *, need_local=True):
    """Value, global gradients and local gradients of ``bound`` at ``params`` over ``source``.

    Parameters
    ----------
    bound : ChunkedBound
    params : object
        What :meth:`ChunkedBound.prepare` takes.
    source : row source
        :class:`~sklearn_lvgp.engine._executor.InMemoryRows` or
        :class:`~sklearn_lvgp.engine._dask.DaskRows` holding ``bound.row_names``.
    need_local : bool, default=True
        Whether the local gradients are computed and gathered.

    Returns
    -------
    Evaluation
        ``value`` and ``grads`` (what :meth:`ChunkedBound.gradient` returns); ``local``, the
        local gradients of all rows in row order (``None`` when not asked for); ``globals``,
        what :meth:`ChunkedBound.prepare` returned; ``step``, the global step's result
        (``None`` for a one-pass bound).
    """
    G = bound.prepare(params)
    plan = source.plan(bound, G)
    names = bound.row_names
    step = None
    if bound.two_pass:
        step = bound.finish(G, source.map_reduce(bound.chunk_stats, G, plan, names))
    partials, local = source.map_reduce_backward(bound.chunk_backward, G, step, plan,
                                                 need_local, names)
    value, grads = bound.gradient(G, step, partials)
    return Evaluation(value, grads, local, G, step)
