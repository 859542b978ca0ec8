"""Thread control: map an estimator's ``n_jobs`` to numba and BLAS threads, restored in ``finally``.

The numba ``workqueue`` threading layer is not thread-safe: do not enter jitted parallel code from
several Python threads at once (lmcinnes/umap issue #665). Use process-based parallelism (joblib's
default ``loky`` backend) around estimators instead.
"""

from contextlib import contextmanager

import numba
from joblib import effective_n_jobs
from threadpoolctl import threadpool_limits

__all__ = ["threads", "resolve_n_jobs"]


def resolve_n_jobs(n_jobs):
    """Number of threads for ``n_jobs`` (sklearn semantics), capped at ``NUMBA_NUM_THREADS``."""
    n = effective_n_jobs(n_jobs)
    return max(1, min(int(n), int(numba.config.NUMBA_NUM_THREADS)))


@contextmanager
def threads(n_jobs):
    """Context manager running numba ``prange`` loops and BLAS with ``n_jobs`` threads.

    Parameters
    ----------
    n_jobs : int or None
        ``None`` means 1 (unless in a joblib ``parallel_backend`` context), ``-1`` all cores.

    Yields
    ------
    n_threads : int
        The number of threads in force.
    """
    n = resolve_n_jobs(n_jobs)
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(n)
        with threadpool_limits(limits=n):
            yield n
    finally:
        numba.set_num_threads(previous)
