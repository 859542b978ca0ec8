"""Readers of ``shared/data`` files (format described in that folder's README)."""

import gzip
import os
from pathlib import Path

import numpy as np

from .._validation import check_int, check_option

__all__ = ["data_home", "load_oil_flow", "load_uci_hl", "load_usps", "UCI_HL_DATASETS"]

_ENV = "SKLEARN_LVGP_DATA"


def data_home():
    """Folder holding the offline datasets.

    Returns
    -------
    path : pathlib.Path
        The first existing folder of ``$SKLEARN_LVGP_DATA`` (when set), ``./../shared/data``
        and ``<repository>/../shared/data``: a variable naming a missing folder falls through
        to the other two.

    Raises
    ------
    FileNotFoundError
        If no candidate folder exists.
    """
    candidates = []
    if os.environ.get(_ENV):
        candidates.append(Path(os.environ[_ENV]))
    candidates.append(Path.cwd().parent / "shared" / "data")
    candidates.append(Path(__file__).resolve().parents[3] / "shared" / "data")
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError(
        "The offline datasets folder was not found (looked in: "
        + ", ".join(str(c) for c in candidates)
        + f"). Set {_ENV} to the folder holding oil_flow.csv, usps_digits.npz, ...")


def load_oil_flow(subset="gplvm100"):
    """Three-phase oil flow data (Bishop & James 1993).

    Parameters
    ----------
    subset : {"gplvm100", "train", "validation", "test"}, default="gplvm100"
        ``"gplvm100"`` is the 100-point subset used by the Unscented GPLVM paper (in that file's
        order); the others are the 1000-point Netlab splits.

    Returns
    -------
    X : ndarray of shape (n, 12)
        Measurements (raw, unscaled).
    y : ndarray of shape (n,)
        Flow regime labels in {0, 1, 2}.
    """
    if subset not in ("gplvm100", "train", "validation", "test"):
        raise ValueError(f"unknown oil flow subset {subset!r}.")
    path = data_home() / "oil_flow.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found.")
    table = np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding="utf-8")
    if subset == "gplvm100":
        rows = table[table["gplvm100"] >= 0]
        rows = rows[np.argsort(rows["gplvm100"])]
    else:
        rows = table[table["split"] == subset]
        rows = rows[np.argsort(rows["row"])]
    X = np.column_stack([rows[f"x{i}"] for i in range(1, 13)]).astype(np.float64)
    return X, rows["label"].astype(np.int64)


def load_usps(per_class=500):
    """USPS digits from ``usps_all.mat`` as used by the Unscented GPLVM paper (spec §9.2).

    Parameters
    ----------
    per_class : int, default=500
        First images of each class (at most 1100).

    Returns
    -------
    X : ndarray of shape (10 * per_class, 256)
        Pixels divided by 256, rows ordered by class 1, 2, ..., 9, 0.
    y : ndarray of shape (10 * per_class,)
        Digit labels.
    """
    path = data_home() / "usps_digits.npz"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found.")
    with np.load(path) as d:
        X, y, idx = d["X"], d["y"], d["index_in_class"]
    keep = idx < int(per_class)
    return X[keep].astype(np.float64) / 256.0, y[keep].astype(np.int64)


#: Names of the ``uci_hl`` files (Hernández-Lobato & Adams 2015 splits).
UCI_HL_DATASETS = ("boston", "concrete", "energy", "kin8nm", "naval", "power", "protein",
                   "wine_red", "yacht")


def load_uci_hl(name):
    """A UCI regression set with the published Hernández-Lobato & Adams 90/10 splits.

    Parameters
    ----------
    name : {"boston", "concrete", "energy", "kin8nm", "naval", "power", "protein", \
            "wine_red", "yacht"}
        File ``uci_hl/<name>.csv.gz`` of the data folder.

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
    if name not in UCI_HL_DATASETS:
        raise ValueError(f"unknown uci_hl dataset {name!r}; expected one of {UCI_HL_DATASETS}.")
    path = data_home() / "uci_hl" / f"{name}.csv.gz"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found.")
    with gzip.open(path, "rt") as fh:
        header = fh.readline().strip().split(",")
    A = np.loadtxt(path, delimiter=",", skiprows=1)
    n_data = sum(not c.startswith("test_") for c in header)
    data, tests = A[:, :n_data], A[:, n_data:].astype(bool)
    if name == "naval":  # drop the second target (turbine decay)
        data = data[:, :-1]
    return data[:, :-1], data[:, -1], tests


def uci_hl_splits(name, first=0, n_splits=None, scheme="published"):
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
        on the first ``int(0.9 n)`` (the reference DSDGP code's ``datasets.py`` and seed 003
        spec §7.1; the file's rows are in UCI order). Its split 0 is the split of the 2017
        reference notebook and of ``bayesian_benchmarks``.

    Returns
    -------
    splits : iterator of tuple
        ``(split, X_train, y_train, X_test, y_test)`` per split, raw units. Arguments and the
        data file are checked when the function is called, not at the first iteration.
    """
    first = check_int("first", first, min_value=0)
    n_splits = check_int("n_splits", n_splits, min_value=0, allow_none=True)
    check_option("scheme", scheme, ("published", "shuffle"))
    X, y, tests = load_uci_hl(name)
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
