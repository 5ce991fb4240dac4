"""Helpers for tests that run Snakemake on a copy of the repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def repo_files() -> list[str]:
    """The files of the repository a user's clone has (tracked and new, not ignored)."""
    out = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [f for f in out.split("\0") if f and (REPO / f).is_file()]


def copy_repo(dest: Path) -> Path:
    for rel in repo_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    return dest


def _failing_scontrol() -> str:
    """A directory whose ``scontrol`` fails at once (made once per test process)."""
    stub = Path(tempfile.gettempdir()) / f"isqaflow-no-scontrol-{os.getpid()}"
    if not (stub / "scontrol").exists():
        stub.mkdir(exist_ok=True)
        (stub / "scontrol").write_text("#!/bin/sh\nexit 1\n")
        (stub / "scontrol").chmod(0o755)
    return str(stub)


def env() -> dict[str, str]:
    """The environment of the local (non-SLURM) Snakemake runs of the tests.

    snakemake-executor-plugin-slurm runs ``scontrol show config`` whenever Snakemake loads
    its plugins (for a help text).  On a machine with Slurm's client tools but no reachable
    controller -- the test machines between the live-cluster tests -- that waits 10 s per
    Snakemake start; these runs never use SLURM, so they see an ``scontrol`` that fails at
    once, as on a machine without Slurm."""
    e = dict(os.environ)
    e["HF_HUB_OFFLINE"] = "1"
    e.pop("ISQAFLOW_SNAKEMAKE_COMMAND", None)
    e["PATH"] = _failing_scontrol() + os.pathsep + e.get("PATH", "")
    return e


def snakemake(workdir: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*SNAKEMAKE, *args], cwd=workdir, capture_output=True, text=True, timeout=timeout, env=env()
    )


def dry_run_jobs(workdir: Path, *args: str) -> dict[str, int]:
    """Jobs a dry run would execute, as {rule: count} (empty when there is nothing to do),
    with the local profile (the settings of `make run`)."""
    result = snakemake(
        workdir, "-n", "--profile", "profiles/local", "--cores", "2", *args, timeout=300
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    text = result.stdout + result.stderr
    if "Nothing to be done" in text:
        return {}
    table = text.split("Job stats:", 1)[1]
    jobs = {}
    for line in table.splitlines()[3:]:
        match = re.match(r"^(\S+)\s+(\d+)$", line.strip())
        if not match:
            break
        if match.group(1) != "total":
            jobs[match.group(1)] = int(match.group(2))
    return jobs


def complete_placeholder_copy(dest: Path) -> Path:
    """A copy of the repository whose embedded DAG is complete without running it: every output
    of ``--summary`` written as a placeholder, then touched in the DAG's order, so that a dry run
    plans nothing (tests/workflow/test_exact_reruns.py, test_checkout_mtimes.py)."""
    workdir = copy_repo(dest)
    summary = snakemake(workdir, "--summary", "--profile", "profiles/local", "--cores", "2")
    assert summary.returncode == 0, summary.stderr[-3000:]
    for line in summary.stdout.splitlines()[1:]:
        path = workdir / line.split("\t")[0]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("placeholder\n")
    # --forceall: every job touched and its metadata recorded, not only the jobs a dry run would
    # plan (without it a later checkout's mtimes replan the jobs whose records are missing)
    touched = snakemake(
        workdir, "--touch", "--forceall", "--profile", "profiles/local", "--cores", "2"
    )
    assert touched.returncode == 0, touched.stdout[-3000:] + touched.stderr[-3000:]
    assert dry_run_jobs(workdir) == {}
    return workdir
