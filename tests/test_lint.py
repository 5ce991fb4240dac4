"""The workflow passes Snakemake's linter and snakefmt, as the project holds itself to."""

from __future__ import annotations

import subprocess
import sys

from workflow_utils import REPO, env


def test_snakemake_lint_is_clean():
    result = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=REPO, capture_output=True, text=True,
                            timeout=300, env=env())
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "Lints for" not in output, output[-3000:]


def test_snakefmt_check_is_clean():
    result = subprocess.run([sys.executable, "-m", "snakefmt", "--check", "Snakefile", "rules/"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
