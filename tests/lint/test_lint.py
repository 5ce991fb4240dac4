"""The workflow passes Snakemake's linter and snakefmt, the Python code ruff's checks and format, and the
library its floors contract (import-linter, pyproject.toml), as the project holds itself to."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from workflow_utils import REPO, env


def test_snakemake_lint_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env(),
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "Lints for" not in output, output[-3000:]


def test_snakefmt_check_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "snakefmt", "--check", "Snakefile", "rules/"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_check_is_clean():
    """ruff with the rules of pyproject.toml ([tool.ruff.lint]) over every Python file."""
    ruff = Path(sys.executable).with_name("ruff")
    result = subprocess.run(
        [str(ruff), "check", "--no-cache", "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]


def test_ruff_format_check_is_clean():
    """ruff's format (pyproject.toml's [tool.ruff.format]; its exclude lists the files written before
    the check, not yet formatted) over every other Python file, new files included."""
    ruff = Path(sys.executable).with_name("ruff")
    result = subprocess.run(
        [str(ruff), "format", "--check", "--no-cache", "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert "already formatted" in result.stdout + result.stderr


def test_imports_point_down_the_floors():
    """The layers contract of pyproject.toml ([tool.importlinter]): no module imports from a floor
    above its own, the paper stages and the floor below them import nothing from each other, and
    every top-level module of the package is placed on a floor."""
    lint_imports = Path(sys.executable).with_name("lint-imports")
    path = os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))
    result = subprocess.run(
        [str(lint_imports)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(env(), PYTHONPATH=path),
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert ", 0 broken." in output, output[-3000:]
    # the rooms inside models/ and arena/ are contracts too, and were checked (lint-imports wraps
    # a long contract name over lines)
    kept = " ".join(output.split())
    for contract in (
        "models: backends above the interface; API and in-process apart; planning imports no backend",
        "arena: tables and browser; ratings; judging | retrieval",
    ):
        assert f"{contract} KEPT" in kept, output[-3000:]


def test_no_module_imports_a_private_name_of_another():
    """A name with a leading underscore stays inside its module: the library and the scripts
    import public names only (the hf backend once imported _Progress and _sample)."""
    offenders = []
    for path in sorted([*(REPO / "src").rglob("*.py"), *(REPO / "scripts").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("isqaflow"):
                offenders += [
                    f"{path.relative_to(REPO)}:{node.lineno}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_")
                ]
    assert not offenders, "\n".join(offenders)
