"""Sphinx configuration of the dualgrad documentation (``sphinx-build -W -b html docs docs/_build/html``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

project = "dualgrad"
author = "the dualgrad developers"
copyright = "the dualgrad developers"  # noqa: A001 - Sphinx's name for it
release = version = "0.1.0"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx_copybutton"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3

autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_default_options = {"member-order": "bysource"}

html_theme = "alabaster"
html_static_path: list[str] = []
html_theme_options = {"description": "torch.autograd on NumPy", "fixed_sidebar": True}
