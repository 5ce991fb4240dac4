"""The tests mirror the library (issue 27): tests/unit/<package>/ for src/isqaflow/<package>,
tests/unit/ itself for the top-level modules, and one folder per tier beside it.  pytest
imports test modules by name (rootdir-relative folders without __init__.py), so a test
module's name is unique across tests/."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
TIERS = {"unit", "workflow", "cluster", "docs", "engines", "lint"}


def test_every_test_module_lies_in_a_tier():
    modules = sorted(TESTS.rglob("test_*.py"))
    assert modules
    stray = [
        p.relative_to(TESTS).as_posix()
        for p in modules
        if p.relative_to(TESTS).parts[0] not in TIERS or len(p.relative_to(TESTS).parts) < 2
    ]
    assert stray == []


def test_unit_folders_mirror_the_packages_of_the_library():
    packages = {p.parent.name for p in (REPO / "src/isqaflow").glob("*/__init__.py")}
    folders = {p.name for p in (TESTS / "unit").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders and folders <= packages, sorted(folders - packages)


def test_test_module_names_are_unique():
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert [name for name, n in names.items() if n > 1] == []
