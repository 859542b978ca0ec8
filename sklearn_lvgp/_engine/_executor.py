"""Map a function over fixed row chunks on a pool of threads; reduce the partials in chunk order.

This is the one place in the package that runs data chunks in parallel. An objective written as
*global terms + a sum over chunks of local terms* (Gal, van der Wilk & Rasmussen 2014,
:cite:`gal2014distributed`) hands its per-chunk forward or backward pass to
:meth:`ChunkExecutor.map` and adds the returned partial statistics with :func:`reduce_in_order`.

Three rules keep the results exact and the threads useful:

* the chunk partition (:func:`plan_chunks`) depends on the problem size only, never on the
  thread count, and partials are added in chunk order, so every ``n_jobs`` gives the same bits;
* each chunk runs serially inside (the jitted twins of :mod:`sklearn_lvgp._jit` take their
  serial branch in the pool's threads and in the inline path), so there is one parallel region
  per pass instead of thousands of small ones;
* a pass of a single chunk runs inline in the calling thread: work too small to share is not
  shared, so ``n_jobs=2`` is never slower than ``n_jobs=1`` by more than the check.

The jitted loops release the GIL (``nogil=True``), and BLAS is held at one thread per caller
(:func:`sklearn_lvgp._parallel.threads`), so the pool's threads run the chunks' numeric work
concurrently; only the Python glue between the jitted calls is serialised.
"""

import atexit
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._parallel import current_threads, mark_serial_thread, serial_section

__all__ = ["ChunkExecutor", "plan_chunks", "reduce_in_order", "MIN_CHUNK_WORK"]

#: Estimated inner-loop work per chunk below which rows are not split further: at this size
#: the Python glue of one chunk (tens of microseconds per call) is a few percent of its work.
MIN_CHUNK_WORK = 2 ** 22
#: Chunks that a large problem is split into at least (so 16 threads are kept busy).
TARGET_CHUNKS = 64

_pools = {}
_pools_lock = threading.Lock()


def plan_chunks(n_rows, work_per_row, max_rows=None, chunk_rows=None):
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

    Returns
    -------
    chunks : list of (int, int)
        Half-open row ranges covering ``0 .. n_rows`` in order. The partition depends only on
        the arguments, never on the number of threads.
    """
    n_rows = int(n_rows)
    if n_rows <= 0:
        return []
    if chunk_rows is None:
        least = math.ceil(MIN_CHUNK_WORK / max(1.0, float(work_per_row)))
        rows = max(least, math.ceil(n_rows / TARGET_CHUNKS))
        if max_rows is not None:
            rows = min(rows, max(1, int(max_rows)))
    else:
        rows = int(chunk_rows)
        if rows < 1:
            raise ValueError(f"chunk_rows must be a positive integer, got {chunk_rows!r}.")
    rows = min(rows, n_rows)
    return [(a, min(n_rows, a + rows)) for a in range(0, n_rows, rows)]




def _pool(n_threads):
    with _pools_lock:
        pool = _pools.get(n_threads)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="lvgp-chunk",
                                      initializer=mark_serial_thread)
            _pools[n_threads] = pool
        return pool


@atexit.register
def _shutdown_pools():
    with _pools_lock:
        for pool in _pools.values():
            pool.shutdown(wait=False, cancel_futures=True)
        _pools.clear()


class ChunkExecutor:
    """Runs per-chunk functions serially or on a thread pool, returning results in chunk order.

    Parameters
    ----------
    n_threads : int, default=None
        Threads to use; ``None`` takes the count of the enclosing
        :func:`sklearn_lvgp._parallel.threads` context (1 outside one).
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
        if self.n_threads == 1 or len(chunks) <= 1:
            with serial_section():
                return [fn(i, a, b) for i, (a, b) in enumerate(chunks)]
        pool = _pool(self.n_threads)
        futures = [pool.submit(fn, i, a, b) for i, (a, b) in enumerate(chunks)]
        results, error = [], None
        for future in futures:
            try:
                results.append(future.result())
            except BaseException as exc:  # noqa: BLE001 - re-raised once all chunks are done
                error = error or exc
                results.append(None)
        if error is not None:
            raise error
        return results


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
    first = parts[0]
    if isinstance(first, tuple):
        fields = [reduce_in_order([p[k] for p in parts]) for k in range(len(first))]
        return type(first)(*fields) if hasattr(first, "_fields") else tuple(fields)
    if first is None:
        return None
    if isinstance(first, np.ndarray):
        total = first.copy()
        for part in parts[1:]:
            total += part
        return total
    total = first
    for part in parts[1:]:
        total = total + part
    return total
