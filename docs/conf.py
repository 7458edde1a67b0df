"""Sphinx configuration of TensorWeaver's documentation site.

Sphinx, not MkDocs: autodoc reads the docstrings the code already has (the hookspecs' are the
plugin author's manual), ``sphinx.ext.doctest`` runs every example on the pages against the
installed package, and ``-W`` turns any broken reference into a failed build — the site is
checked the way the code is. Pages are Markdown (MyST); generated tables come from
``_ext/tw_generated.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

from tensorweaver.version import __version__  # noqa: E402

project = "TensorWeaver"
author = "The TensorWeaver authors"
copyright = "2026, The TensorWeaver authors"
release = version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.napoleon",
    "tw_generated",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
# Pages include README sections, whose headings start at ### under a page's own title.
suppress_warnings = ["myst.header"]

autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_typehints = "description"
autodoc_member_order = "bysource"

doctest_global_setup = "import tensorweaver as tw"
html_theme = "furo"
html_title = f"TensorWeaver {release}"
