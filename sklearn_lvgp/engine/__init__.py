"""The executors: objectives as global terms plus sums over fixed row chunks.

:mod:`._executor` runs per-chunk passes on the calling thread and a thread pool and reduces
their partials in a fixed order (Gal, van der Wilk & Rasmussen 2014); :mod:`._dask` runs the
chunk passes as Dask tasks where the row partitions live. The bounds they run are in
:mod:`sklearn_lvgp.bounds`.
"""

from ._executor import ChunkExecutor, plan_chunks, reduce_in_order

__all__ = ["ChunkExecutor", "plan_chunks", "reduce_in_order"]
