"""The dataset cache: where it is, how files are verified, downloaded and written.

Cache folder
    ``data_home`` argument, else ``$SKLEARN_LVGP_DATA``, else ``~/sklearn_lvgp_data``; nothing
    else is searched (no path relative to the working directory or to the package). A folder
    that does not exist is an error when reading (``download_if_missing=False``) and is created
    when a download writes into it. The layout is that of the project's ``shared/data`` folder
    (``oil_flow.csv``, ``usps_digits.npz``, ``uci_hl/<name>.csv.gz``, ...), so such a folder is a
    pre-filled cache: ``data_home="/path/to/shared/data"``.

Integrity
    Every file of the registry (``_registry.py``) carries two SHA-256 digests. ``sha256`` is the
    digest of the published file's bytes (the ``SHA256SUMS`` of ``shared/data``).
    ``content_sha256`` is the digest of the data parsed from the file (:func:`content_sha256`:
    column names and arrays in a fixed order, C-order little-endian float64/int64/uint8 bytes).
    Each time a cached file is read, pre-filled or fetched, its parsed data must match
    ``content_sha256``; otherwise the read is an error that names the file and says to delete it
    and fetch it again, and the data are not used. The fetcher writes files the way the published
    ones were written (shortest float repr, gzip level 9 without name or time stamp,
    ``numpy.savez_compressed``), so with the same zlib and NumPy its files also have the
    published ``sha256``; where another zlib writes other bytes, the content digest still
    verifies them. ``sha256`` is reported in the error messages.

Download
    The original files are downloaded from the public repositories pinned in
    :data:`~sklearn_lvgp.datasets._registry.SOURCES` (``<root>/<owner>/<repo>/<commit>/<path>``,
    ``<root>`` = ``$SKLEARN_LVGP_DATA_URL`` or
    :data:`~sklearn_lvgp.datasets._registry.DATA_URL_ROOT`), converted in memory into
    the canonical arrays, checked against ``content_sha256`` and only then written, atomically
    (temporary file in the target folder, then :func:`os.replace`). On any failure nothing is
    left in the cache.
"""

import contextlib
import gzip
import hashlib
import os
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import numpy as np

from ._registry import REGISTRY, source_url

__all__ = ["clear_data_home", "get_data_home"]

#: Environment variable naming the cache folder.
ENV_DATA_HOME = "SKLEARN_LVGP_DATA"
#: Default cache folder.
DEFAULT_DATA_HOME = "~/sklearn_lvgp_data"

_TMP_SUFFIX = ".part"


def _data_home_path(data_home=None):
    """The cache folder (not checked) and where its name came from."""
    if data_home is not None:
        return Path(os.fspath(data_home)).expanduser(), "the data_home argument"
    env = os.environ.get(ENV_DATA_HOME)
    if env:
        return Path(env).expanduser(), f"${ENV_DATA_HOME}"
    return Path(DEFAULT_DATA_HOME).expanduser(), "the default location"


def get_data_home(data_home=None, *, create=True):
    """Folder of the sklearn_lvgp dataset cache.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The folder. ``None`` means ``$SKLEARN_LVGP_DATA`` when that variable is set and not
        empty, else ``~/sklearn_lvgp_data``. ``~`` is expanded. No other folder is searched.
    create : bool, default=True
        Create the folder when it does not exist. With ``False`` a missing folder is an error.

    Returns
    -------
    path : str
        The folder.

    Raises
    ------
    FileNotFoundError
        If the folder does not exist and ``create`` is false; the message says where the name
        came from (argument, environment variable or default).
    NotADirectoryError
        If the path exists and is not a folder.
    """
    path, origin = _data_home_path(data_home)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"The dataset folder {path} (from {origin}) is not a folder.")
    if not path.is_dir():
        if not create:
            raise FileNotFoundError(
                f"The dataset folder {path} (from {origin}) does not exist. Create it, point "
                f"{ENV_DATA_HOME} or data_home at a folder holding the data (such as the "
                "project's shared/data), or call a fetch_* function with "
                "download_if_missing=True.")
        path.mkdir(parents=True, exist_ok=True)
    return str(path)


def clear_data_home(data_home=None):
    """Delete the cached dataset files.

    Unlike :func:`sklearn.datasets.clear_data_home`, which removes the whole folder, only the
    files this package knows (those of the registry, and temporary files an interrupted download
    left) are deleted, then the folders that became empty: pointing ``data_home`` at a folder
    that holds other files deletes none of those.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The cache folder, as for :func:`get_data_home`. A folder that does not exist is left
        alone.
    """
    home, _ = _data_home_path(data_home)
    if not home.is_dir():
        return
    folders = {home}
    for rel in REGISTRY:
        path = home / rel
        folders.add(path.parent)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    for folder in folders:
        if folder.is_dir():
            for tmp in folder.glob(f".*{_TMP_SUFFIX}"):
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):  # not empty, or gone
            folder.rmdir()


# ---------------------------------------------------------------------------------------------
# digests


def content_sha256(items):
    """SHA-256 of parsed data in a byte serialisation that does not depend on the file format.

    Parameters
    ----------
    items : sequence of (str, object)
        In a fixed order. A value named ``"columns"`` is a sequence of column names: it adds the
        line ``columns <n_bytes>\\n`` and the names joined by commas (UTF-8). Any other value is
        an array of dtype float64, int64 or uint8: it adds the ASCII line
        ``<name> <dtype> <d0>x<d1>...\\n`` (dtype ``<f8``, ``<i8`` or ``|u1``) and the array's
        C-order little-endian bytes.

    Returns
    -------
    digest : str
        Hexadecimal SHA-256.
    """
    h = hashlib.sha256()
    for name, value in items:
        if name == "columns":
            data = ",".join(value).encode("utf-8")
            h.update(f"columns {len(data)}\n".encode("ascii"))
            h.update(data)
            continue
        a = np.asarray(value)
        if a.dtype.kind == "f":
            dtype = np.dtype("<f8")
        elif a.dtype.kind in "iu" and a.dtype != np.uint8:
            dtype = np.dtype("<i8")
        elif a.dtype == np.uint8:
            dtype = np.dtype("u1")
        else:
            raise TypeError(f"cannot digest {name!r} of dtype {a.dtype}.")
        a = np.ascontiguousarray(a, dtype=dtype)
        shape = "x".join(str(n) for n in a.shape)
        h.update(f"{name} {dtype.str} {shape}\n".encode("ascii"))
        h.update(a.tobytes(order="C"))
    return h.hexdigest()


def file_sha256(path):
    """SHA-256 of a file's bytes (hexadecimal)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


#: What a damaged cached file can raise while being parsed.
_READ_ERRORS = (OSError, ValueError, EOFError, KeyError, IndexError, zipfile.BadZipFile,
                gzip.BadGzipFile, UnicodeDecodeError)


def read_verified(entry, home, reader):
    """Parse the cached file of ``entry`` with ``reader`` and check its content digest.

    Returns
    -------
    parsed : dict
        What ``reader`` returned (with an ``"items"`` key, the digest's input).

    Raises
    ------
    OSError
        If the file cannot be parsed or its content digest is not the registered one.
    """
    path = Path(home) / entry.path
    try:
        parsed = reader(path, entry)
        digest = content_sha256(parsed["items"])
    except _READ_ERRORS as exc:
        raise OSError(_corrupt_message(entry, path, f"cannot be read ({exc})")) from exc
    if digest != entry.content_sha256:
        raise OSError(_corrupt_message(
            entry, path, f"has content SHA-256 {digest}, expected {entry.content_sha256}"))
    return parsed


def _corrupt_message(entry, path, what):
    try:
        actual = file_sha256(path)
    except OSError:
        actual = "unknown"
    return (f"The cached dataset file {path} {what}. Its SHA-256 is {actual}; the published "
            f"file's is {entry.sha256} (a file written by the fetcher may differ in its bytes, "
            "not in its data). The file is corrupt or was changed and is not used: delete it and "
            f"fetch it again (or restore {entry.path} from a verified copy).")


# ---------------------------------------------------------------------------------------------
# download and write


def download(url, n_retries=3, delay=1.0, timeout=60.0):
    """Bytes at ``url``; retries connection errors and HTTP 5xx ``n_retries`` times."""
    for attempt in range(n_retries + 1):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            if exc.code < 500 or attempt == n_retries:
                raise OSError(f"Could not download {url}: HTTP {exc.code} {exc.reason}.") from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            if attempt == n_retries:
                raise OSError(f"Could not download {url}: {exc}.") from exc
        time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def atomic_write(path, write):
    """Write a file through ``write(fh)`` into a temporary file beside it, then rename it.

    The temporary file is removed whatever goes wrong, so the target either is complete or
    is not there.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=_TMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def fetch_file(entry, data_home, download_if_missing, reader, convert, write, n_retries=3,
               delay=1.0):
    """The verified content of one registry file, downloading and caching it if needed.

    Parameters
    ----------
    entry : DataFile
        Registry entry.
    data_home : str, path-like or None
        Cache folder (see :func:`get_data_home`).
    download_if_missing : bool
        Download when the file is not cached; otherwise a missing file (or folder) is a
        :class:`FileNotFoundError`.
    reader : callable
        ``reader(path, entry) -> dict`` with an ``"items"`` key (the digest's input).
    convert : callable
        ``convert(entry, get) -> dict`` in the reader's format, from the original files;
        ``get(source, path)`` downloads one.
    write : callable
        ``write(fh, parsed, entry)`` writes the canonical file.
    """
    home, origin = _data_home_path(data_home)
    path = home / entry.path
    if path.is_file():
        return read_verified(entry, home, reader)
    if path.exists():
        raise OSError(f"{path} exists and is not a file.")
    if not download_if_missing:
        get_data_home(data_home, create=False)  # a missing folder: say so, and where it came from
        raise FileNotFoundError(
            f"{entry.path} is not in the dataset folder {home} (from {origin}) and "
            "download_if_missing is False.")
    urls = []

    def get(source, rel):
        url = source_url(source, rel)
        urls.append(url)
        return download(url, n_retries=n_retries, delay=delay)

    try:
        parsed = convert(entry, get)
        digest = content_sha256(parsed["items"])
    except (ValueError, KeyError, IndexError, EOFError, zipfile.BadZipFile,
            gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise OSError(f"The files downloaded for {entry.path} from {_url_list(urls)} could not "
                      f"be converted: {exc}") from exc
    if digest != entry.content_sha256:
        raise OSError(
            f"Checksum error for {entry.path}: the data downloaded from {_url_list(urls)} have "
            f"content SHA-256 {digest}, expected {entry.content_sha256}. Nothing was written "
            f"to {home}.")
    atomic_write(path, lambda fh: write(fh, parsed, entry))
    return parsed


def _url_list(urls):
    if len(urls) <= 3:
        return ", ".join(urls)
    return f"{urls[0]}, ... ({len(urls)} files)"
