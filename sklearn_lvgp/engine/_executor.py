"""Map a function over fixed row blocks on several threads; add the partials pairwise.

This is the one place in the package that runs data chunks in parallel. An objective written as
*global terms + a sum over row blocks of local terms* (Gal, van der Wilk & Rasmussen 2014,
:cite:`gal2014distributed`) hands its per-block forward or backward pass to
:meth:`ChunkExecutor.map_reduce`, which adds the returned partial statistics over a fixed
pairwise tree of the block index (:class:`PairwiseSum`).

These rules keep the results exact and the threads useful:

* the block partition (:func:`plan_chunks`) depends on the problem size and the bound's cost
  only, never on the thread count or on how the rows are stored (in memory, Dask partitions);
* partials are added over a fixed binary tree of the *block index*: a run of consecutive
  blocks — one thread's, one Dask partition's — reduces to the tree's nodes it covers, and the
  nodes of all runs meet in the same tree, so the total has the same bits for every thread
  count and every block-aligned grouping of the blocks;
* each chunk runs serially inside (the jitted twins of :mod:`sklearn_lvgp._compile.jit` take their
  serial branch in every worker and in the inline path), so there is one parallel region
  per pass instead of thousands of small ones;
* a pass of a single chunk runs inline in the calling thread: work too small to share is not
  shared, so ``n_jobs=2`` is never slower than ``n_jobs=1`` by more than the check;
* the global steps between the passes (M × M kernels and their adjoints) run serially too
  (:func:`serial_global_steps` on every evaluation): a numba parallel region there would leave
  its OpenMP threads spinning into the next pass, beside the chunk workers.

The jitted loops release the GIL (``nogil=True``), and BLAS is held at one thread per caller
(:func:`sklearn_lvgp._core.parallel.threads`), so the workers run the chunks' numeric work
concurrently; only the Python glue between the jitted calls is serialised.

With ``n`` threads a pass has ``n`` workers: the calling thread and ``n - 1`` threads of a
pool. Each takes the next chunk index from a shared counter, and whichever worker finishes the
chunk that is next in order adds it (and the finished ones after it) to the result, so a chunk
costs two lock acquisitions rather than a future, a queue transfer and a wake-up of the
calling thread (``doc/developers.rst``, "The chunked objective engine").
"""

import atexit
import functools
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._core.pairwise import PairwiseSum
from .._core.parallel import current_threads, mark_serial_thread, serial_section, serial_twins

__all__ = ["ChunkExecutor", "PairwiseSum", "plan_chunks", "reduce_in_order", "reduce_pairwise",
           "serial_global_steps", "MIN_CHUNK_WORK"]

#: Estimated inner-loop work per chunk below which rows are not split further: at this size
#: the Python glue of one chunk (tens of microseconds per call) is a few percent of its work.
MIN_CHUNK_WORK = 2 ** 22
#: Chunks that a large problem is split into at least (so 16 threads are kept busy).
TARGET_CHUNKS = 64
#: Chunk counts are powers of two up to this and multiples of it above, so that 2, 4, 8 and 16
#: threads get equal shares of chunks (7 chunks on 2 threads take 4 chunk-times, not 3.5).
BALANCE = 16

_pools = {}
_pools_lock = threading.Lock()


def plan_chunks(n_rows, work_per_row, max_rows=None, chunk_rows=None, min_work=None):
    """Row ranges ``[(a, b), ...]`` of the chunks of ``n_rows`` rows.

    Parameters
    ----------
    n_rows : int
        Number of rows.
    work_per_row : float
        Inner-loop iterations per row (a relative cost estimate).
    max_rows : int, default=None
        Largest chunk (the memory budget of one chunk's working arrays).
    chunk_rows : int, default=None
        Explicit rows per chunk (tests and benchmarks); overrides the estimate.
    min_work : float, default=None
        Estimated work below which rows are not split further, in ``work_per_row``'s units
        (``None``: :data:`MIN_CHUNK_WORK`); a bound whose per-chunk glue is small next to its
        unit of work sets a smaller one.

    Returns
    -------
    chunks : list of (int, int)
        Half-open row ranges covering ``0 .. n_rows`` in order. The partition depends only on
        the arguments, never on the number of threads. Without ``chunk_rows`` the chunks
        differ in size by at most one row and their count is a power of two up to
        :data:`BALANCE` or a multiple of it (:func:`balanced_count`): the estimate's count
        rounded down, or up where larger chunks would exceed ``max_rows``.
    """
    n_rows = int(n_rows)
    if n_rows <= 0:
        return []
    if chunk_rows is None:
        least = math.ceil((MIN_CHUNK_WORK if min_work is None else float(min_work))
                          / max(1.0, float(work_per_row)))
        rows = max(least, math.ceil(n_rows / TARGET_CHUNKS))
        if max_rows is not None:
            rows = min(rows, max(1, int(max_rows)))
        return _balanced(n_rows, balanced_count(math.ceil(n_rows / rows), n_rows, max_rows))
    rows = int(chunk_rows)
    if rows < 1:
        raise ValueError(f"chunk_rows must be a positive integer, got {chunk_rows!r}.")
    rows = min(rows, n_rows)
    return [(a, min(n_rows, a + rows)) for a in range(0, n_rows, rows)]


def balanced_count(k, n_rows, max_rows=None):
    """The chunk count used for ``k`` chunks of the size estimate: a power of two up to
    :data:`BALANCE` or a multiple of it — the largest one not above ``k`` (larger chunks, less
    glue per row) when its chunks of ``n_rows`` rows stay within ``max_rows``, else the
    smallest one not below ``k``."""
    if k <= 1:
        return 1
    if k <= BALANCE:
        down, up = 1 << (k.bit_length() - 1), 1 << (k - 1).bit_length()
    else:
        down, up = BALANCE * (k // BALANCE), BALANCE * math.ceil(k / BALANCE)
    if max_rows is None or math.ceil(n_rows / down) <= max_rows:
        return down
    return up


def _balanced(n_rows, k):
    """``min(k, n_rows)`` contiguous ranges of ``n_rows`` rows whose sizes differ by at most one."""
    k = min(k, n_rows)
    base, extra = divmod(n_rows, k)
    bounds = [0]
    for i in range(k):
        bounds.append(bounds[-1] + base + (i < extra))
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def _pool(n_threads):
    with _pools_lock:
        pool = _pools.get(n_threads)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="lvgp-chunk",
                                      initializer=mark_serial_thread)
            _pools[n_threads] = pool
        return pool


def _forget_pools():
    # a forked child inherits the pools but not their threads: work submitted there would wait
    # for threads that do not exist, so the child starts its own pools
    _pools.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


@atexit.register
def _shutdown_pools():
    with _pools_lock:
        for pool in _pools.values():
            pool.shutdown(wait=False, cancel_futures=True)
        _pools.clear()


def serial_global_steps(evaluate):
    """Decorator of an engine evaluation: its own steps run their jitted twins serially.

    Only the chunk passes use several threads. The steps between them are M-sized (K_uu and
    its adjoint: 2 M² Q kernel entries, a fraction of a millisecond serially at M = 100), so
    waking a numba parallel region for them costs more than it saves, and libgomp's threads
    then spin for milliseconds before they sleep, on the cores the next pass's workers need.
    The thread count of the enclosing :func:`~sklearn_lvgp._core.parallel.threads` context, which
    the executor takes, is kept, and the twins give the same bits either way.
    """
    @functools.wraps(evaluate)
    def run(*args, **kwargs):
        with serial_twins():
            return evaluate(*args, **kwargs)

    return run


class ChunkExecutor:
    """Runs per-chunk functions serially or on several threads, returning results in chunk order.

    Parameters
    ----------
    n_threads : int, default=None
        Threads to use; ``None`` takes the count of the enclosing
        :func:`sklearn_lvgp._core.parallel.threads` context (1 outside one).
    """

    def __init__(self, n_threads=None):
        if n_threads is None:
            n_threads = current_threads() or 1
        self.n_threads = max(1, int(n_threads))

    def map(self, fn, chunks):
        """``[fn(i, a, b) for i, (a, b) in enumerate(chunks)]``, possibly in parallel.

        Parameters
        ----------
        fn : callable
            ``fn(index, start, stop)``; must only write rows ``start:stop`` of shared arrays.
        chunks : list of (int, int)
            From :func:`plan_chunks`.

        Returns
        -------
        results : list
            One result per chunk, in chunk order. The first exception raised by a chunk is
            re-raised here (after every submitted chunk has finished).
        """
        results = []
        self.run(fn, chunks, results.append)
        return results

    def map_reduce(self, fn, chunks):
        """Sum of ``fn(i, a, b)`` over the chunks, added pairwise (:class:`PairwiseSum` over
        the chunk index) as results arrive in chunk order.

        Only a window of ``2 · n_threads`` chunk results and the tree's pending nodes (at most
        ``log2`` of the chunk count) are held at a time, so the memory of the partials does
        not grow with the number of chunks.

        Parameters
        ----------
        fn : callable
            ``fn(index, start, stop)`` returning a partial (see :func:`reduce_in_order`).
        chunks : list of (int, int)
            From :func:`plan_chunks` (at least one).

        Returns
        -------
        total
            The partials' sum, with the structure of one partial: the same bits as
            :func:`reduce_pairwise` of the partials.
        """
        if not chunks:
            raise ValueError("map_reduce needs at least one chunk.")
        total = PairwiseSum(len(chunks))
        counter = iter(range(len(chunks)))
        self.run(fn, chunks, lambda part: total.add_block(next(counter), part))
        return total.total()

    def run(self, fn, chunks, consume):
        """Run ``fn(i, a, b)`` on the chunks, handing each result to ``consume`` in chunk order
        (one ``consume`` at a time, on any of the pass's threads)."""
        if self.n_threads == 1 or len(chunks) <= 1:
            with serial_section():
                for i, (a, b) in enumerate(chunks):
                    consume(fn(i, a, b))
            return
        n_workers = min(self.n_threads, len(chunks))
        run = _Pass(fn, chunks, consume, window=2 * n_workers)
        pool = _pool(self.n_threads - 1)  # one pool per n_jobs, whatever the chunk count
        helpers = [pool.submit(run.work) for _ in range(n_workers - 1)]
        try:
            with serial_section():
                run.work()  # the calling thread is one of the workers
        finally:
            for helper in helpers:
                helper.result()
        run.raise_first_error()


class _Pass:
    """One parallel pass: workers take the next chunk index from a shared counter, and whoever
    finishes the chunk that is next in order hands it (and any later ones already finished) to
    ``consume``; one thread consumes at a time, outside the lock.

    A chunk is handed out only while it is fewer than ``window`` chunks ahead of the next one
    to consume, so at most ``window`` results wait in memory. After a chunk fails no further
    chunk is handed out; :meth:`raise_first_error` re-raises an interrupt if there was one,
    else the failure of the lowest chunk index.
    Per chunk this costs two lock acquisitions, not a future, a queue transfer and a wake-up
    of the calling thread.
    """

    def __init__(self, fn, chunks, consume, window):
        self._fn = fn
        self._chunks = chunks
        self._consume = consume
        self._window = window
        self._cond = threading.Condition()
        self._next_chunk = 0
        self._next_consume = 0
        self._finished = {}
        self._consuming = False
        self._errors = {}

    def work(self):
        """Take chunks until none is left (or one failed); never raises."""
        try:
            self._work()
        except BaseException as exc:  # noqa: BLE001 - an interrupt between chunks
            self._fail(len(self._chunks), exc)

    def _work(self):
        n = len(self._chunks)
        while True:
            with self._cond:
                while (not self._errors and self._next_chunk < n
                       and self._next_chunk >= self._next_consume + self._window):
                    self._cond.wait()
                if self._errors or self._next_chunk >= n:
                    return
                i = self._next_chunk
                self._next_chunk += 1
            try:
                result = self._fn(i, *self._chunks[i])
            except BaseException as exc:  # noqa: BLE001 - re-raised by raise_first_error
                self._fail(i, exc)
                return
            with self._cond:
                self._finished[i] = result
                if self._consuming:
                    continue
                self._consuming = True
            self._drain()

    def _drain(self):
        """Consume finished results in chunk order for as long as the next one is there."""
        while True:
            with self._cond:
                i = self._next_consume
                if self._errors or i not in self._finished:
                    self._consuming = False
                    self._cond.notify_all()
                    return
                result = self._finished.pop(i)
            try:
                self._consume(result)
            except BaseException as exc:  # noqa: BLE001 - re-raised by raise_first_error
                self._fail(i, exc)
                with self._cond:
                    self._consuming = False
                return
            with self._cond:
                self._next_consume = i + 1
                self._cond.notify_all()

    def _fail(self, i, exc):
        with self._cond:
            self._errors[i] = exc
            self._finished.clear()
            self._cond.notify_all()

    def raise_first_error(self):
        """Re-raise an interrupt (``KeyboardInterrupt``, ``SystemExit``) if one came, else the
        exception of the lowest failed chunk index, if any."""
        if self._errors:
            errors = [self._errors[i] for i in sorted(self._errors)]
            raise next((e for e in errors if not isinstance(e, Exception)), errors[0])


def _copy(part):
    """A copy of a partial whose arrays the reduction may add into."""
    if isinstance(part, tuple):
        fields = [_copy(p) for p in part]
        return type(part)(*fields) if hasattr(part, "_fields") else tuple(fields)
    return part.copy() if isinstance(part, np.ndarray) else part


def _add_into(total, part):
    """``total + part`` for partials, adding arrays into ``total`` (owned by the reduction)."""
    if isinstance(total, tuple):
        fields = [_add_into(t, p) for t, p in zip(total, part, strict=True)]
        return type(total)(*fields) if hasattr(total, "_fields") else tuple(fields)
    if total is None:
        return None
    if isinstance(total, np.ndarray):
        total += part
        return total
    return total + part


def reduce_pairwise(parts):
    """Sum a list of per-block partials (block ``i`` at ``parts[i]``) over the pairwise tree of
    :class:`PairwiseSum`: the bits :meth:`ChunkExecutor.map_reduce` gives."""
    total = PairwiseSum(len(parts))
    for i, part in enumerate(parts):
        total.add_block(i, part)
    return total.total()


def reduce_in_order(parts):
    """Sum a list of equally structured partials (numbers, arrays or tuples of them) in order.

    The sum starts from a copy of the first partial and adds the others one by one, so the
    rounding is the same whatever thread computed which partial.

    Parameters
    ----------
    parts : list
        Partials, each a number, an ndarray, ``None`` or a (named) tuple of those.

    Returns
    -------
    total
        The element-wise sum, with the structure of one partial.
    """
    if not parts:
        raise ValueError("reduce_in_order needs at least one partial.")
    total = _copy(parts[0])
    for part in parts[1:]:
        total = _add_into(total, part)
    return total
