"""The chunked objective engine: objectives as global terms plus sums over row chunks.

:mod:`._executor` runs per-chunk passes on the calling thread and a thread pool and reduces
their partials in a fixed order; :mod:`._collapsed` writes the collapsed sparse-GP bound
(GPLVM and sparse GP regression) as that map-reduce (Gal, van der Wilk & Rasmussen 2014).
"""

from ._collapsed import CollapsedKernelBound, CollapsedPsiBound
from ._executor import ChunkExecutor, plan_chunks, reduce_in_order

__all__ = ["ChunkExecutor", "CollapsedKernelBound", "CollapsedPsiBound", "plan_chunks",
           "reduce_in_order"]
