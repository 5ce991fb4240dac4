"""A version of the library code a workflow rule runs, for its ``params:``.

Snakemake reruns a job when its ``script:`` changes, but not when a module the
script imports changes.  Each rule therefore gets a parameter
``code=code_version("isqaflow.isqa.refine")``: the SHA-256 of that module and of
every ``isqaflow`` module it imports, transitively (imports inside functions
included), read from the source with :mod:`ast` -- nothing is imported, so this
runs at DAG-build time in milliseconds.  Editing ``refine.py`` changes the version
of the rules that import it, and of no other rule.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

PACKAGE = "isqaflow"
ROOT = Path(__file__).resolve().parent


# The source does not change while Snakemake builds its DAG; one parse per module (the
# rules ask for ~50 versions over the same ~60 modules).
@functools.cache
def module_path(module: str) -> Path:
    parts = module.split(".")
    if parts[0] != PACKAGE:
        raise ValueError(f"{module} is not an {PACKAGE} module")
    base = ROOT.joinpath(*parts[1:])
    if (base / "__init__.py").exists():
        return base / "__init__.py"
    if base.with_suffix(".py").exists():
        return base.with_suffix(".py")
    raise ModuleNotFoundError(module)


# A line that starts an import statement (at any indentation: imports inside functions count).
_IMPORT_START = re.compile(
    r"^[ \t]*(?:from[ \t]+[\w.]+(?:[ \t]|\\\n)+import\b|import[ \t]+\w)", re.M
)


def import_statements(source: str) -> Iterator[str]:
    """The text of each import statement of ``source``, continuation lines (parentheses or a
    backslash) included.  Parsing these few statements instead of the whole module is what
    keeps a Snakefile parse cheap: ``ast.parse`` of every module took ~1 s of each parse (each
    dry run, and each SLURM job's own Snakemake), the statements alone a few milliseconds.
    tests/unit/test_codehash.py checks that every module of the package yields the imports a
    walk of its whole syntax tree finds."""
    end = 0
    for match in _IMPORT_START.finditer(source):
        if match.start() < end:  # a continuation line of the statement before
            continue
        start, depth, i = match.start(), 0, match.start()
        while i < len(source):
            char = source[i]
            if char == "#":  # a comment runs to the end of its line
                i = source.find("\n", i)
                i = len(source) if i < 0 else i
                continue
            if char in "([{":
                depth += 1
            elif char in ")]}":
                depth -= 1
            elif char == "\n" and depth <= 0 and source[i - 1] != "\\":
                break
            i += 1
        end = i
        yield source[start:i].strip()


def _statement_nodes(path: Path) -> Iterator[ast.AST]:
    for statement in import_statements(path.read_text(encoding="utf-8")):
        try:
            tree = ast.parse(statement, filename=str(path))
        except SyntaxError:  # an import-like line inside a string: not an import
            continue
        yield from tree.body


@functools.cache
def _imports(module: str) -> frozenset[str]:
    return package_names(module, _statement_nodes(module_path(module)))


def package_names(module: str, nodes: Iterable[ast.AST]) -> frozenset[str]:
    """The isqaflow names the import statements among ``nodes`` of ``module`` import (relative
    imports resolved against the module, or the package an ``__init__`` is)."""
    is_package = module_path(module).name == "__init__.py"
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(n for n in names if n == PACKAGE or n.startswith(PACKAGE + "."))
    return frozenset(found)


@functools.cache
def _resolve(name: str) -> str | None:
    """The module an import names (``a.b.func`` -> ``a.b``), or None."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        try:
            module_path(candidate)
            return candidate
        except (ModuleNotFoundError, ValueError):
            parts.pop()
    return None


#: Modules that import code a suite's descriptor names by reference ("<module>:<name>",
#: :func:`isqaflow.suites.base.resolve`, an import no ``import`` statement shows), and the
#: descriptor field each resolves: the named modules are their dependencies too, so that an
#: edit of a suite's job lister, checker, call formulas or column builders reruns the rules
#: whose code reads them, and no other.
RESOLVED_REFERENCES = {
    "isqaflow.grid": "jobs",
    "isqaflow.configcheck.sections": "config_check",
    "isqaflow.spend": "spend_planners",
    "isqaflow.report.leaderboard": "board_builders",
}


@functools.cache
def referenced(module: str) -> frozenset[str]:
    """The modules the registered suites' descriptors name in the field ``module`` resolves
    (:data:`RESOLVED_REFERENCES`); none for any other module."""
    field = RESOLVED_REFERENCES.get(module)
    if field is None:
        return frozenset()
    from isqaflow.suites import SUITES  # standard library only: cheap at DAG build

    return frozenset(r.partition(":")[0] for entry in SUITES for r in entry.named(field))


@functools.cache
def dependencies(module: str) -> tuple[str, ...]:
    """``module`` and every isqaflow module it imports, transitively (with parent packages)."""
    seen: set[str] = set()
    stack = [module]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        parts = current.split(".")
        for i in range(1, len(parts)):  # importing a.b.c runs a/__init__ and a/b/__init__
            stack.append(".".join(parts[:i]))
        for name in _imports(current) | referenced(current):
            resolved = _resolve(name)
            if resolved and resolved not in seen:
                stack.append(resolved)
    return tuple(sorted(seen))


def code_version(*modules: str) -> str:
    """A short hash of the source of ``modules`` and everything they import."""
    digest = hashlib.sha256()
    for module in sorted({dep for m in modules for dep in dependencies(m)}):
        digest.update(module.encode())
        digest.update(b"\0")
        digest.update(module_path(module).read_bytes())
    return digest.hexdigest()[:16]


def file_version(path: str | Path) -> str:
    """A short hash of one file's bytes: a rule's ``script:`` (see ``version_scripts`` in
    rules/common.smk).  Snakemake's ``code`` rerun trigger compares a script's *mtime* with
    its outputs', so a fresh clone or a pull (every checked-out file new) replans every job
    ("Code has changed since last execution"); the profiles leave that trigger out and a
    script's content reaches its jobs as this param instead."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
