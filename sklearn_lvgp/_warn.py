"""Warnings attributed to the caller's code (the first stack frame outside this package)."""

import os
import sys
import warnings

__all__ = ["warn"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def warn(message, category):
    """``warnings.warn`` with the stack level of the first frame outside ``sklearn_lvgp``."""
    frame = sys._getframe(1)
    level = 2  # 1 would be this function
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            _PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
