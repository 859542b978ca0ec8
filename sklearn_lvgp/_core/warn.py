"""Warnings attributed to the caller's code (the first stack frame outside this package)."""

import os
import sys
import warnings

__all__ = ["warn", "InconsistentVersionWarning"]

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


class InconsistentVersionWarning(UserWarning):
    """A fitted estimator was unpickled with another sklearn_lvgp version than saved it.

    As scikit-learn's warning of the same name: the model may load but predict differently,
    or not at all. Refit, or use the version in ``original_version``.
    """

    def __init__(self, estimator_name, current_version, original_version):
        self.estimator_name = estimator_name
        self.current_version = current_version
        self.original_version = original_version
        super().__init__(
            f"Trying to unpickle estimator {estimator_name} from sklearn_lvgp version "
            f"{original_version} when using version {current_version}. This might lead to "
            "breaking code or invalid results. Use at your own risk.")

