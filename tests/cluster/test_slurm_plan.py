"""The jobs tests/cluster/test_slurm.py sends through SLURM, planned without a cluster (a dry run).

The live test runs only the embedded DAG's SLURM-specific jobs (its RERUN, forced, up to its
TARGETS) on a copy of the local run. Its sacct checks need a job of every GPU rule, of the
two-thread conversion stage and of the CPU stages it names; a change to the DAG that moved one of
them off that plan would fail there only after the cluster and the embedded run. This test
checks the plan in seconds, on a copy of the repository whose outputs all exist (empty files,
each newer than its inputs), so that it is the fast tier's.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from test_slurm import (
    CANCELLED_OUTPUT,
    GPU_RULES,
    MULTI_THREAD_RULES,
    RERUN,
    SERVED_RESPONDER,
    TARGETS,
    slurm_config,
)
from workflow_utils import copy_repo, snakemake

# The CPU stages test_gpu_stages_and_only_they_requested_a_gpu finds in sacct.
CPU_RULES = {
    "convert_papers",
    "retrieve",
    "drfr_judge",
    "arena_judge",
    "isqa_tables",
    "validity_table",
}


def _planned(workdir: Path, *args: str) -> list[tuple[str, list[str]]]:
    """(rule, outputs) of each job a dry run would execute, in the order it lists them."""
    result = snakemake(workdir, "-n", "--profile", "profiles/local", "--cores", "2", *args)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", result.stdout + result.stderr):
        rule = re.match(r"(?:local)?rule (\w+):\n", block)
        if rule:
            files = []
            for key in ("output", "benchmark"):
                line = re.search(rf"^\s+{key}: (.*)$", block, re.M)
                files += [f.strip() for f in line.group(1).split(",")] if line else []
            jobs.append((rule.group(1), files))
    return jobs


def test_the_slurm_run_plans_a_job_of_every_rule_its_checks_need(tmp_path):
    workdir = copy_repo(tmp_path)
    every = _planned(workdir, "--forceall")
    # every output present, each job's a second newer than the one before (the listing is in
    # the DAG's order), all newer than the repository's files: the local run, up to date
    now = time.time()
    for n, (_, files) in enumerate(every):
        for rel in files:
            path = workdir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
            os.utime(path, (now + n, now + n))
    for rel in RERUN:
        (workdir / rel).unlink()
    configfile = slurm_config(workdir)
    plan = _planned(workdir, *TARGETS, "--configfile", configfile, "--forcerun", *RERUN)
    rules = {rule for rule, _ in plan}
    assert GPU_RULES <= rules, sorted(GPU_RULES - rules)
    assert CPU_RULES <= rules, sorted(CPU_RULES - rules)
    assert MULTI_THREAD_RULES & rules
    outputs = {f for _, files in plan for f in files}
    # the served responder, the job to cancel and the fine-tuning are among them
    assert {
        f"results/drfr/responses/infobench/{SERVED_RESPONDER}.jsonl",
        CANCELLED_OUTPUT,
    } <= outputs
    assert "finetune_feedback" in rules
    # and the plan is the SLURM-specific part, not the DAG again (87 jobs: 23 when written)
    assert len(plan) < len(every) / 2, (len(plan), len(every))
