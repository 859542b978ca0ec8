"""The documentation's path for a new user, checked on the sources (no Sphinx needed).

"Getting started" comes right after the installation page and has a quick-start block (code
and figure) for every public estimator; every estimator page of the user guide, and the kernels
page, opens with one; each block's figure is that of an example in ``examples/quickstart/``; no
example imports a private module; the install page lists the extras of ``setup.cfg``. The build
itself is ``tests/test_docs_build.py``; the blocks' code is run by the slow test at the end.
"""

import configparser
import re
import warnings
from pathlib import Path

import pytest

import sklearn_lvgp

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "doc"
SNIPPETS = DOC / "_quickstart"
_INCLUDE = re.compile(r"^\.\. include:: (?:\.\./)?_quickstart/(\w+)\.txt$", re.MULTILINE)
_HEADING = re.compile(r"^\S.*\n(?:=+|-+|~+|\^+)$", re.MULTILINE)

#: user-guide page -> the quick-start block it opens with
USER_GUIDE = {"unscented_gplvm": "gplvm_digits", "ldgd": "ldgd_classification",
              "deep_gp": "deep_gp_vs_sparse_gp", "gpcde": "gpcde_two_branches",
              "dvmgp": "dvmgp_two_parabolas", "sparse_gp_regression": "sgpr_uncertain_inputs",
              "missing_values": "gplvm_imputer", "kernels": "kernels_airline",
              "scaling": "scaling_threads"}


def _public_estimators():
    names = [n for n in sklearn_lvgp.__all__ if isinstance(getattr(sklearn_lvgp, n), type)]
    assert "GPLVMImputer" in names and "DeepGPClassifier" in names
    return names


def _toctree_entries(text):
    entries = []
    for block in re.findall(r"\.\. toctree::\n((?:   .*\n|\n)+)", text):
        entries += [line.strip() for line in block.splitlines()
                    if line.strip() and not line.strip().startswith(":")]
    return entries


def test_getting_started_comes_right_after_install():
    entries = _toctree_entries((DOC / "index.rst").read_text(encoding="utf-8"))
    assert entries[:2] == ["install", "getting_started"], entries


def test_getting_started_has_a_block_for_every_estimator():
    text = (DOC / "getting_started.rst").read_text(encoding="utf-8")
    included = _INCLUDE.findall(text)
    for name in _public_estimators():
        # the section that names the estimator in its heading includes a block
        heading = re.search(rf"^.*``{name}``.*\n-+$", text, flags=re.MULTILINE)
        assert heading, f"no section for {name}"
        after = text[heading.end():]
        nxt = _HEADING.search(after)
        assert _INCLUDE.search(after[:nxt.start() if nxt else None]), name
    assert len(set(included)) == len(included)  # one block per section


@pytest.mark.parametrize("page", sorted(USER_GUIDE))
def test_user_guide_page_opens_with_its_quick_start(page):
    text = (DOC / "user_guide" / f"{page}.rst").read_text(encoding="utf-8")
    title = _HEADING.search(text)
    first_section = _HEADING.search(text, title.end())
    opening = text[title.end():first_section.start()]
    assert _INCLUDE.findall(opening) == [USER_GUIDE[page]], page


@pytest.mark.parametrize("snippet", sorted(p.stem for p in SNIPPETS.glob("*.txt")))
def test_block_shows_a_quick_start_example_figure(snippet):
    text = (SNIPPETS / f"{snippet}.txt").read_text(encoding="utf-8")
    assert text.startswith(".. code-block:: python\n")
    figure = re.search(r"^\.\. figure:: /auto_examples/quickstart/images/"
                       r"sphx_glr_(plot_\w+)_0*1\.png$", text, flags=re.MULTILINE)
    assert figure, snippet
    assert (ROOT / "examples" / "quickstart" / f"{figure.group(1)}.py").is_file()
    assert f":ref:`sphx_glr_auto_examples_quickstart_{figure.group(1)}.py`" in text


def test_no_example_imports_a_private_module():
    private = re.compile(r"^\s*(?:from|import)\s+sklearn_lvgp(?:\.\w+)*\._\w*", re.MULTILINE)
    for script in sorted((ROOT / "examples").rglob("*.py")):
        found = private.search(script.read_text(encoding="utf-8"))
        assert not found, f"{script.relative_to(ROOT)}: {found.group(0).strip()}"


def test_install_page_lists_the_extras_of_setup_cfg():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    extras = set(config["options.extras_require"])
    text = (DOC / "install.rst").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\* ``(\w+)``:", text, flags=re.MULTILINE))
    assert listed == extras


@pytest.mark.slow
@pytest.mark.parametrize("snippet", sorted(p.stem for p in SNIPPETS.glob("*.txt")))
def test_block_code_runs(snippet):
    pytest.importorskip("matplotlib")  # the display block draws
    import matplotlib

    matplotlib.use("Agg")
    text = (SNIPPETS / f"{snippet}.txt").read_text(encoding="utf-8")
    block = text.split(".. code-block:: python\n\n", 1)[1].split("\n.. figure::", 1)[0]
    code = "\n".join(line[3:] for line in block.splitlines())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fixed budgets end with a ConvergenceWarning
        exec(compile(code, f"doc/_quickstart/{snippet}.txt", "exec"), {})
