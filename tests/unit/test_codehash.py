"""isqaflow.codehash reads import statements, not whole syntax trees: the same imports."""

from __future__ import annotations

import ast
import pkgutil

import isqaflow
from isqaflow import codehash


def _walked_imports(module: str) -> frozenset[str]:
    """The isqaflow names a module imports, from a walk of its whole syntax tree (what codehash
    did before it read import statements only)."""
    tree = ast.parse(codehash.module_path(module).read_text(encoding="utf-8"))
    return codehash.package_names(module, ast.walk(tree))


def test_every_module_yields_the_imports_its_whole_tree_has():
    """(An import-like line inside a string, e.g. a script a module runs in a subprocess, may
    add a dependency -- hashing more than needed, never less; none names isqaflow today.)"""
    modules = [m.name for m in pkgutil.walk_packages(isqaflow.__path__, "isqaflow.")]
    assert len(modules) > 100
    for module in ["isqaflow", *modules]:
        assert codehash._imports(module) == _walked_imports(module), module


def test_continued_statements_comments_and_strings():
    source = (
        "from a import (\n    b,  # a comment (with a parenthesis\n    c,\n)\n"
        "def f():\n    import d.e as g\n"
        "x = 1\nfrom h \\\n    import i\n"
        '"""\nimport this is prose in a docstring\n"""\n'
    )
    assert list(codehash.import_statements(source)) == [
        "from a import (\n    b,  # a comment (with a parenthesis\n    c,\n)",
        "import d.e as g",
        "from h \\\n    import i",
        "import this is prose in a docstring",
    ]


def test_a_changed_import_changes_the_version(tmp_path, monkeypatch):
    package = tmp_path / "isqaflow"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from isqaflow import (\n        b,\n    )\n")
    (package / "b.py").write_text("X = 1\n")
    monkeypatch.setattr(codehash, "ROOT", package)
    for cached in (
        codehash.module_path,
        codehash._imports,
        codehash._resolve,
        codehash.dependencies,
    ):
        cached.cache_clear()
    try:
        assert codehash.dependencies("isqaflow.a") == ("isqaflow", "isqaflow.a", "isqaflow.b")
        before = codehash.code_version("isqaflow.a")
        (package / "b.py").write_text("X = 2\n")
        assert codehash.code_version("isqaflow.a") != before
    finally:
        for cached in (
            codehash.module_path,
            codehash._imports,
            codehash._resolve,
            codehash.dependencies,
        ):
            cached.cache_clear()


def test_the_code_a_descriptor_names_by_reference_is_a_dependency_of_its_resolver():
    """A suite's job lister, config checker, call formulas and column builders are imported by
    reference (isqaflow.suites.base.resolve), which no import statement shows: the module that
    resolves each field depends on what every suite names there -- and on nothing more."""
    from isqaflow.suites import SUITES
    from isqaflow.suites.base import REFERENCE_FIELDS

    # every field that holds references has the module that resolves it here
    assert sorted(codehash.RESOLVED_REFERENCES.values()) == sorted(REFERENCE_FIELDS)
    for resolver, field in codehash.RESOLVED_REFERENCES.items():
        named = {r.partition(":")[0] for entry in SUITES for r in entry.named(field)}
        assert named and named <= set(codehash.dependencies(resolver)), (resolver, field)
    # e.g. Arena-Hard's job lister and checker, in modules no import statement of the grid or
    # of the config check names
    assert "isqaflow.arena_hard.jobs" in codehash.dependencies("isqaflow.grid")
    assert "isqaflow.arena_hard.jobs" not in codehash._imports("isqaflow.grid")
    assert "isqaflow.configcheck.arena_hard" in codehash.dependencies(
        "isqaflow.configcheck.sections"
    )
    assert codehash.referenced("isqaflow.isqa.refine") == frozenset()
