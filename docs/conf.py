"""Sphinx configuration of dpaudit's documentation (``python -m sphinx -W -b html docs OUT``)."""

from __future__ import annotations

# The reference documents the installed package: the checkout's folders are not importable as
# `dpaudit` by themselves (pyproject.toml's package-dir maps them), so build the docs of a checkout
# with it installed in editable mode (`pip install -e '.[docs]'`, as .ci/run does).
try:
    import dpaudit
except ModuleNotFoundError as exc:
    if exc.name != "dpaudit":
        raise
    raise SystemExit("docs/conf.py: dpaudit is not installed in this Python; pip install -e '.[docs]'") from None

project = "dpaudit"
author = "dpaudit maintainers"
copyright = "dpaudit maintainers; Apache-2.0"
release = dpaudit.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    # MathJax bundled into the built site (_static/mathjax), so formulas render with no network access
    "sphinx-mathjax-offline",  # (its import name has hyphens: sphinx imports extensions by module path)
]

# Docstrings describe behaviour; signatures carry the types, so they are not repeated in prose.
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# Every page is reachable from the table of contents; nothing is fetched from the network.
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_theme_options = {"description": "Empirical differential-privacy auditing", "fixed_sidebar": True}
html_title = f"dpaudit {release}"
html_static_path: list[str] = []
