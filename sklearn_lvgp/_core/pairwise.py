"""Sums over a fixed pairwise tree of an index: the same bits for every grouping of the terms.

A sum of floating-point terms depends on the order of its additions. The engine's chunk passes
(:mod:`sklearn_lvgp.engine`) and the row reductions of data-derived defaults run on threads and
on Dask partitions that group the terms differently; adding them over a binary tree fixed by the
*index* of the terms (a block's, or a row's) makes the result independent of the grouping: any
run of consecutive terms reduces to the tree nodes it covers, and the nodes of all runs meet in
the same tree (:class:`PairwiseSum`).

:func:`row_tree_nodes` and :func:`row_tree_sum` take every row as a term, vectorised over
blocks of rows; :class:`PairwiseRows` is an in-memory array's reductions on that tree, and
:class:`~sklearn_lvgp.engine._dask.DaskPairwiseRows` a dask array's, with the same bits.
"""

import numpy as np

__all__ = ["PairwiseRows", "PairwiseSum", "row_tree_nodes", "row_tree_sum"]

#: Rows whose per-row terms are formed at once by :func:`row_tree_nodes`.
ROWS_PER_PIECE = 4096


class PairwiseSum:
    """Sum of per-block partials over a fixed pairwise tree of the block index.

    Node ``(level, i)`` of the tree is the sum of blocks ``i·2^level .. (i+1)·2^level − 1``
    (those of them that exist): at level 0 a block's partial, above it the sum of its two
    children, left plus right, or its left child alone where the right one covers no block.
    The root, ``(top, 0)`` with ``2^top`` the first power of two not below the block count,
    is the total. Every node's value is fixed by the tree alone, so any run of consecutive
    blocks — a thread's chunks, a Dask partition — can reduce its blocks to the nodes it
    covers (:meth:`nodes`, at most about ``2 log2`` of them) and hand them on: the total has
    the same bits for every grouping of the blocks into runs.

    Nodes are added in block order (:meth:`add_block`, :meth:`add_node`); a node whose left
    sibling is the last one held merges with it at once, so at most ``top + 1`` nodes are
    held. Partials are numbers, arrays, ``None`` or (named) tuples and lists of them (as in
    :func:`reduce_in_order`); they are never modified (sums are new arrays, added into in
    place only while the sum owns them).

    Parameters
    ----------
    n_blocks : int
        Number of blocks of the whole pass (at least one).
    first : int, default=0
        The first block this sum is given (a run's share of the tree starts there).
    """

    def __init__(self, n_blocks, first=0):
        self.n_blocks = int(n_blocks)
        if self.n_blocks < 1:
            raise ValueError("PairwiseSum needs at least one block.")
        self.top = (self.n_blocks - 1).bit_length()
        self._nodes = []  # (level, index, value, owned) in block order
        self._first = self._next = int(first)  # first block given, first not yet covered

    def add_block(self, index, part):
        """Add block ``index``'s partial (the next block in order)."""
        self.add_node(0, index, part)

    def add_node(self, level, index, value, owned=False):
        """Add the value of node ``(level, index)`` (the next run of blocks in order);
        ``owned``: the value is this sum's to add into (a sum another :class:`PairwiseSum`
        formed)."""
        start = index << level
        if start != self._next:
            raise ValueError(f"node ({level}, {index}) starts at block {start}, expected the "
                             f"block {self._next}.")
        self._next = min(self.n_blocks, (index + 1) << level)
        while True:
            # a node whose right sibling covers no block is its parent, unchanged
            while level < self.top and not index & 1 and (index + 1) << level >= self.n_blocks:
                level, index = level + 1, index >> 1
            held = self._nodes[-1] if self._nodes else None
            if not (index & 1 and held is not None and held[0] == level
                    and held[1] == index - 1):
                break
            self._nodes.pop()
            value, owned = _plus(held[2], value, held[3]), True
            level, index = level + 1, index >> 1
        self._nodes.append((level, index, value, owned))

    def extend(self, nodes):
        """Add the :meth:`nodes` of another sum over the next run of blocks."""
        for level, index, value, owned in nodes:
            self.add_node(level, index, value, owned)

    def nodes(self):
        """The held nodes ``(level, index, value, owned)``, in block order: this run's share
        of the tree."""
        return list(self._nodes)

    def total(self):
        """The sum over all ``n_blocks`` blocks (every block added)."""
        if self._first or self._next != self.n_blocks or len(self._nodes) != 1:
            raise ValueError(f"the sum covers blocks 0 .. {self._next - 1} of "
                             f"{self.n_blocks}.")
        return self._nodes[0][2]


def _plus(a, b, owned):
    """``a + b`` for partials; into ``a`` when ``owned`` (a sum's own arrays)."""
    if isinstance(a, tuple):
        fields = [_plus(x, y, owned) for x, y in zip(a, b, strict=True)]
        return type(a)(*fields) if hasattr(a, "_fields") else tuple(fields)
    if isinstance(a, list):
        return [_plus(x, y, owned) for x, y in zip(a, b, strict=True)]
    if a is None:
        return None
    if (isinstance(a, np.ndarray) and a.shape == np.shape(b)
            and a.dtype == np.result_type(a, b)):
        out = a if owned else np.empty_like(a)  # a 0-d array stays one
        np.add(a, b, out=out)
        return out
    return a + b


def row_tree_nodes(terms, start, stop, n_rows, piece=ROWS_PER_PIECE):
    """The nodes (as :meth:`PairwiseSum.nodes`) of the pairwise tree over ``n_rows`` rows, each
    row a leaf, that rows ``start .. stop - 1`` cover.

    Parameters
    ----------
    terms : callable
        ``terms(lo, hi)`` -> array of the rows ``lo .. hi - 1``'s terms (leading axis the
        rows; ``lo`` and ``hi`` are positions in the whole data).
    start, stop : int
        The run of rows (``0 <= start < stop <= n_rows``).
    n_rows : int
        Rows of the whole data.
    piece : int, default=ROWS_PER_PIECE
        Rows whose terms are formed at once (a power of two; the memory of one call).
    """
    total = PairwiseSum(n_rows, start)
    p = start
    while p < stop:
        level = 0  # the largest node that starts at p and ends within the run
        while (level < total.top and not p & ((2 << level) - 1)
               and min(p + (2 << level), n_rows) <= stop):
            level += 1
        end = min(p + (1 << level), n_rows)
        total.add_node(level, p >> level, _node(terms, p, end, level, piece), True)
        p = end
    return total.nodes()


def _node(terms, start, end, level, piece):
    """Value of the tree node at ``level`` starting at row ``start`` (rows up to ``end``)."""
    if (1 << level) > piece:
        half = start + (1 << (level - 1))
        left = _node(terms, start, min(half, end), level - 1, piece)
        if half >= end:
            return left
        return left + _node(terms, half, end, level - 1, piece)
    x = np.asarray(terms(start, end), dtype=np.float64)
    while x.shape[0] > 1:  # pairs (0, 1), (2, 3), ...; an odd last row has no sibling
        m = x.shape[0]
        pairs = x[0:m - 1:2] + x[1:m:2]
        x = pairs if m % 2 == 0 else np.concatenate([pairs, x[m - 1:]])
    out = x[0]  # the sum owns it: never a view of the terms
    return out.copy() if isinstance(out, np.ndarray) else out


def row_tree_sum(terms, n_rows, piece=ROWS_PER_PIECE):
    """Σ over the ``n_rows`` rows of ``terms`` (see :func:`row_tree_nodes`), added over the
    pairwise tree of the row index."""
    return row_tree_nodes(terms, 0, n_rows, n_rows, piece)[0][2]


class PairwiseRows:
    """Reductions over the rows of an in-memory array on the pairwise tree of the row index.

    The same interface, with the same bits for any partitioning, is
    :class:`~sklearn_lvgp.engine._dask.DaskPairwiseRows` for a dask array: functions written
    against it (:func:`~sklearn_lvgp._core.scaling.pairwise_column_moments`,
    :func:`~sklearn_lvgp._core.init.pairwise_pca_latents`) give a numpy array's result
    bit for bit on Dask.

    Parameters
    ----------
    A : ndarray of shape (n_rows, n_columns)
    """

    def __init__(self, A):
        self.A = A
        self.n_rows, self.n_columns = A.shape

    def sum(self, fn):
        """Σ over the rows of ``fn(block)`` (an array with one leading entry per row of the
        block), on the pairwise tree of the row index."""
        return row_tree_sum(lambda lo, hi: fn(self.A[lo:hi]), self.n_rows)

    def max(self, fn):
        """The maximum over the rows of ``fn(block)`` (per trailing entry)."""
        return np.max(fn(self.A), axis=0)

    def map(self, fn, width):
        """``fn(block, first_row)`` of all rows: an array ``(n_rows, width)`` of the rows'
        results, in the source's kind (here: numpy)."""
        return fn(self.A, 0)

    def like(self, B):
        """The same reductions over the rows of ``B`` (a result of :meth:`map`)."""
        return PairwiseRows(B)
