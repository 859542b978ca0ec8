"""The package version (one place; the build and ``__version__`` both come from git).

The version is computed by setuptools-scm from the git history, so that every commit (and a
working tree with uncommitted changes) has its own: ``0.1.0.devN+g<hash>`` is the N-th commit
after the last release tag (the base is ``0.1.0.dev0`` while there is no tag), ``.dYYYYMMDD`` is
appended for uncommitted changes. It is looked up in this order:

1. a git checkout that holds this file (``PYTHONPATH=<checkout>``, or an editable install),
   when setuptools-scm is importable: the version of the checkout as it is now;
2. ``_scm_version.py``, written next to this file by setuptools-scm when a wheel or sdist is
   built (``[tool.setuptools_scm]`` in ``pyproject.toml``; not tracked by git);
3. the installed distribution's metadata, if that distribution is the one holding this file
   (a stale install elsewhere on the path is not asked);
4. ``FALLBACK_VERSION`` (``0.1.0.dev0+unknown``): no git, no build, no metadata.
"""

import functools
from pathlib import Path

__all__ = ["version"]

#: The version when none of the sources answers (the ``+unknown`` local part says so).
FALLBACK_VERSION = "0.1.0.dev0+unknown"
#: The base of an untagged history; the same value as ``fallback_version`` in pyproject.toml.
SCM_FALLBACK_VERSION = "0.1.0.dev0"

_HERE = Path(__file__).resolve().parent


def _from_git(root=_HERE.parent):
    root = Path(root)
    if not (root / ".git").exists() or not (root / "pyproject.toml").is_file():
        return None
    try:
        from setuptools_scm import get_version
    except ImportError:
        return None
    try:
        return get_version(root=str(root), fallback_version=SCM_FALLBACK_VERSION)
    except Exception:  # git missing or failing: fall through to the other sources
        return None


def _from_build():
    try:
        from ._scm_version import version
    except ImportError:
        return None
    return str(version)


def _from_metadata():
    from importlib import metadata

    try:
        dist = metadata.distribution("sklearn_lvgp")
        init = Path(dist.locate_file("sklearn_lvgp/__init__.py")).resolve()
    except Exception:  # not installed, or metadata without files
        return None
    return dist.version if init == _HERE / "__init__.py" else None


@functools.cache
def version():
    """The package's version, looked up on first use (asking git costs ~0.3 s, which an
    ``import sklearn_lvgp`` should not pay) and remembered for the process.

    Returns
    -------
    version : str
        The version string.
    """
    for source in (_from_git, _from_build, _from_metadata):
        found = source()
        if found:
            return found
    return FALLBACK_VERSION


def __getattr__(name):
    if name == "__version__":
        return version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
