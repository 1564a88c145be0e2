"""Sphinx configuration of the documentation site (``make docs``; warnings are errors in CI).

The Markdown pages in this folder are the narrative (MyST), ``api.md`` the reference built from the numpydoc
docstrings (autosummary), and ``examples/gallery/*.py`` the gallery, run by sphinx-gallery on every build.
"""

import os
from pathlib import Path

import skfair_measures

os.environ.setdefault("MPLBACKEND", "Agg")

project = "skfair-measures"
author = "the skfair-measures authors"
copyright = "the skfair-measures authors"  # noqa: A001 (Sphinx's name)
release = version = skfair_measures.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "gallery/*.ipynb", "gallery/*.py", "gallery/*.md5", "gallery/*.zip"]
templates_path = ["_templates"]

# MyST: the pages' ``#`` headings get anchors, so links such as ``measures.md#undefined-replicates`` resolve
myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath", "colon_fence"]

# The reference: one page per public name, documented from its numpydoc docstring
autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's Parameters section states the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

sphinx_gallery_conf = {
    "examples_dirs": "../examples/gallery",
    "gallery_dirs": "gallery",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "show_memory": False,
    "plot_gallery": "True",
}

html_theme = "pydata_sphinx_theme"
html_title = f"skfair-measures {release}"
html_theme_options = {
    "navbar_align": "left",
    "navbar_persistent": ["search-button"],
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
# pages with wide tables and nothing to navigate beside them: no left column
html_sidebars = {"performance": [], "changelog": []}
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_show_sourcelink = False

#: The pages that hold the site's tables of contents; a Markdown page in docs/ that none of them names is listed
#: under "More topics" in the user guide, so a page someone adds shows up (and the build does not fail on an orphan).
_CONTENTS = ("index", "user_guide", "reproductions", "performance")


def _place_new_pages(app, docname, source):
    if docname != "user_guide":
        return
    here = Path(app.srcdir)
    named = {line.strip() for page in _CONTENTS for line in (here / f"{page}.md").read_text().splitlines()}
    new = sorted(p.stem for p in here.glob("*.md") if p.stem not in named and p.stem not in _CONTENTS)
    if new:
        source[0] += "\n```{toctree}\n:caption: More topics\n:maxdepth: 1\n\n" + "\n".join(new) + "\n```\n"


def setup(app):
    """Sphinx's hook: connect the page placement above."""
    app.connect("source-read", _place_new_pages)

# numpydoc links an attribute named in a class's "Attributes" section by its bare name; where two documented
# classes have an attribute of that name (``draws``: ActiveAssessment and MeasurePosterior) Sphinx warns that the
# bare name has two targets. Only that warning (type ref.python) is silenced; every other warning still fails -W.
suppress_warnings = ["ref.python"]
