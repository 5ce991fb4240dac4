"""The embedded default DAG through ``--profile profiles/slurm`` on a live SLURM cluster.

The cluster is the one-node cluster of tests/slurm/ (Debian's slurmctld, slurmd,
munge, slurmdbd + MariaDB so that ``sacct`` works, and one fake GPU).  The run uses
the embedded default with the model stages (fine-tuning and generation) asking for
a GPU, as they do at paper scale; every other stage is CPU-only.  The test checks
the results and, from ``sacct``, that exactly the GPU stages' jobs requested a GPU.
In CI (CI=true) the test fails, never skips, when the cluster cannot start.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from conftest import slurm_helpers
from workflow_utils import copy_repo

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

cluster = slurm_helpers()
RUN_TIMEOUT_S = 3600
GPU_STAGES = {"finetune", "generate"}  # resources sections that ask for the fake GPU
GPU_RULES = {
    "finetune_feedback", "evaluate_feedback", "generate_questions", "baseline_summaries", "generic_feedback",
    "isqa_refine", "score_summaries", "drfr_responses", "rag_answers",
}


@pytest.fixture(scope="module")
def slurm_run(slurm_cluster, tmp_path_factory):
    workdir = copy_repo(tmp_path_factory.mktemp("slurm-embedded"))
    config = yaml.safe_load((workdir / "config/config.yaml").read_text())
    for stage in GPU_STAGES:
        config["resources"].setdefault(stage, {})["gpu"] = 1
    (workdir / "config/slurm_test.yaml").write_text(yaml.safe_dump(config))
    # Jobs inherit this environment (sbatch --export=ALL): no SLURM_* of an enclosing
    # job and no real GPU mask may leak in; partition and account feed the profile.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "SBATCH_", "SRUN_")) and k != "CUDA_VISIBLE_DEVICES"}
    env.update(SLURM_PARTITION=slurm_cluster.partition, SLURM_ACCOUNT=slurm_cluster.account, HF_HUB_OFFLINE="1")
    since = datetime.fromtimestamp(time.time() - 1).strftime("%Y-%m-%dT%H:%M:%S")
    started = time.monotonic()
    result = cluster.run(
        [sys.executable, "-m", "snakemake", "--profile", "profiles/slurm", "--configfile", "config/slurm_test.yaml",
         "--jobs", "4", "--slurm-init-seconds-before-status-checks", "2"],
        timeout=RUN_TIMEOUT_S, cwd=workdir, env=env,
    )
    wall = time.monotonic() - started
    print(f"\nembedded DAG through SLURM: exit {result.returncode} after {wall:.0f}s")
    return {"result": result, "workdir": workdir, "since": since}


def _context(run) -> str:
    logs = sorted((run["workdir"] / ".snakemake" / "slurm_logs").rglob("*.log"))
    tails = "\n".join(f"----- {p}\n{p.read_text(errors='replace')[-2000:]}" for p in logs[-5:])
    return f"{run['result'].output[-6000:]}\n{tails}"


def test_embedded_dag_runs_to_the_end_through_slurm(slurm_run):
    result = slurm_run["result"]
    assert not result.timed_out, f"killed after {RUN_TIMEOUT_S}s\n{_context(slurm_run)}"
    assert result.returncode == 0, _context(slurm_run)
    workdir: Path = slurm_run["workdir"]
    for name in ("isqa_table1.csv", "drfr_table5.csv", "arena_ratings.csv", "arena_win_rates.csv"):
        assert (workdir / "results/tables" / name).stat().st_size > 0, name
    assert (workdir / "results/manifest.json").exists()
    assert (workdir / "results/finetune/smollm2-hotpotqa/adapter/adapter_model.safetensors").exists()


def test_gpu_stages_and_only_they_requested_a_gpu(slurm_run):
    if slurm_run["result"].returncode != 0:
        pytest.fail(f"workflow failed\n{_context(slurm_run)}", pytrace=False)
    workdir = os.path.realpath(slurm_run["workdir"])
    jobs = [j for j in cluster.sacct_jobs(since=slurm_run["since"], timeout=60)
            if os.path.realpath(j["WorkDir"]) == workdir]
    by_rule: dict[str, list[dict]] = {}
    for job in jobs:
        by_rule.setdefault(cluster.rule_of(job), []).append(job)
    assert GPU_RULES <= set(by_rule), sorted(by_rule)
    assert {"convert_papers", "retrieve", "drfr_judge", "arena_judge", "isqa_tables"} <= set(by_rule)
    for rule, rule_jobs in by_rule.items():
        for job in rule_jobs:
            assert job["State"] == "COMPLETED", job
            requested = cluster.gpu_count(job["ReqTRES"])
            assert requested == (1 if rule in GPU_RULES else 0), (rule, job["ReqTRES"])
