"""Metrics for predictive distributions.

- :func:`log_predictive_density` is a scorer for model selection by density (higher is
  better): it calls the regressor's ``predict_log_density(X, y)``. Importing
  :mod:`sklearn_lvgp` (which imports this module) makes it available by name, as
  ``scoring="log_predictive_density"`` in ``GridSearchCV``, ``cross_val_score`` or
  ``cross_validate``; :func:`get_scorer` returns it (or any scikit-learn scorer) by name.
- :func:`kde_log_density` estimates the test log-likelihood of a model whose predictive density
  is only available through samples, per test point, by a Gaussian kernel density estimate of the
  samples with Silverman's rule-of-thumb bandwidth ``1.06 * std * n^(-1/5)`` (the evaluation of
  :cite:`salimbeni2020deep`, Table 5.1).

How the scorer names are registered: scikit-learn has no public scorer registry. Its scoring
strings are looked up in the private dictionary ``sklearn.metrics._scorer._SCORERS``, and the
parameter validation of ``GridSearchCV``, ``cross_val_score`` and the like checks a string
against a set of the names taken when each scikit-learn module was imported. On import this
module adds its names to that dictionary and to those sets of the scikit-learn modules already
imported (the ones imported later take the names from the dictionary), only where the private
objects have the expected types and only for names scikit-learn does not define itself. Where
that is not possible (another scikit-learn layout), nothing is changed and
``scoring=sklearn_lvgp.metrics.get_scorer("log_predictive_density")``, or the function itself,
works with any version; :data:`SCORERS_REGISTERED` says which case holds.
"""

import sys

import numpy as np
from scipy.special import logsumexp

from ._core.constants import LOG_2PI
from ._core.warn import warn

__all__ = ["SCORERS_REGISTERED", "get_scorer", "get_scorer_names", "kde_log_density",
           "log_predictive_density", "neg_log_predictive_density", "silverman_bandwidth"]

#: Samples x points evaluated per block (bounds the temporary memory to ~8 MB).
_BLOCK = 1_000_000


def log_predictive_density(estimator, X, y, sample_weight=None):
    """Score a fitted regressor by the mean log predictive density of ``y`` (greater is better).

    ``mean_n log p(y_n | x_n, data)``, in nats per row (the negative of the NLPD): the scorer
    to pass as ``scoring="log_predictive_density"`` (or ``scoring=log_predictive_density``) to
    ``GridSearchCV``, ``cross_val_score`` or ``cross_validate`` when models are to be compared
    by their predictive distributions rather than by R² (which ``score`` gives). It calls
    ``estimator.predict_log_density(X, y)``; for a ``Pipeline`` the steps before the last
    transform ``X`` first.

    Parameters
    ----------
    estimator : fitted regressor or Pipeline ending in one
        A model with ``predict_log_density(X, y)``.
    X : array-like of shape (n_samples, n_features)
        Inputs.
    y : array-like of shape (n_samples,) or (n_samples, n_targets)
        Targets.
    sample_weight : array-like of shape (n_samples,), default=None
        Row weights of the mean.

    Returns
    -------
    score : float
        Mean log predictive density per row.

    Raises
    ------
    TypeError
        If the (final) estimator has no ``predict_log_density``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn_lvgp import SparseGPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (60, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.randn(60)
    >>> search = GridSearchCV(SparseGPRegressor(random_state=0), {"n_inducing": [5, 10]},
    ...                       scoring="log_predictive_density", cv=3).fit(X, y)
    >>> sorted(search.best_params_)
    ['n_inducing']
    """
    final = estimator
    if not hasattr(final, "predict_log_density") and hasattr(estimator, "steps"):
        final = estimator.steps[-1][1]
        for _, step in estimator.steps[:-1]:
            if step is not None and step != "passthrough":
                X = step.transform(X)
    if not hasattr(final, "predict_log_density"):
        raise TypeError(f"log_predictive_density needs a regressor with "
                        f"predict_log_density(X, y); {type(final).__name__} has none.")
    log_density = np.asarray(final.predict_log_density(X, y), dtype=np.float64)
    return float(np.average(log_density, weights=sample_weight))


def neg_log_predictive_density(estimator, X, y, sample_weight=None):
    """Score by the mean log predictive density (deprecated: use log_predictive_density).

    The same value as :func:`log_predictive_density`. The name read as the negated NLPD while
    the function returns the log density itself; it warns (``FutureWarning``) and will be
    removed.

    Parameters
    ----------
    estimator : estimator
        A fitted regressor with ``predict_log_density(X, y)``, or a ``Pipeline`` ending in one.
    X : array-like of shape (n_samples, n_features)
        Test inputs.
    y : array-like of shape (n_samples,) or (n_samples, n_targets)
        Test targets.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the rows in the mean.

    Returns
    -------
    score : float
        ``log_predictive_density(estimator, X, y, sample_weight)``.
    """
    warn("neg_log_predictive_density is deprecated: use log_predictive_density (or "
         "scoring='log_predictive_density'), which returns the same value, the mean log "
         "predictive density (higher is better).", FutureWarning)
    return log_predictive_density(estimator, X, y, sample_weight=sample_weight)


_SCORERS = {"log_predictive_density": log_predictive_density}


def get_scorer(scoring):
    """Return a scorer by name: this package's, else scikit-learn's.

    Parameters
    ----------
    scoring : str, callable or None
        ``"log_predictive_density"``, any name of ``sklearn.metrics.get_scorer_names()``, a
        callable (returned as is) or ``None``.

    Returns
    -------
    scorer : callable or None
        The scorer, ``scorer(estimator, X, y)``.

    Raises
    ------
    ValueError
        If the name is neither this package's nor scikit-learn's; the message lists this
        package's names.
    """
    if isinstance(scoring, str) and scoring in _SCORERS:
        return _SCORERS[scoring]
    from sklearn.metrics import get_scorer as sklearn_get_scorer

    try:
        return sklearn_get_scorer(scoring)
    except ValueError as exc:
        raise ValueError(f"{scoring!r} is neither a sklearn_lvgp scorer ({sorted(_SCORERS)}) "
                         "nor a scikit-learn one (sklearn.metrics.get_scorer_names()).") from exc


def get_scorer_names():
    """Return the names :func:`get_scorer` accepts: scikit-learn's and this package's.

    Returns
    -------
    names : list of str
        The names, sorted.
    """
    from sklearn.metrics import get_scorer_names as sklearn_names

    return sorted(set(sklearn_names()) | set(_SCORERS))


def _scorer_name_sets(known):
    """The sets of scorer names in the parameter constraints of the imported scikit-learn
    classes and functions (a ``StrOptions`` whose options include every name of ``known``)."""
    from sklearn.utils._param_validation import StrOptions

    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("sklearn.") or module is None:
            continue
        for obj in list(vars(module).values()):
            constraints = (getattr(obj, "_parameter_constraints", None)
                           or getattr(getattr(obj, "__wrapped__", None),
                                      "_skl_parameter_constraints", None))
            if not isinstance(constraints, dict):
                continue
            for options in constraints.values():
                for c in options if isinstance(options, list) else ():
                    if (isinstance(c, StrOptions) and isinstance(c.options, set)
                            and known <= c.options):
                        found[id(c.options)] = c.options
    return list(found.values())


def _register_with_sklearn():
    """Add this package's scorer names to scikit-learn's (private) registry; ``True`` if done.

    See the module docstring: nothing is changed unless ``_SCORERS`` is a dict holding the
    scorers scikit-learn documents, and a name scikit-learn already has is left alone.
    """
    try:
        from sklearn.metrics import _scorer

        registry = _scorer._SCORERS
        known = {"r2", "accuracy", "neg_mean_squared_error"}
        if not isinstance(registry, dict) or not known <= set(registry):
            return False
        sets = _scorer_name_sets(known)
    except (ImportError, AttributeError):
        return False
    for name, scorer in _SCORERS.items():
        if name not in registry:
            registry[name] = scorer
            for names in sets:
                names.add(name)
    return all(registry.get(name) is scorer for name, scorer in _SCORERS.items())


#: Whether the names of :func:`get_scorer_names` that are this package's were added to
#: scikit-learn's scoring strings on import (see the module docstring).
SCORERS_REGISTERED = _register_with_sklearn()


def _check_samples(samples):
    S = np.asarray(samples, dtype=np.float64)
    if S.ndim != 2:
        raise ValueError(f"samples must be a 2-D array of shape (n_points, n_samples), got "
                         f"{S.ndim} dimension(s).")
    if S.shape[0] == 0 or S.shape[1] == 0:
        raise ValueError(f"samples must be non-empty, got shape {S.shape}.")
    if not np.all(np.isfinite(S)):
        raise ValueError("samples contains NaN or infinity.")
    return S


def silverman_bandwidth(samples):
    """Compute Silverman's rule-of-thumb bandwidth of each row of ``samples``.

    ``h = 1.06 * s * n^(-1/5)`` with ``s`` the standard deviation of the row (``ddof=0``, as
    ``numpy.std``) and ``n`` the number of samples per row (Silverman 1986, eq. 3.28; the rule
    of the importance-weighted DGP evaluation, :cite:`salimbeni2020deep`, Table 5.1).

    Parameters
    ----------
    samples : array-like of shape (n_points, n_samples)
        Samples of a scalar quantity, one row per point; at least 2 per row.

    Returns
    -------
    bandwidth : ndarray of shape (n_points,)
        Bandwidth of each row.

    Raises
    ------
    ValueError
        If ``samples`` is not 2-D, contains NaN/inf, has fewer than 2 samples per row, or a row
        has zero spread (the rule then gives a zero bandwidth).
    """
    S = _check_samples(samples)
    n = S.shape[1]
    if n < 2:
        raise ValueError(f"Silverman's rule needs at least 2 samples per point, got {n}.")
    h = 1.06 * S.std(axis=1) * n ** (-0.2)
    if np.any(h <= 0):
        bad = int(np.flatnonzero(h <= 0)[0])
        raise ValueError(f"samples of point {bad} are all equal: Silverman's bandwidth is 0. "
                         "Pass a positive bandwidth explicitly.")
    return h


def kde_log_density(samples, y, bandwidth="silverman"):
    """Evaluate the log density of ``y`` under a Gaussian KDE of ``samples``, per point.

    For point ``i`` with samples ``x_i1 .. x_in`` and bandwidth ``h_i``::

        log p_i(y_i) = logsumexp_s log N(y_i | x_is, h_i^2) - log n

    evaluated with a stable log-sum-exp (finite for any ``y``), vectorised over points in blocks.
    This equals ``sklearn.neighbors.KernelDensity(bandwidth=h_i).fit(x_i).score([[y_i]])``, the
    estimator of the evaluation of :cite:`salimbeni2020deep`, Table 5.1.

    Note the estimate is biased towards a smoother density: for samples from ``N(m, s^2)`` its
    expectation is the density of ``N(m, s^2 + h^2)``; Silverman's rule with 2000 samples gives
    ``h^2 = 0.054 s^2``.

    Parameters
    ----------
    samples : array-like of shape (n_points, n_samples)
        Samples of each point's predictive distribution.
    y : array-like of shape (n_points,)
        Observed values.
    bandwidth : "silverman", float or array-like of shape (n_points,), default="silverman"
        Kernel standard deviation: Silverman's rule per row (:func:`silverman_bandwidth`), one
        positive value for all rows, or one per row.

    Returns
    -------
    log_density : ndarray of shape (n_points,)
        Estimated log density of each ``y_i``.

    Raises
    ------
    ValueError
        On shapes that do not match, NaN/inf in ``samples`` or ``y``, non-positive bandwidths, or
        an unknown bandwidth rule.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.metrics import kde_log_density, silverman_bandwidth
    >>> rng = np.random.default_rng(0)
    >>> samples = rng.standard_normal((4, 2000))
    >>> log_p = kde_log_density(samples, np.zeros(4))
    >>> smoothed = -0.5 * np.log(2 * np.pi * (1 + silverman_bandwidth(samples) ** 2))
    >>> bool(np.all(np.abs(log_p - smoothed) < 0.1))
    True
    """
    S = _check_samples(samples)
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1 or y.shape[0] != S.shape[0]:
        raise ValueError(f"y must have shape ({S.shape[0]},) to match samples "
                         f"{S.shape}, got {y.shape}.")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity.")
    if isinstance(bandwidth, str):
        if bandwidth != "silverman":
            raise ValueError(f"bandwidth must be 'silverman', a positive float or an array of "
                             f"shape (n_points,), got {bandwidth!r}.")
        h = silverman_bandwidth(S)
    else:
        h = np.asarray(bandwidth, dtype=np.float64)
        if h.ndim == 0:
            h = np.full(S.shape[0], float(h))
        if h.shape != (S.shape[0],):
            raise ValueError(f"bandwidth must be a scalar or have shape ({S.shape[0]},), got "
                             f"{h.shape}.")
        if not np.all(np.isfinite(h)) or np.any(h <= 0):
            raise ValueError("bandwidth must be positive and finite.")
    n = S.shape[1]
    out = np.empty(S.shape[0])
    rows = max(1, _BLOCK // n)
    for start in range(0, S.shape[0], rows):
        sl = slice(start, start + rows)
        hb = h[sl, None]
        z = (y[sl, None] - S[sl]) / hb
        lk = -0.5 * z * z - np.log(hb) - 0.5 * LOG_2PI
        out[sl] = logsumexp(lk, axis=1) - np.log(n)
    return out
