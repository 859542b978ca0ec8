"""Numerical constants shared by the package's formulas (one home each)."""

import math

__all__ = ["LOG_2PI"]

#: ``log(2π)``, the normaliser of every Gaussian log density.
LOG_2PI = math.log(2.0 * math.pi)
