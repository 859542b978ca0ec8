"""Sphinx configuration of the sklearn_lvgp documentation.

Build with ``sphinx-build -b html . _build/html`` from this folder (see ``Makefile``). Nothing
heavy is imported here: the version comes from ``sklearn_lvgp/_version.py``, loaded on its own, so
the configuration loads without numba, scikit-learn or matplotlib. autodoc imports the package
later, when it documents it.

Example gallery: the short examples of ``../examples/quickstart`` (each well under two minutes)
are executed, so the HTML has their figures; the paper reproductions in ``../examples`` take
minutes to days and are rendered without running them (their committed results are linked from
the user guide). The environment variable ``LVGP_DOCS_RUN_EXAMPLES`` chooses: ``quickstart``
(default), ``none`` (a fast build that executes nothing) or ``all``.
"""

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EXAMPLES = ROOT / "examples"

# autodoc imports the package from the checkout, so an install is not needed to build the docs
sys.path.insert(0, str(ROOT))


def _read_version():
    # sklearn_lvgp/_version.py is loaded on its own (not as part of the package, whose import
    # would bring numba): it asks git through setuptools-scm, else falls back
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_sklearn_lvgp_docs_version", ROOT / "sklearn_lvgp" / "_version.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.version()


# -- project -------------------------------------------------------------------------------
project = "sklearn_lvgp"
author = "the sklearn_lvgp developers"
copyright = "the sklearn_lvgp developers"
release = _read_version()
version = ".".join(release.split(".")[:2])

# -- extensions ----------------------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "sphinxcontrib.bibtex",
]

templates_path = ["_templates"]
# _quickstart/ holds the quick-start blocks (code and figure) that the "Getting started" page
# and the user guide include; they are .txt, so they are not pages of their own
exclude_patterns = ["_build", "_quickstart", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
default_role = "literal"
root_doc = "index"


# -- autodoc / autosummary -----------------------------------------------------------------
autosummary_generate = True
autodoc_typehints = "none"  # numpydoc sections carry the types
autodoc_member_order = "groupwise"
autodoc_inherit_docstrings = True


def _defined_in_package(obj):
    """Whether ``obj`` (a member seen by autodoc) is defined in sklearn_lvgp."""
    target = obj.fget if isinstance(obj, property) else obj
    module = getattr(target, "__module__", None)
    return isinstance(module, str) and (
        module == "sklearn_lvgp" or module.startswith("sklearn_lvgp."))


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Document only members written in this package.

    The class template uses ``:inherited-members:`` so that, e.g., ``fit`` (defined in the
    private base class) appears on each estimator. That would also pull in scikit-learn's
    ``get_params``/``set_output``/``set_*_request`` and tuple methods of the NamedTuple types,
    whose docstrings are not ours to validate and whose cross-references point into
    scikit-learn's own documentation. They are skipped here.
    """
    if what != "class" or skip:
        return skip
    if not _defined_in_package(obj):
        return True
    return None


def _resolve(name):
    """The object a dotted name points to, or ``None``."""
    import importlib

    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _inherits_docstring(name):
    """Whether a class member has no docstring of its own but inherits one from the package.

    An override such as ``RBF.K`` is rendered by autodoc with the docstring of ``Kernel.K``
    (``autodoc_inherit_docstrings``). That docstring is validated where it is written, so the
    override itself is not reported as undocumented (numpydoc looks at ``__doc__`` only).
    """
    owner_name, _, attr = name.rpartition(".")
    owner = _resolve(owner_name)
    if not isinstance(owner, type):
        return False
    defining = [klass for klass in owner.__mro__ if attr in vars(klass)]
    if not defining or (vars(defining[0])[attr].__doc__ or "").strip():
        return False
    return any(
        (vars(klass)[attr].__doc__ or "").strip() and klass.__module__.startswith("sklearn_lvgp")
        for klass in defining[1:])


class _ValidationExcluder:
    """numpydoc's exclusion test (``search(name)``), extended by :func:`_inherits_docstring`."""

    def __init__(self, patterns):
        self.patterns = patterns

    def search(self, name):
        if self.patterns is not None and self.patterns.search(name):
            return True
        return _inherits_docstring(name)

    def __reduce__(self):
        # Sphinx pickles the environment with its config; a class defined in conf.py cannot be
        # pickled by reference, so store the plain patterns (re-wrapped at the next build).
        return re.compile, ((self.patterns.pattern if self.patterns is not None else "(?!)"),)


def _install_excluder(app):
    # numpydoc compiles ``numpydoc_validation_exclude`` at config-inited; wrap the result.
    config = app.config
    config.numpydoc_validation_excluder = _ValidationExcluder(
        getattr(config, "numpydoc_validation_excluder", None))


_GALLERY_MARKER = ".. gallery-toctree"
_GALLERY_TOCTREE = """.. toctree::
   :maxdepth: 2
   :caption: Examples

   auto_examples/index
"""


def _gallery_toctree(app, docname, source):
    """Put the gallery in the index toctree only when there is a gallery to link to."""
    if docname == root_doc:
        source[0] = source[0].replace(_GALLERY_MARKER, _GALLERY_TOCTREE if _HAS_GALLERY else "")


# -- numpydoc ------------------------------------------------------------------------------
numpydoc_show_class_members = False  # the class template lists members itself
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# Validate every docstring that autodoc renders ("all"), except these checks:
#   GL01, GL02  where the summary starts and where the closing quotes go: the package writes
#               the summary on the opening line (PEP 257). Layout only; nothing rendered changes.
#   ES01, SA01, EX01  extended summary, "See Also" and "Examples" sections: worth having on the
#               classes, but not required on every method, property and helper.
#   RT02        a Returns entry holding only a type: the package names its return values
#               ("L : ndarray of shape (M, M)"), which numpydoc allows and which lets the text
#               refer to them by name.
# Every other check is enforced, and a violation is a build warning.
numpydoc_validation_checks = {"all", "GL01", "GL02", "ES01", "SA01", "EX01", "RT02"}

# -- sphinx-gallery ------------------------------------------------------------------------
_RUN_EXAMPLES = os.environ.get("LVGP_DOCS_RUN_EXAMPLES", "quickstart")
if _RUN_EXAMPLES not in ("quickstart", "none", "all"):
    raise ValueError("LVGP_DOCS_RUN_EXAMPLES must be 'quickstart', 'none' or 'all', got "
                     f"{_RUN_EXAMPLES!r}.")
_EXECUTED = {"quickstart": r"/quickstart/plot_", "none": r"/quickstart/plot_", "all": r"/plot_"}
_HAS_GALLERY = EXAMPLES.is_dir() and any(
    (EXAMPLES / f"{stem}.{ext}").is_file()
    for stem in ("README", "GALLERY_HEADER") for ext in ("txt", "rst"))

# The "Getting started" page and the user guide show the quick-start examples' figures, which
# exist only when they run: a build that runs nothing does not report them as missing.
suppress_warnings = ["image.not_readable"] if _RUN_EXAMPLES == "none" else []

sphinx_gallery_conf = {
    "examples_dirs": ["../examples"] if _HAS_GALLERY else [],
    "gallery_dirs": ["auto_examples"] if _HAS_GALLERY else [],
    "filename_pattern": _EXECUTED[_RUN_EXAMPLES],
    "plot_gallery": "False" if _RUN_EXAMPLES == "none" else "True",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": False,
    "show_memory": False,
}

# -- sphinxcontrib-bibtex ------------------------------------------------------------------
bibtex_bibfiles = ["references.bib"]
bibtex_default_style = "plain"
bibtex_reference_style = "author_year"

# -- HTML ----------------------------------------------------------------------------------
html_theme = "alabaster"
html_theme_options = {
    "description": "Latent-variable Gaussian-process models for scikit-learn",
    "fixed_sidebar": False,
    "page_width": "1140px",
    "show_powered_by": False,
}
html_title = f"sklearn_lvgp {release}"
html_static_path = []
html_show_sourcelink = False


# -- hooks ---------------------------------------------------------------------------------
def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_members)
    app.connect("source-read", _gallery_toctree)
    app.connect("builder-inited", _install_excluder)
