"""The documentation builds with warnings as errors, and the quick-start gallery has figures.

Runs ``sphinx-build -W`` on ``doc/`` (the ``docs`` requirements are part of the ``tests``
extra). The short examples of ``examples/quickstart/`` are executed; the paper reproductions
are rendered without running them.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_NEEDED = ("sphinx", "numpydoc", "sphinx_gallery", "sphinxcontrib.bibtex", "matplotlib")


def _missing():
    missing = []
    for name in _NEEDED:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


@pytest.mark.skipif(bool(_missing()), reason=f"documentation requirements missing: {_missing()}")
def test_docs_build_without_warnings(tmp_path):
    # the gallery is generated into doc/auto_examples: start from none, so that pages of
    # renamed or deleted examples cannot linger there
    shutil.rmtree(ROOT / "doc" / "auto_examples", ignore_errors=True)
    env = dict(os.environ, LVGP_DOCS_RUN_EXAMPLES="quickstart", MPLBACKEND="Agg")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
           str(ROOT / "doc"), str(tmp_path / "html"), "-d", str(tmp_path / "doctrees")]
    result = subprocess.run(cmd, cwd=ROOT / "doc", env=env, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    quickstart = sorted((ROOT / "examples" / "quickstart").glob("plot_*.py"))
    assert quickstart, "no quick-start examples"
    images = {p.name for p in (tmp_path / "html" / "_images").glob("sphx_glr_plot_*.png")}
    for script in quickstart:
        assert any(name.startswith(f"sphx_glr_{script.stem}_") for name in images), script.name
    index = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    assert "auto_examples/index.html" in index
    assert "getting_started.html" in index and "reproductions/index.html" in index
    # "Getting started" shows a figure of every quick-start example
    page = (tmp_path / "html" / "getting_started.html").read_text(encoding="utf-8")
    for script in quickstart:
        assert f"sphx_glr_{script.stem}_" in page, script.name
