"""A fresh clone or a pull over old results plans nothing that did not change (issue 41).

A checkout gives every file it writes a new mtime. Snakemake's ``code`` rerun trigger compares
a ``script:``'s mtime with its outputs' (9.27.1, ``Job.outputs_older_than_script_or_notebook``),
so every job was replanned, "Code has changed since last execution"; the profiles leave that
trigger out and each script's content is a param of its rule (``version_scripts``,
rules/common.smk). The tracked inputs (``data/embedded/*``, the systems' files) are newer too:
Snakemake's ``mtime`` trigger passes over a newer input whose checksum is the one it recorded
(files up to ``--max-checksum-file-size``, 1 MB; no tracked file is larger).

The finished run is the embedded DAG's outputs as placeholders, "run" with ``--touch
--forceall`` so that every job has its metadata with its input checksums, as a real run
records them (~40 s here, the dry runs ~10 s each).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from workflow_utils import complete_placeholder_copy, dry_run_jobs, repo_files

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return complete_placeholder_copy(tmp_path_factory.mktemp("checkout"))


def test_a_fresh_checkout_over_old_results_plans_nothing(finished):
    """Before: all 58 jobs, "Code has changed since last execution"."""
    later = time.time() + 60
    for relative in repo_files():  # what `git clone` / `git pull` does to every file it writes
        os.utime(finished / relative, (later, later))
    assert dry_run_jobs(finished) == {}


def test_an_edited_script_reruns_its_jobs(finished):
    script = finished / "scripts/isqa_tables.py"
    original = script.read_bytes()
    script.write_bytes(original + b"# edited\n")
    try:
        assert dry_run_jobs(finished) == {
            "isqa_tables": 1,
            "manifest": 1,
            "table_html": 1,
            "all": 1,
        }
    finally:
        script.write_bytes(original)
    assert dry_run_jobs(finished) == {}  # the content, not the mtime
