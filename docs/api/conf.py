"""Sphinx configuration of the API reference (built by ``python -m sphinx -W -b html docs/api docs/_build/api``).

The pages are generated from the docstrings (numpydoc format) of the public modules; nothing is fetched over
the network (no intersphinx), so the build works offline. ``-W`` turns every warning into an error, so a
docstring that does not parse fails CI.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, ROOT)  # the packages of this checkout, installed or not
os.environ.setdefault("MPLBACKEND", "Agg")

from theory._version import __version__  # noqa: E402

project = "attention-theory-verify"
author = "The attention-theory-verify contributors"
copyright = "2026, " + author  # noqa: A001 (Sphinx's name)
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]

# autodoc: members in source order, documented members only (private helpers stay out)
autodoc_default_options = {"members": True, "member-order": "bysource", "show-inheritance": True}
autodoc_typehints = "none"  # the numpydoc "Parameters" sections state the types
autosummary_generate = False  # the summary tables link to the module pages below (no generated stubs)

# numpydoc: the autodoc member listing is the one listing of class members
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "alabaster"
html_theme_options = {"description": "Executable, checkable versions of two theory papers on attention",
                      "fixed_sidebar": True}
html_static_path: list[str] = []
exclude_patterns = ["_build"]

# Narrow fixes of docstrings in files other teams own (reported to them; a no-op once the docstring is fixed):
# text that reST misreads as markup is shown as a literal, for the named object only.
_AS_LITERAL = {
    "theory.structured.StructuredSolution": ["|E(exact traces) - E(quadrature traces, n_nodes)|"],
}


def _as_literal(app, what, name, obj, options, lines):  # noqa: ANN001 (Sphinx's event signature)
    for text in _AS_LITERAL.get(name, ()):
        lines[:] = [ln.replace(text, f"``{text}``") for ln in lines]


def setup(app):  # noqa: ANN001
    app.connect("autodoc-process-docstring", _as_literal)
