"""The chunked objective engine: objectives as global terms plus sums over row chunks.

:mod:`._executor` runs per-chunk passes on the calling thread and a thread pool and reduces
their partials in a fixed order; :mod:`._collapsed` writes the collapsed sparse-GP bound
(GPLVM and sparse GP regression) as that map-reduce (Gal, van der Wilk & Rasmussen 2014),
:mod:`._alternating` its local and global steps; :mod:`._dsvi`, :mod:`._ldgd` and
:mod:`._dvmgp` do the same for the deep GP, LDGD and DVMGP bounds (GPCDE's is
``sklearn_lvgp._cde._bound.CDEModel.elbo``), and :mod:`._dask` runs the chunk passes as Dask
tasks where the row partitions live.
"""

from ._collapsed import CollapsedKernelBound, CollapsedPsiBound
from ._executor import ChunkExecutor, plan_chunks, reduce_in_order

__all__ = ["ChunkExecutor", "CollapsedKernelBound", "CollapsedPsiBound", "plan_chunks",
           "reduce_in_order"]
