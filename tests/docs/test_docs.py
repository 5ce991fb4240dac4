"""Every relative link in README.md and docs/ points at a file (and heading) that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_slug_matches_github():
    assert slug("Real inference servers (`serve:`)") == "real-inference-servers-serve"
    assert slug("SLURM: job states and the live test") == "slurm-job-states-and-the-live-test"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_resolve(page: Path):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(
                f"{target}: no file {dest.relative_to(REPO) if dest.is_relative_to(REPO) else dest}"
            )
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_docs_pages_are_linked_from_the_readme():
    readme = set(links(REPO / "README.md"))
    unlinked = [
        p.name for p in PAGES[1:] if not any(t.split("#")[0] == f"docs/{p.name}" for t in readme)
    ]
    assert not unlinked, f"docs pages no README link reaches: {unlinked}"


def test_readme_is_the_door():
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 200
