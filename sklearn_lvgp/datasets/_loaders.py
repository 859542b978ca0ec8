"""The historical loaders: thin wrappers of the fetchers, and the UCI split helpers."""

from pathlib import Path

import numpy as np

from .._core.validation import check_int, check_option
from ._base import get_data_home
from ._fetchers import fetch_oil_flow, fetch_uci, fetch_usps
from ._registry import UCI_HL_DATASETS

__all__ = ["UCI_HL_DATASETS", "data_home", "load_oil_flow", "load_uci_hl", "load_usps",
           "shuffle_test_mask", "uci_hl_splits"]


def data_home():
    """The dataset cache folder, which must exist: ``Path(get_data_home(create=False))``.

    Returns
    -------
    path : pathlib.Path
        ``$SKLEARN_LVGP_DATA`` when set, else ``~/sklearn_lvgp_data``. No other folder is
        searched.

    Raises
    ------
    FileNotFoundError
        If that folder does not exist (a variable naming a missing folder included).
    """
    return Path(get_data_home(create=False))


def load_oil_flow(subset="gplvm100", *, data_home=None, download_if_missing=True):
    """Three-phase oil flow data: ``fetch_oil_flow(subset=subset, return_X_y=True, ...)``.

    Parameters
    ----------
    subset : {"gplvm100", "train", "validation", "test"}, default="gplvm100"
        ``"gplvm100"`` is the 100-point subset used by the Unscented GPLVM paper (in that file's
        order); the others are the 1000-point Netlab splits.
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        Download the data when they are not cached.

    Returns
    -------
    X : ndarray of shape (n, 12)
        Measurements (raw, unscaled).
    y : ndarray of shape (n,)
        Flow regime labels in {0, 1, 2}.
    """
    return fetch_oil_flow(subset=subset, data_home=data_home,
                          download_if_missing=download_if_missing, return_X_y=True)


def load_usps(per_class=500, *, data_home=None, download_if_missing=True):
    """USPS digits of de Souza et al. (2021): ``fetch_usps(per_class=per_class, return_X_y=True)``.

    Parameters
    ----------
    per_class : int, default=500
        First images of each class (at most 1100).
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        Download the data when they are not cached.

    Returns
    -------
    X : ndarray of shape (10 * per_class, 256)
        Pixels divided by 256, rows ordered by class 1, 2, ..., 9, 0.
    y : ndarray of shape (10 * per_class,)
        Digit labels.
    """
    return fetch_usps(per_class=per_class, data_home=data_home,
                      download_if_missing=download_if_missing, return_X_y=True)


def load_uci_hl(name, *, data_home=None, download_if_missing=True):
    """A UCI regression set with the published Hernández-Lobato & Adams 90/10 splits.

    ``fetch_uci(name, collection="hl", ...)`` as a tuple.

    Parameters
    ----------
    name : {"boston", "concrete", "energy", "kin8nm", "naval", "power", "protein", \
            "wine_red", "yacht"}
        File ``uci_hl/<name>.csv.gz`` of the cache folder.
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        Download the data when they are not cached.

    Returns
    -------
    X : ndarray of shape (n, d)
        Inputs in the file's (original UCI) row order, raw units.
    y : ndarray of shape (n,)
        Target (naval: compressor decay, the first of the file's two targets; energy: heating
        load).
    test_masks : ndarray of shape (n, n_splits), dtype=bool
        Column ``s`` marks the test rows of split ``s`` (20 splits; protein 5).
    """
    d = fetch_uci(name, collection="hl", data_home=data_home,
                  download_if_missing=download_if_missing)
    return d.data, d.target, d.test_masks


def uci_hl_splits(name, first=0, n_splits=None, scheme="published", *, data_home=None,
                  download_if_missing=True):
    """Train/test splits of a ``uci_hl`` set, one after another (Fig. 2.4 protocol).

    Input columns whose standard deviation over the training rows of split 0 is exactly zero
    are dropped for every split: they carry no information and would make standardisation
    divide by zero. In naval one column is dropped; a second constant column keeps a standard
    deviation of 2e-13 from rounding in the mean and is kept (the rule of the runs recorded so
    far, kept so that their results stay comparable). The estimators treat a column that is
    constant up to rounding as constant when they standardise (scale 1), so it carries nothing.

    Parameters
    ----------
    name : str
        One of :data:`UCI_HL_DATASETS`.
    first : int, default=0
        Index of the first split.
    n_splits : int or None, default=None
        Number of splits; ``None`` means all from ``first`` on. Clipped at the number the set
        has (20; protein 5).
    scheme : {"published", "shuffle"}, default="published"
        ``"published"``: the Hernández-Lobato & Adams splits stored in the file.
        ``"shuffle"``: split ``s`` shuffles the row indices with ``RandomState(s)`` and trains
        on the first ``int(0.9 n)`` (the authors' public DSDGP code's ``datasets.py``, for the
        random 90/10 splits of Salimbeni 2020, §2.4; the file's rows are in UCI order). Its
        split 0 is the split of the 2017 reference notebook and of ``bayesian_benchmarks``.
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        Download the data when they are not cached.

    Returns
    -------
    splits : iterator of tuple
        ``(split, X_train, y_train, X_test, y_test)`` per split, raw units. Arguments and the
        data file are checked when the function is called, not at the first iteration.
    """
    first = check_int("first", first, min_value=0)
    n_splits = check_int("n_splits", n_splits, min_value=0, allow_none=True)
    check_option("scheme", scheme, ("published", "shuffle"))
    X, y, tests = load_uci_hl(name, data_home=data_home,
                              download_if_missing=download_if_missing)
    if scheme == "shuffle":
        tests = np.column_stack([shuffle_test_mask(X.shape[0], s) for s in range(tests.shape[1])])
    X = X[:, X[~tests[:, 0]].std(axis=0) > 0]
    stop = tests.shape[1] if n_splits is None else min(first + n_splits, tests.shape[1])
    return ((s, X[~tests[:, s]], y[~tests[:, s]], X[tests[:, s]], y[tests[:, s]])
            for s in range(first, stop))


def shuffle_test_mask(n, split):
    """Test rows of a 90/10 split made by shuffling with ``RandomState(split)``.

    The scheme of the reference DSDGP code (``datasets.py``) and of ``bayesian_benchmarks``:
    shuffle ``arange(n)`` with ``numpy.random.RandomState(split)`` and train on the first
    ``int(0.9 n)`` indices.

    Parameters
    ----------
    n : int
        Number of rows, in the data set's original order.
    split : int
        Seed of the shuffle.

    Returns
    -------
    test : ndarray of shape (n,), dtype=bool
        True for the test rows.
    """
    n = check_int("n", n, min_value=0)
    split = check_int("split", split, min_value=0)
    order = np.arange(n)
    np.random.RandomState(split).shuffle(order)
    test = np.ones(n, dtype=bool)
    test[order[:int(0.9 * n)]] = False
    return test
