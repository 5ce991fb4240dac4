"""The developers' guide's recipes name real files: every repository path a recipe of
docs/development.md names (a `src/...`, `rules/...`, `tests/...`, `config/...` or top-level
file) exists, and a `<placeholder>` path's folder does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs/development.md"
ROOTS = ("src/", "rules/", "tests/", "config/", "scripts/", "envs/", "docs/")
TOP = {"pyproject.toml", "Snakefile", "Makefile"}
CODE = re.compile(r"`([^`\s]+)`")


def recipe(title: str) -> str:
    text = GUIDE.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def named_paths(section: str) -> list[str]:
    return [
        path
        for path in dict.fromkeys(CODE.findall(section))
        if path.startswith(ROOTS) or path in TOP
    ]


def test_the_add_a_backend_recipe_names_the_backend_record_and_its_readers():
    paths = named_paths(recipe("How to add a backend"))
    for path in (
        "src/isqaflow/backends.py",
        "config/schema.yaml",
        "rules/common.smk",
        "src/isqaflow/models/weights/hub.py",
        "src/isqaflow/spend/__init__.py",
        "src/isqaflow/models/api/budget.py",
        "src/isqaflow/configcheck/sections.py",
        "src/isqaflow/models/registry.py",
        "src/isqaflow/models/capabilities.py",
        "pyproject.toml",
    ):
        assert path in paths, path


@pytest.mark.parametrize("title", ["How to add a backend"])
def test_every_file_a_recipe_names_exists(title):
    paths = named_paths(recipe(title))
    assert paths, f"{title}: no file named"
    missing = []
    for path in paths:
        # a placeholder (src/isqaflow/models/<backend>/) is a file to add: its folder exists
        real = Path(path.split("<", 1)[0]) if "<" in path else Path(path)
        if not (REPO / real).exists():
            missing.append(path)
    assert not missing, f"{title} names files that do not exist: {missing}"


def test_the_add_a_backend_recipe_names_every_reader_of_the_record():
    """The recipe's list of the record's readers is the real one: each module or rule file
    that imports isqaflow.backends is named."""
    reader = re.compile(r"from isqaflow\.backends import|from isqaflow import (?:\w+, )*backends\b")
    readers = {
        str(path.relative_to(REPO))
        for path in [*(REPO / "src").rglob("*.py"), *(REPO / "rules").rglob("*.smk")]
        if path.name != "backends.py" and reader.search(path.read_text())
    }
    assert readers, "no reader of isqaflow.backends found: the pattern is stale"
    assert readers <= set(named_paths(recipe("How to add a backend"))), sorted(readers)
