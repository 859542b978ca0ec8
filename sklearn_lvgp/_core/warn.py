"""Warnings attributed to the caller's code (the first stack frame outside this package,
scikit-learn and joblib, whose wrappers such as ``set_output`` and ``GridSearchCV``'s parallel
loop sit between the user and the estimator)."""

import os
import sys
import warnings

__all__ = ["warn", "InconsistentVersionWarning"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _skipped_dirs():
    """This package's folder, and scikit-learn's and joblib's once they are imported (they are
    not imported here: the pre-compilation helper loads ``_core`` without them); joblib runs
    the fits of scikit-learn's model selection (``GridSearchCV``, ``cross_validate``)."""
    dirs = [_PACKAGE_DIR]
    for name in ("sklearn", "joblib"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None) is not None:
            dirs.append(os.path.dirname(os.path.abspath(module.__file__)) + os.sep)
    return tuple(dirs)


def warn(message, category):
    """``warnings.warn`` with the stack level of the first frame outside ``sklearn_lvgp``,
    ``sklearn`` and ``joblib``: the user's line, also through scikit-learn's ``set_output``
    wrapper and its model selection."""
    skipped = _skipped_dirs()
    frame = sys._getframe(1)
    level = 2  # 1 would be this function
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(skipped):
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

