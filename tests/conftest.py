"""Shared fixtures: seeded generators, tiny problems and the pre-filled dataset folder."""

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

#: The pre-filled dataset folder: ``$SKLEARN_LVGP_DATA`` as the session started, else the
#: project's ``shared/data`` beside the repository (CI).
SHARED_DATA = Path(os.environ.get("SKLEARN_LVGP_DATA")
                   or Path(__file__).resolve().parents[2] / "shared" / "data")


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per CPU this process may run on (``os.sched_getaffinity``), not
    psutil's count of the host's physical cores, which ignores a container's CPU set; each
    worker holds its own compiled kernels, so a worker per host core could exhaust memory."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no sched_getaffinity (macOS, Windows)
        return max(1, os.cpu_count() or 1)


@pytest.fixture
def rng():
    """A fresh, seeded generator per test (no global seeding)."""
    return np.random.default_rng(20211)


@pytest.fixture
def tiny_gplvm_data():
    """N=15, D=4 rows from a smooth 2-D latent curve plus noise."""
    r = np.random.default_rng(7)
    t = np.linspace(-1.5, 1.5, 15)
    latent = np.column_stack([t, np.sin(2 * t)])
    W = r.standard_normal((2, 4))
    return np.tanh(latent @ W) + 0.05 * r.standard_normal((15, 4))


#: In CI (``CI=true``) the dataset folder is part of the set-up: a data-backed test whose folder
#: or file is missing fails there. Elsewhere it is skipped.
IN_CI = os.environ.get("CI", "").lower() == "true"


def _missing(reason):
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: the dataset folder must be complete)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def shared_data():
    """The pre-filled dataset folder, or skip the test when it is absent (fail it in CI).

    :data:`SHARED_DATA`. Tests pass it to the fetchers as ``data_home=`` with
    ``download_if_missing=False``: they never download.
    """
    if not SHARED_DATA.is_dir():
        _missing(f"the dataset folder {SHARED_DATA} is absent")
    return SHARED_DATA


@pytest.fixture
def shared_data_with(shared_data):
    """``shared_data_with("uci_hl/yacht.csv.gz", ...)``: the dataset folder, once the files named
    (relative to it) are found there; else skip the test (fail it in CI)."""

    def require(*paths):
        for path in paths:
            if not (shared_data / path).is_file():
                _missing(f"{path} is not in the dataset folder {shared_data}")
        return shared_data

    return require


@pytest.fixture(scope="module")
def client():
    """A 2-worker dask ``LocalCluster`` on 127.0.0.1 (worker processes), started for the test
    module that asks for it and closed after it."""
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, host="127.0.0.1")
        client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()

