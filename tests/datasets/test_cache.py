"""The cache folder rules, the registry's digests and the integrity of cached files."""

import gzip
import hashlib
import shutil
import struct

import numpy as np
import pytest

from sklearn_lvgp.datasets import (
    UCI_HL_DATASETS,
    UCI_RAW_DATASETS,
    UCI_WILSON_DATASETS,
    clear_data_home,
    data_home,
    fetch_oil_flow,
    fetch_uci,
    fetch_usps,
    get_data_home,
)
from sklearn_lvgp.datasets._base import atomic_write, content_sha256, file_sha256
from sklearn_lvgp.datasets._registry import REGISTRY


def test_default_folder_and_environment_variable(isolated_env, tmp_path, monkeypatch):
    default = isolated_env / "sklearn_lvgp_data"
    with pytest.raises(FileNotFoundError, match="from the default location"):
        get_data_home(create=False)
    with pytest.raises(FileNotFoundError, match="sklearn_lvgp_data"):
        data_home()
    assert get_data_home() == str(default) and default.is_dir()  # created, as sklearn does
    assert data_home() == default
    assert get_data_home("~/elsewhere") == str(isolated_env / "elsewhere")  # ~ expanded
    target = tmp_path / "cache"
    monkeypatch.setenv("SKLEARN_LVGP_DATA", str(target))
    with pytest.raises(FileNotFoundError, match=r"from \$SKLEARN_LVGP_DATA"):
        data_home()  # a variable naming a missing folder is an error, not a fall-through
    with pytest.raises(FileNotFoundError, match="from the data_home argument"):
        get_data_home(tmp_path / "other", create=False)
    assert get_data_home() == str(target) and target.is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        get_data_home(tmp_path / "file")


def test_no_folder_relative_to_the_working_directory(shared_data, tmp_path, monkeypatch):
    """``../shared/data`` beside the working directory is not searched any more."""
    (tmp_path / "shared" / "data").mkdir(parents=True)
    shutil.copy(shared_data / "oil_flow.csv", tmp_path / "shared" / "data")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    with pytest.raises(FileNotFoundError, match="sklearn_lvgp_data"):
        fetch_oil_flow(download_if_missing=False)
    assert fetch_oil_flow(data_home="../shared/data", download_if_missing=False).data.shape == (
        100, 12)


def test_content_sha256_serialisation():
    """The documented byte serialisation, written out by hand."""
    expected = hashlib.sha256(
        b"columns 3\na,b"
        + b"x <f8 2\n" + struct.pack("<2d", 1.5, -0.0)
        + b"k <i8 1x2\n" + struct.pack("<2q", 3, -1)
        + b"p |u1 0\n").hexdigest()
    items = [("columns", ["a", "b"]), ("x", np.array([1.5, -0.0], dtype=">f8")),
             ("k", np.array([[3, -1]], dtype=np.int32)), ("p", np.zeros(0, dtype=np.uint8))]
    assert content_sha256(items) == expected
    with pytest.raises(TypeError, match="cannot digest"):
        content_sha256([("s", np.array(["a"]))])


def test_registry_matches_the_published_sums(shared_data):
    sums = dict(line.split("  ")[::-1]
                for line in (shared_data / "SHA256SUMS").read_text().splitlines())
    assert set(REGISTRY) == set(sums) - {"mnist_test.npz"}
    for path, entry in REGISTRY.items():
        assert entry.path == path and entry.sha256 == sums[path]
    assert {f"uci_hl/{n}.csv.gz" for n in UCI_HL_DATASETS} | {
        f"uci_wilson/{n}.csv.gz" for n in UCI_WILSON_DATASETS} | {
        f"uci_raw/{n}.csv.gz" for n in UCI_RAW_DATASETS} == set(REGISTRY) - {
        "oil_flow.csv", "usps_digits.npz"}
    # the pre-filled files are the published ones (small ones here; all via the fetchers below)
    for path in ("oil_flow.csv", "uci_hl/yacht.csv.gz", "uci_wilson/challenger.csv.gz"):
        assert file_sha256(shared_data / path) == REGISTRY[path].sha256


@pytest.mark.parametrize("collection", ["hl", "wilson", "raw"])
def test_every_prefilled_uci_file_verifies(shared_data, collection):
    names = {"hl": UCI_HL_DATASETS, "wilson": UCI_WILSON_DATASETS, "raw": UCI_RAW_DATASETS}
    for name in names[collection]:
        d = fetch_uci(name, collection=collection, data_home=shared_data,
                      download_if_missing=False)
        entry = REGISTRY[f"uci_{collection}/{name}.csv.gz"]
        assert d.data.shape[0] == entry.n_rows == d.target.shape[0]
        if collection != "raw":
            assert d.test_masks.shape == (entry.n_rows, entry.n_splits)


def _prefilled(shared_data, tmp_path, *paths):
    cache = tmp_path / "cache"
    for path in paths:
        (cache / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(shared_data / path, cache / path)
    return cache


def test_prefilled_file_with_a_wrong_hash_is_an_error(shared_data, tmp_path):
    cache = _prefilled(shared_data, tmp_path, "oil_flow.csv", "uci_hl/yacht.csv.gz",
                       "usps_digits.npz")
    assert fetch_oil_flow(data_home=cache, download_if_missing=False).data.shape == (100, 12)
    path = cache / "oil_flow.csv"
    path.write_text(path.read_text().replace("0.3315,", "0.3316,", 1))  # one value changed
    with pytest.raises(OSError, match=rf"{path}.*content SHA-256 .*expected .*delete it"):
        fetch_oil_flow(data_home=cache, download_if_missing=False)
    # a truncated gzip file, a damaged npz: errors naming the file, never data
    yacht = cache / "uci_hl" / "yacht.csv.gz"
    yacht.write_bytes(yacht.read_bytes()[:-100])
    with pytest.raises(OSError, match=rf"{yacht} cannot be read"):
        fetch_uci("yacht", data_home=cache, download_if_missing=False)
    usps = cache / "usps_digits.npz"
    usps.write_bytes(b"PK" + usps.read_bytes()[2:1000])
    with pytest.raises(OSError, match=rf"{usps} cannot be read"):
        fetch_usps(data_home=cache, download_if_missing=False)


def test_a_changed_header_is_a_changed_file(shared_data, tmp_path):
    cache = _prefilled(shared_data, tmp_path, "uci_hl/yacht.csv.gz")
    path = cache / "uci_hl" / "yacht.csv.gz"
    text = gzip.decompress(path.read_bytes()).replace(b"froude_number", b"froude", 1)
    path.write_bytes(gzip.compress(text))
    with pytest.raises(OSError, match="content SHA-256"):
        fetch_uci("yacht", data_home=cache, download_if_missing=False)


def test_a_faithful_reencoding_is_accepted(shared_data, tmp_path):
    """Same data in other bytes (another gzip level): the content digest verifies it."""
    cache = _prefilled(shared_data, tmp_path, "uci_hl/yacht.csv.gz")
    path = cache / "uci_hl" / "yacht.csv.gz"
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes()), compresslevel=1))
    assert file_sha256(path) != REGISTRY["uci_hl/yacht.csv.gz"].sha256
    assert fetch_uci("yacht", data_home=cache, download_if_missing=False).data.shape == (308, 6)


def test_clear_data_home_removes_only_cached_files(shared_data, tmp_path):
    cache = _prefilled(shared_data, tmp_path, "oil_flow.csv", "uci_hl/yacht.csv.gz")
    (cache / "uci_hl" / ".yacht.csv.gz.abc.part").write_text("interrupted")
    (cache / "notes.txt").write_text("mine")
    clear_data_home(cache)
    assert sorted(p.name for p in cache.rglob("*")) == ["notes.txt"]
    (cache / "notes.txt").unlink()
    shutil.copy(shared_data / "oil_flow.csv", cache)
    clear_data_home(str(cache))
    assert not cache.exists()
    clear_data_home(cache)  # a missing folder: nothing to do


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "sub" / "file.bin"

    def broken(fh):
        fh.write(b"half")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        atomic_write(target, broken)
    assert list((tmp_path / "sub").iterdir()) == []
    atomic_write(target, lambda fh: fh.write(b"whole"))
    assert target.read_bytes() == b"whole"
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["file.bin"]
