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


def test_the_add_a_suite_recipe_names_the_descriptor_and_every_reader_of_the_registry():
    """The suite recipe's file list is the real one: the descriptors' package and each module
    or rule file that reads the registry (imports isqaflow.suites) is named, or its folder's
    stage file is (the rule files read it through rules/common.smk's imports)."""
    paths = set(named_paths(recipe("How to add a suite")))
    for path in (
        "src/isqaflow/suites/__init__.py",
        "src/isqaflow/grid.py",
        "pyproject.toml",
        "config/schema.yaml",
        "tests/workflow/test_grid.py",
    ):
        assert path in paths, path
    # the registry is the package (`from isqaflow.suites import ...`); a suite's own modules that
    # import their descriptor's names (`from isqaflow.suites.drfr import JUDGE`) read no registry
    # and need no edit when a suite is added
    reader = re.compile(r"from isqaflow\.suites import|from isqaflow import (?:\w+, )*suites\b")
    readers = {
        str(path.relative_to(REPO))
        for path in [*(REPO / "src").rglob("*.py"), *(REPO / "rules").rglob("*.smk")]
        if "suites" not in path.parts and reader.search(path.read_text())
    }
    # rules/common.smk imports the registry for the rule files; the recipe names the two that
    # loop over it (the targets, the control files)
    readers = (readers - {"rules/common.smk"}) | {"rules/targets.smk", "rules/inputs/validity.smk"}
    assert readers and readers <= paths, sorted(readers - paths)


def test_the_add_a_suite_recipe_puts_its_leaderboard_columns_in_its_descriptor_and_builder():
    """A suite's leaderboard columns need its descriptor (``board_builders``, ``board_place``)
    and its builder: build_leaderboard calls every registered suite's builders, so the step
    names no edit of it (issue 37: no mirrored list)."""
    section = recipe("How to add a suite")
    step = section[section.index("6. **Its tables**") : section.index("7. **")]
    assert "`board_builders=(" in step and "`board_place`" in step
    assert "src/isqaflow/report/leaderboard_columns.py" in named_paths(step)
    assert "no edit of `build_leaderboard`" in step
    assert "tests/unit/report/test_leaderboard_builders.py" in named_paths(step)


@pytest.mark.parametrize("title", ["How to add a backend", "How to add a suite"])
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


def test_the_add_a_suite_recipe_counts_the_existing_files_a_suite_edits():
    """Issue 37's measure: the existing files a new suite edits, named in the recipe's opening,
    are seven -- the shared floors run its code by the references in its descriptor, so the
    modules that resolve them name no suite (checked here for Arena-Hard, whose job lister,
    checker and call formulas are in modules of its own)."""
    section = recipe("How to add a suite")
    opening = section[: section.index("1. **Its descriptor**")]
    counted = opening[opening.index("the existing files a new") : opening.index("Arena-Hard-Auto")]
    assert "**the existing files a new\nsuite edits are seven**" in opening
    edited = [
        "src/isqaflow/suites/__init__.py",
        "pyproject.toml",
        "Snakefile",
        "config/schema.yaml",
        "config/config.yaml",
        "config/paper.yaml",
        "src/isqaflow/spend/gpu_hours.py",
    ]
    assert [p for p in named_paths(counted) if p in edited] == edited
    for resolver in (
        "src/isqaflow/grid.py",
        "src/isqaflow/configcheck/sections.py",
        "src/isqaflow/spend/__init__.py",
        "src/isqaflow/report/leaderboard.py",
    ):
        assert resolver in named_paths(opening), resolver
        assert "arena_hard" not in (REPO / resolver).read_text(), resolver
