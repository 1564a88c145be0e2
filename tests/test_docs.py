"""The docs list every registry key, and the README names no missing doc page."""

import re
from pathlib import Path

from skfair_measures import registry

ROOT = Path(__file__).resolve().parents[1]


def test_measures_doc_lists_every_registry_key():
    text = (ROOT / "docs" / "measures.md").read_text()
    missing = [k for k in registry.keys() if f"`{k}`" not in text]
    assert not missing, f"docs/measures.md lacks {missing}"


def test_readme_links_resolve():
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)#]+)\)", text)
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, f"README links to missing files {missing}"
