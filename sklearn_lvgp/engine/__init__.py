"""The executors: objectives as global terms plus sums over fixed row chunks.

:mod:`._executor` runs per-chunk passes on the calling thread and a thread pool and adds
their partials over a fixed pairwise tree of the chunk index (Gal, van der Wilk & Rasmussen
2014); :mod:`._dask` runs the chunk passes as Dask tasks where the row partitions live, with
the same chunks and the same tree, so the results do not depend on the partitions.
:mod:`._protocol` is the bound protocol every objective implements
(:mod:`sklearn_lvgp.bounds`), and :mod:`._rows` the in-memory row source that runs a bound's
passes on the thread executor.
"""

from ._executor import ChunkExecutor, plan_chunks, reduce_in_order
from ._protocol import ChunkContext, ChunkedBound, Evaluation, evaluate_bound
from ._rows import InMemoryRows

__all__ = ["ChunkContext", "ChunkExecutor", "ChunkedBound", "Evaluation", "InMemoryRows",
           "evaluate_bound", "plan_chunks", "reduce_in_order"]
