"""Hand-written parameter checks (public sklearn API only) and input checks shared by estimators."""

import numbers
import warnings

import numpy as np

__all__ = [
    "data_scale_ok","check_int", "check_float", "check_option", "check_bool", "check_n_inducing",
           "check_natgrad_gamma", "check_finite_array", "check_early_stopping",
           "check_observed_columns"]


def check_int(name, value, min_value=None, allow_none=False):
    """Validate an integer parameter; return it as ``int`` (or ``None``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}.")
    if min_value is not None and value < min_value:
        raise ValueError(f"{name} must be >= {min_value}, got {value}.")
    return int(value)


def check_float(name, value, min_value=None, exclusive_min=False, allow_none=False):
    """Validate a real parameter; return it as ``float`` (or ``None``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}.")
    if min_value is not None:
        if exclusive_min and value <= min_value:
            raise ValueError(f"{name} must be > {min_value}, got {value}.")
        if not exclusive_min and value < min_value:
            raise ValueError(f"{name} must be >= {min_value}, got {value}.")
    return value


def check_option(name, value, options):
    """Validate a string option."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {tuple(options)}, got {value!r}.")
    return value


def check_bool(name, value):
    """Validate a boolean flag."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r}.")
    return bool(value)


def check_natgrad_gamma(gamma):
    """Validate a natural-gradient step: None, a float in (0, 1], or ``(gamma0, gamma1, K)``.

    The tuple is the log-linear warm-up of :func:`sklearn_lvgp.optim._adam.gamma_at`: both steps
    in (0, 1] (a step above 1 can make the q(u) precision indefinite) and ``K >= 1`` steps.
    """
    if gamma is None:
        return None
    if np.ndim(gamma) == 0:
        value = check_float("natgrad_gamma", gamma, 0.0, exclusive_min=True)
        if value > 1:
            raise ValueError(f"natgrad_gamma must be in (0, 1], got {value}.")
        return value
    if np.ndim(gamma) != 1 or len(gamma) != 3:
        raise ValueError(f"natgrad_gamma must be a float, (gamma0, gamma1, K) or None, "
                         f"got {gamma!r}.")
    steps = []
    for name, value in zip(("gamma0", "gamma1"), gamma[:2], strict=True):
        value = check_float(f"natgrad_gamma's {name}", value, 0.0, exclusive_min=True)
        if value > 1:
            raise ValueError(f"natgrad_gamma's {name} must be in (0, 1], got {value}.")
        steps.append(value)
    return steps[0], steps[1], check_int("natgrad_gamma's K", gamma[2], min_value=1)


def check_early_stopping(early_stopping, validation_fraction, n_iter_no_change, n_samples):
    """The early-stopping parameters (``early_stopping``, ``validation_fraction``,
    ``n_iter_no_change``) and whether ``n_samples`` rows leave something to hold out."""
    check_bool("early_stopping", early_stopping)
    check_float("validation_fraction", validation_fraction, 0.0, exclusive_min=True)
    if validation_fraction >= 1:
        raise ValueError(f"validation_fraction must be < 1, got {validation_fraction}.")
    check_int("n_iter_no_change", n_iter_no_change, min_value=1)
    if early_stopping and n_samples < 4:
        raise ValueError(f"early_stopping needs at least 4 samples, got n_samples = "
                         f"{n_samples}.")


def check_min_samples(n_samples, estimator_name, minimum=2):
    """Refuse fewer than ``minimum`` rows, naming the estimator."""
    if n_samples < minimum:
        raise ValueError(f"{estimator_name} needs at least {minimum} samples, got n_samples = "
                         f"{n_samples}.")


def check_n_inducing(n_inducing, n_samples, estimator_name):
    """``n_inducing`` must be a positive int no larger than the number of samples."""
    M = check_int("n_inducing", n_inducing, min_value=1)
    if n_samples < M:
        raise ValueError(
            f"{estimator_name} needs at least n_inducing={M} samples to place its inducing "
            f"points, got n_samples = {n_samples}. Lower n_inducing or pass more data.")
    return M


def check_latent_points(name, A, n_components, n_rows=None):
    """A float64 copy of the latent points ``A`` after checking that they are finite and of
    shape ``(n, n_components)`` (``(n_rows, n_components)`` when ``n_rows`` is given)."""
    A = check_finite_array(name, A)
    if A.ndim != 2 or A.shape[1] != n_components or (n_rows is not None and A.shape[0] != n_rows):
        expected = f"({'n' if n_rows is None else n_rows}, {n_components})"
        raise ValueError(f"{name} must be latent points of shape {expected}, got {A.shape}.")
    return A


def check_finite_array(name, A, shape=None):
    """A float64 copy of ``A`` after checking finiteness and (optionally) shape."""
    A = np.array(A, dtype=np.float64, copy=True)
    if shape is not None and A.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {A.shape}.")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinity.")
    return A


def check_numeric_targets(y):
    """Regression targets as numbers: booleans are 0/1, numeric strings are parsed, other
    strings are refused.

    ``validate_data(..., y_numeric=True)`` converts object arrays only; a numpy string array
    (``dtype('<U…')``) passes through and would fail deep inside the first reduction with a
    numpy type error. Strings that parse as numbers are accepted as numbers, as scikit-learn's
    linear regressors do.
    """
    if y.dtype.kind == "b":  # 0/1 values (numpy refuses to subtract booleans)
        return y.astype(np.float64)
    if y.dtype.kind not in "USV":
        # object arrays reach here already converted to float, after scikit-learn's finiteness
        # check (which skips object arrays): check again
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity.")
        return y
    try:
        y = y.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"y must be numeric for a regressor; got strings that are not numbers (dtype "
            f"{y.dtype}, first value {str(y.flat[0])!r}). Encode the targets as numbers."
        ) from None
    return check_finite_array("y", y)


#: Largest magnitude (and, inverted, smallest spread) the bounds' arithmetic has room for: their
#: sums of squares and products of squared terms overflow float64 beyond it.
_SQUARE_LIMIT = 1e100


def _data_scale(A, spread=True):
    """``(peak, narrowest column range)`` of ``A`` (NaN entries skipped; ``inf`` without a
    spread)."""
    if np.isnan(A).any():  # missing values: the observed entries (an empty column: none)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            peak = float(np.nan_to_num(np.nanmax(np.abs(A))))
            ranges = np.nan_to_num(np.nanmax(A, axis=0) - np.nanmin(A, axis=0)) if spread \
                else np.zeros(0)
    else:
        peak = float(np.max(np.abs(A)))
        ranges = np.ptp(A, axis=0) if spread else np.zeros(0)
    ranges = ranges[ranges > 0]
    return peak, float(ranges.min()) if ranges.size else np.inf


def data_scale_ok(A, spread=True):
    """Whether :func:`check_data_scale` accepts ``A``."""
    if A.size == 0:
        return True
    peak, narrowest = _data_scale(A, spread)
    return not (peak > _SQUARE_LIMIT or narrowest < 1.0 / _SQUARE_LIMIT)


def check_data_scale(name, A, spread=True):
    """Refuse data whose kernel arithmetic would overflow or underflow in float64.

    Squares of values above ~1e154 are infinite, spreads below ~1e-154 square to zero (every
    row then looks the same to a stationary kernel), and the bounds multiply squared terms, so
    the limit is 1e100 either way. Models that standardise their data
    internally do not need this; the others get a clear error instead of a failed optimisation.
    """
    if data_scale_ok(A, spread):
        return
    peak, narrowest = _data_scale(A, spread)
    detail = f"; narrowest column range {narrowest:.3g}" if np.isfinite(narrowest) else ""
    raise ValueError(
        f"{name} has values of magnitude {peak:.3g}{detail}; their squares overflow or "
        "underflow float64. Rescale it (e.g. with sklearn.preprocessing.StandardScaler).")


def check_class_labels(y, estimator_name):
    """Classes and class indices of classification targets: two classes or more, two rows each.

    Returns
    -------
    classes : ndarray
        Sorted distinct labels.
    y_idx : ndarray of int
        Index of each row's label in ``classes``.
    """
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import column_or_1d

    y = column_or_1d(y)
    check_classification_targets(y)
    classes, y_idx, counts = np.unique(y, return_inverse=True, return_counts=True)
    if classes.size < 2:
        raise ValueError(f"{estimator_name} needs at least 2 classes; y has 1 class "
                         f"({classes[0]!r}).")
    if np.any(counts < 2):
        raise ValueError(f"every class needs at least 2 samples; class(es) "
                         f"{list(classes[counts < 2])!r} have 1 sample.")
    return classes, y_idx


def check_layer_widths(name, widths, allow_empty=False):
    """Hidden-layer widths of a network: a sequence of positive ints (non-empty by default)."""
    if (isinstance(widths, (str, bytes)) or np.ndim(widths) != 1
            or (len(widths) == 0 and not allow_empty)
            or not all(isinstance(h, numbers.Integral) and not isinstance(h, bool) and h >= 1
                       for h in widths)):
        raise ValueError(f"{name} must be a non-empty sequence of positive ints (layer widths), "
                         f"got {widths!r}.")
    return tuple(int(h) for h in widths)


def check_observed_columns(X, estimator_name):
    """Refuse an in-memory ``X`` with a column whose every entry is missing (NaN).

    Returns whether ``X`` has missing entries (``False`` for a dask array, checked elsewhere).
    """
    if not isinstance(X, np.ndarray):
        return False
    missing = np.isnan(X)
    if not missing.any():
        return False
    empty = np.flatnonzero(missing.all(axis=0))
    if empty.size:
        raise ValueError(f"{estimator_name}: column(s) {empty.tolist()} of X have no observed "
                         "value (every entry is NaN); drop them, or impute them first.")
    return True

