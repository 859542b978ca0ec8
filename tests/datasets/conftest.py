"""Fixtures of the dataset tests: an isolated environment and a loopback server of original files.

The original-format files (Netlab ``DataTrn.txt``..., ``usps_all.mat``, the MC-dropout index
files, ...) are generated from the pre-filled ``shared/data`` folder into a temporary folder laid
out as ``<owner>/<repo>/<commit>/<folder>/<path>``, and served by ``http.server`` on 127.0.0.1.
"""

import gzip
import http.server
import threading
from pathlib import Path

import numpy as np
import pytest

from sklearn_lvgp.datasets import _base, _registry
from sklearn_lvgp.datasets._registry import REGISTRY, SOURCES

#: A URL root where nothing listens: a test that forgets the server fails fast, offline.
DEAD_URL = "http://127.0.0.1:9"


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    """No dataset variables from the caller, ``~`` inside ``tmp_path``, no proxies, no network."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv(_base.ENV_DATA_HOME, raising=False)
    monkeypatch.setenv(_registry.ENV_DATA_URL, DEAD_URL)
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    return home


class OriginServer:
    """Serves ``root`` on 127.0.0.1 in a background thread and records the requested paths."""

    def __init__(self, root):
        self.root = Path(root)
        self.requests = []
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(server.root), **kwargs)

            def do_GET(self):
                server.requests.append(self.path)
                super().do_GET()

            def log_message(self, *args):
                pass

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True)
        self._thread.start()

    def path(self, source, rel):
        """Where the server keeps ``rel`` of ``source`` (as :func:`_registry.source_url` has it)."""
        repo, commit, folder = SOURCES[source]
        target = self.root.joinpath(*repo.split("/"), commit, *filter(None, [folder]), rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def add_oil(self, shared):
        write_oil_originals(self, shared)

    def add_usps(self, shared):
        write_usps_originals(self, shared)

    def add_uci(self, shared, collection, name):
        {"hl": write_uci_hl_originals, "wilson": write_uci_wilson_originals,
         "raw": write_uci_raw_originals}[collection](self, shared, name)

    def stop(self):
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join()
        self._httpd.server_close()


@pytest.fixture
def origin(tmp_path, monkeypatch):
    """A running :class:`OriginServer`; ``$SKLEARN_LVGP_DATA_URL`` points at it."""
    server = OriginServer(tmp_path / "origin")
    monkeypatch.setenv(_registry.ENV_DATA_URL, server.url)
    yield server
    server.stop()


# ---------------------------------------------------------------------------------------------
# original-format files, generated from the shared folder


def _exact(values, fmt):
    text = [fmt % float(v) for v in np.ravel(values)]
    assert [float(t) for t in text] == [float(v) for v in np.ravel(values)], fmt
    return text


def _netlab_text(A):
    """Netlab's layout: each value as ``%15.7e`` (three spaces before a positive one)."""
    A = np.atleast_2d(A)
    cells = np.array(_exact(A, "%16.7e")).reshape(A.shape)
    return "".join("".join(row) + "\n" for row in cells)


def _shared_oil(shared):
    from sklearn_lvgp.datasets._formats import read_oil

    return read_oil(shared / "oil_flow.csv", REGISTRY["oil_flow.csv"])


def write_oil_originals(server, shared):
    """``Data{Trn,Vdn,Tst}{,Lbls,Frctns}.txt`` and ``three_phase_oil_flow.npz``."""
    t = _shared_oil(shared)
    for code, stem in enumerate(("Trn", "Vdn", "Tst")):
        rows = np.flatnonzero(t["split"] == code)
        rows = rows[np.argsort(t["row"][rows])]
        onehot = np.eye(3)[t["label"][rows]]
        server.path("oil_flow", f"Data{stem}.txt").write_text(_netlab_text(t["X"][rows]))
        server.path("oil_flow", f"Data{stem}Lbls.txt").write_text(_netlab_text(onehot))
        server.path("oil_flow", f"Data{stem}Frctns.txt").write_text(
            _netlab_text(t["fractions"][rows]))
    rows = np.flatnonzero(t["gplvm100"] >= 0)
    rows = rows[np.argsort(t["gplvm100"][rows])]
    with open(server.path("unscented_gplvm", "three_phase_oil_flow.npz"), "wb") as fh:
        np.savez(fh, Y=t["X"][rows], labels=t["label"][rows], X=np.zeros((100, 2)))


def write_usps_originals(server, shared):
    """``usps_all.mat``: ``data`` 256 x 1100 x 10, digit columns 1, ..., 9, 0, column-major."""
    from scipy.io import savemat

    with np.load(shared / "usps_digits.npz") as d:
        X = d["X"]
    data = X.reshape(10, 1100, 16, 16).transpose(0, 1, 3, 2).reshape(10, 1100, 256)
    savemat(server.path("unscented_gplvm", "usps_all.mat"), {"data": data.transpose(2, 1, 0)})


def _uci_table(shared, rel):
    from sklearn_lvgp.datasets._formats import read_uci

    return read_uci(shared / rel, REGISTRY[rel])


def write_uci_hl_originals(server, shared, name):
    """``data.txt`` (space-separated) and ``index_{train,test}_<k>.txt`` (shuffled order)."""
    entry = REGISTRY[f"uci_hl/{name}.csv.gz"]
    t = _uci_table(shared, entry.path)
    originals = iter(entry.originals)
    rows = [" ".join(_exact(row, "%r")) for row in t["data"]]
    server.path(*next(originals)).write_text("\n".join(rows) + "\n")
    rng = np.random.default_rng(0)
    for k in range(entry.n_splits):
        test = t["splits"][:, k].astype(bool)
        for rows in (np.flatnonzero(~test), np.flatnonzero(test)):
            text = "".join(f"{i}\n" for i in rng.permutation(rows))
            server.path(*next(originals)).write_text(text)


def write_uci_wilson_originals(server, shared, name):
    """``data.csv.gz`` (no header) and ``test_mask.csv.gz`` (n x 10 ``True``/``False``)."""
    entry = REGISTRY[f"uci_wilson/{name}.csv.gz"]
    t = _uci_table(shared, entry.path)
    (_, data_path), (_, mask_path) = entry.originals
    rows = [",".join(_exact(row, "%r")) for row in t["data"]]
    data = ("\n".join(rows) + "\n").encode()
    server.path("uci_wilson", data_path).write_bytes(gzip.compress(data))
    mask = t["splits"][:, :1] == np.arange(10)
    text = "".join(",".join(str(bool(v)) for v in row) + "\n" for row in mask)
    server.path("uci_wilson", mask_path).write_bytes(gzip.compress(text.encode()))


def write_uci_raw_originals(server, shared, name):
    """A header-less CSV with the source's number format (``7,0.27,...``)."""
    entry = REGISTRY[f"uci_raw/{name}.csv.gz"]
    t = _uci_table(shared, entry.path)
    (source, path), = entry.originals
    rows = [",".join(_exact(row, "%.15g")) for row in t["data"]]
    server.path(source, path).write_text("\n".join(rows) + "\n")
