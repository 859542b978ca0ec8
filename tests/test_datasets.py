"""The loaders on the pre-filled dataset folder (skipped when it is absent); the fetchers'
download, cache and checksum tests are in ``tests/datasets``."""

import numpy as np
import pytest

from sklearn_lvgp.datasets import (
    UCI_HL_DATASETS,
    data_home,
    fetch_oil_flow,
    fetch_uci,
    fetch_usps,
    load_oil_flow,
    load_uci_hl,
    load_usps,
    shuffle_test_mask,
    uci_hl_splits,
)
from sklearn_lvgp.utils.evaluation import knn_accuracy, most_relevant


@pytest.mark.parametrize(("subset", "n"), [("gplvm100", 100), ("train", 1000), ("test", 1000)])
def test_oil_flow_subsets(shared_data, subset, n):
    X, y = load_oil_flow(subset, data_home=shared_data, download_if_missing=False)
    assert X.shape == (n, 12) and y.shape == (n,)
    assert set(np.unique(y)) == {0, 1, 2}
    bunch = fetch_oil_flow(subset=subset, data_home=shared_data, download_if_missing=False)
    np.testing.assert_array_equal(bunch.data, X)
    np.testing.assert_array_equal(bunch.target, y)


def test_oil_flow_gplvm100_matches_documented_counts(shared_data):
    _, y = fetch_oil_flow(data_home=shared_data, download_if_missing=False, return_X_y=True)
    assert np.bincount(y).tolist() == [36, 31, 33]


def test_usps_order_and_scale(shared_data):
    X, y = fetch_usps(per_class=5, data_home=shared_data, download_if_missing=False,
                      return_X_y=True)
    assert X.shape == (50, 256)
    assert y[:5].tolist() == [1] * 5 and y[-5:].tolist() == [0] * 5
    assert 0.0 <= X.min() and X.max() < 1.0
    X2, y2 = load_usps(5, data_home=shared_data, download_if_missing=False)
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)


def test_missing_data_folder_gives_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("SKLEARN_LVGP_DATA", str(tmp_path / "nowhere"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="SKLEARN_LVGP_DATA"):
        data_home()
    with pytest.raises(FileNotFoundError, match="SKLEARN_LVGP_DATA"):
        load_oil_flow(download_if_missing=False)


def test_unknown_subset_rejected():
    with pytest.raises(ValueError, match="unknown oil flow subset"):
        load_oil_flow("all")


def test_knn_accuracy_and_most_relevant():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 20)
    Z = np.column_stack([y + 0.01 * rng.standard_normal(40), rng.standard_normal(40)])
    assert knn_accuracy(Z[:, :1], y).mean() == 1.0

    class Fitted:
        relevance_ = np.array([0.1, 3.0, 1.0])
        latent_mean_ = np.arange(6.0).reshape(2, 3)

    np.testing.assert_array_equal(most_relevant(Fitted()), [[1.0, 2.0], [4.0, 5.0]])


@pytest.mark.parametrize("name", UCI_HL_DATASETS)
def test_uci_hl_splits_are_ninety_ten(shared_data_with, name):
    shared_data = shared_data_with(f"uci_hl/{name}.csv.gz")
    X, y, tests = load_uci_hl(name, data_home=shared_data, download_if_missing=False)
    assert X.ndim == 2 and y.shape == (X.shape[0],) and tests.shape[0] == X.shape[0]
    assert tests.dtype == bool and tests.shape[1] == (5 if name == "protein" else 20)
    n_test = tests.sum(axis=0)
    assert np.all(np.abs(n_test - 0.1 * X.shape[0]) <= 1)
    assert np.all(np.isfinite(X)) and np.all(np.isfinite(y))
    if name == "naval":  # the second target (turbine decay) is dropped
        assert X.shape[1] == 16


def test_uci_hl_rejects_unknown_name():
    with pytest.raises(ValueError, match="unknown uci_hl dataset"):
        load_uci_hl("housing")


@pytest.mark.parametrize("name", ["naval", "yacht"])
def test_uci_hl_splits_iterates_the_published_splits(shared_data_with, name):
    shared_data = shared_data_with(f"uci_hl/{name}.csv.gz")
    home = {"data_home": shared_data, "download_if_missing": False}
    X, y, tests = load_uci_hl(name, **home)
    got = list(uci_hl_splits(name, first=18, **home))
    assert [s for s, *_ in got] == [18, 19]
    split, X_tr, y_tr, X_te, y_te = got[0]
    keep = X[~tests[:, 0]].std(axis=0) > 0
    assert X_tr.shape[1] == int(keep.sum()) == (15 if name == "naval" else X.shape[1])
    np.testing.assert_array_equal(X_te, X[tests[:, 18]][:, keep])
    np.testing.assert_array_equal(y_tr, y[~tests[:, 18]])
    assert X_tr.shape[0] + X_te.shape[0] == X.shape[0]
    assert [s for s, *_ in uci_hl_splits(name, first=3, n_splits=2, **home)] == [3, 4]
    assert list(uci_hl_splits(name, first=25, **home)) == []
    with pytest.raises(ValueError, match="first"):
        uci_hl_splits(name, first=-1, **home)  # checked at the call, not at the first iteration
    with pytest.raises(ValueError, match="n_splits"):
        uci_hl_splits(name, n_splits=-2, **home)
    with pytest.raises(TypeError, match="first must be an int"):
        uci_hl_splits(name, first=1.5, **home)
    with pytest.raises(ValueError, match="unknown uci_hl dataset"):
        uci_hl_splits("housing", **home)
    bunch = fetch_uci(name, data_home=shared_data, download_if_missing=False)
    np.testing.assert_array_equal(bunch.test_masks, tests)


def test_shuffle_test_mask_is_the_reference_code_split():
    # RandomState(0).permutation(10) is [2 8 4 9 1 6 7 3 0 5]: the first int(0.9 * 10) train
    np.testing.assert_array_equal(np.flatnonzero(shuffle_test_mask(10, 0)), [5])
    # RandomState(3).permutation(10) ends in 8
    np.testing.assert_array_equal(np.flatnonzero(shuffle_test_mask(10, 3)), [8])
    assert shuffle_test_mask(8192, 0).sum() == 820  # the notebook's kin8nm: 7372 / 820 rows
    with pytest.raises(ValueError, match="split must be >= 0"):
        shuffle_test_mask(10, -1)
    with pytest.raises(TypeError, match="n must be an int"):
        shuffle_test_mask(10.5, 0)


def test_uci_hl_splits_shuffle_scheme(shared_data_with):
    shared_data = shared_data_with("uci_hl/yacht.csv.gz")
    home = {"data_home": shared_data, "download_if_missing": False}
    X, y, _ = load_uci_hl("yacht", **home)
    got = list(uci_hl_splits("yacht", first=2, n_splits=2, scheme="shuffle", **home))
    assert [s for s, *_ in got] == [2, 3]
    split, X_tr, y_tr, X_te, y_te = got[1]
    test = shuffle_test_mask(X.shape[0], 3)
    np.testing.assert_array_equal(X_te, X[test])
    np.testing.assert_array_equal(y_tr, y[~test])
    published = next(uci_hl_splits("yacht", first=3, n_splits=1, **home))
    assert not np.array_equal(published[4], y_te)  # a different split from the published one
    with pytest.raises(ValueError, match="scheme"):
        uci_hl_splits("yacht", scheme="random", **home)
