"""Versions tell builds apart: every commit of a checkout has its own ``__version__``.

The git cases need git and setuptools-scm (a build requirement, not a run-time one) and are
skipped without them; the fallback order is tested without either.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.utils.fixes import parse_version

import sklearn_lvgp
from sklearn_lvgp import _version

ROOT = Path(__file__).resolve().parents[1]


def _has_scm():
    try:
        import setuptools_scm  # noqa: F401
    except ImportError:
        return False
    return shutil.which("git") is not None


needs_scm = pytest.mark.skipif(not _has_scm(), reason="needs git and setuptools-scm")


def test_version_is_a_pep440_version():
    v = parse_version(sklearn_lvgp.__version__)
    assert v >= parse_version("0.1.0.dev0")


def test_fallback_matches_pyproject():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[tool.setuptools_scm]", 1)[1]
    found = re.search(r'^fallback_version\s*=\s*"([^"]+)"', section, flags=re.MULTILINE)
    assert found and found.group(1) == _version.SCM_FALLBACK_VERSION
    assert _version.FALLBACK_VERSION.startswith(_version.SCM_FALLBACK_VERSION + "+")


def test_no_source_gives_the_fallback(monkeypatch, tmp_path):
    assert _version._from_git(tmp_path) is None  # not a checkout
    for name in ("_from_git", "_from_build", "_from_metadata"):
        monkeypatch.setattr(_version, name, lambda: None)
    assert _version.version.__wrapped__() == "0.1.0.dev0+unknown"


def test_import_does_not_ask_git():
    # the version is looked up on first use, not when the package is imported
    code = ("import sys, sklearn_lvgp; "
            "assert 'setuptools_scm' not in sys.modules, 'imported at import time'; "
            "assert sklearn_lvgp._version.version.cache_info().currsize == 0")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})


@needs_scm
@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout")
def test_checkout_version_names_its_commit():
    head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True, check=True).stdout.strip()
    local = parse_version(sklearn_lvgp.__version__).local
    assert local is not None and local.startswith("g"), sklearn_lvgp.__version__
    assert local[1:].startswith(head), (sklearn_lvgp.__version__, head)


@needs_scm
def test_two_commits_give_two_versions(tmp_path):
    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                       cwd=tmp_path, check=True, capture_output=True)

    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    git("init", "-q")
    git("add", "pyproject.toml")
    git("commit", "-q", "-m", "one")
    first = _version._from_git(tmp_path)
    (tmp_path / "a.txt").write_text("a")
    git("add", "a.txt")
    git("commit", "-q", "-m", "two")
    second = _version._from_git(tmp_path)
    assert first is not None and second is not None
    assert first != second
    assert parse_version(first) < parse_version(second)
    assert parse_version(first).base_version == "0.1.0"  # untagged: the fallback is the base
