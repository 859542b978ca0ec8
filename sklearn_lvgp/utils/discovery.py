"""Discovery of the public estimators (for the common sklearn checks)."""

import inspect

__all__ = ["all_estimators"]


def all_estimators():
    """Public estimator classes of sklearn_lvgp.

    Returns
    -------
    estimators : list of (name, class)
        Sorted by name.
    """
    from sklearn.base import BaseEstimator

    import sklearn_lvgp

    return sorted(
        (name, obj) for name, obj in vars(sklearn_lvgp).items()
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator) and not name.startswith("_")
    )
