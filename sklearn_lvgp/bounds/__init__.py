"""Every objective of the package: the collapsed bounds (GPLVM, sparse GP regression), the
doubly-stochastic deep-GP bound and its importance-weighted form, and the LDGD, DVMGP and GP-CDE
bounds, each with its hand-written backward pass and its chunked form for the executors."""

from ._collapsed import CollapsedKernelBound, CollapsedPsiBound

__all__ = ["CollapsedKernelBound", "CollapsedPsiBound"]
