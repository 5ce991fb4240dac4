"""The embedded default DAG through ``--profile profiles/slurm`` on a live SLURM cluster.

The cluster is the one-node cluster of tests/slurm/ (Debian's slurmctld, slurmd,
munge, slurmdbd + MariaDB so that ``sacct`` works, and one fake GPU).  The run uses
the embedded default with the model stages (fine-tuning and generation) asking for
a GPU, as they do at paper scale; every other stage is CPU-only.  The test checks
the results and, from ``sacct``, that exactly the GPU stages' jobs requested a GPU.
Then a model job is cancelled with ``scancel`` while it runs: the workflow must
notice, retry it from its call cache, and end with the uncancelled run's output.
In CI (CI=true) the test fails, never skips, when the cluster cannot start.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import sqlite3
import subprocess
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
    return {"result": result, "workdir": workdir, "since": since,
            "partition": slurm_cluster.partition, "account": slurm_cluster.account}


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


# ----------------------------------------------------------------------------- a cancelled job
CANCELLED_OUTPUT = "results/arena/judgments/bm25-k5/local.jsonl"  # arena_judge: one model job, many batches
MAX_STATUS_INTERVAL_S = 180  # the plugin's longest wait between two status queries (2.8.0)
CANCEL_RUN_TIMEOUT_S = 900  # one judge job and its retry; a run that never notices the cancel hangs


def _committed_calls(cache: Path) -> dict[str, float]:
    """key -> creation time of every call in a job's call cache (read while the job writes it)."""
    if not cache.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=5) as conn:
            return dict(conn.execute("SELECT key, created FROM calls").fetchall())
    except sqlite3.OperationalError:  # not created yet
        return {}


def _running_job(rule: str) -> str | None:
    """SLURM id of a RUNNING job of ``rule`` (the plugin puts rule_<rule>... into the comment)."""
    res = cluster.run(["squeue", "-h", "--states=RUNNING", "-o", "%i|%k"], timeout=30)
    for line in res.output.splitlines():
        job_id, _, comment = line.partition("|")
        if cluster.rule_of({"Comment": comment.strip()}) == rule:
            return job_id.strip()
    return None


@pytest.fixture(scope="module")
def cancelled_run(slurm_run, tmp_path_factory):
    """Rerun the arena judge of the finished run in a copy of it, ``scancel`` it once it has
    committed calls to its call cache, and let the workflow finish."""
    if slurm_run["result"].returncode != 0:
        pytest.fail(f"the uncancelled run failed\n{_context(slurm_run)}", pytrace=False)
    workdir = tmp_path_factory.mktemp("slurm-cancel") / "run"
    shutil.copytree(slurm_run["workdir"], workdir, symlinks=True)  # mtimes kept: only the judge reruns
    target, cache = workdir / CANCELLED_OUTPUT, workdir / (CANCELLED_OUTPUT + ".calls.sqlite")
    uncancelled = target.read_text()
    target.unlink()
    for stale in workdir.glob(CANCELLED_OUTPUT + ".calls.sqlite*"):
        stale.unlink()  # compute the calls again, so that there is something to cancel
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "SBATCH_", "SRUN_")) and k != "CUDA_VISIBLE_DEVICES"}
    env.update(SLURM_PARTITION=slurm_run["partition"], SLURM_ACCOUNT=slurm_run["account"], HF_HUB_OFFLINE="1")
    since = datetime.fromtimestamp(time.time() - 1).strftime("%Y-%m-%dT%H:%M:%S")
    log = workdir / "snakemake-cancel.log"
    with open(log, "w") as out:
        run = subprocess.Popen(
            ["timeout", "-s", "KILL", str(CANCEL_RUN_TIMEOUT_S), sys.executable, "-m", "snakemake", "--profile",
             "profiles/slurm", "--configfile", "config/slurm_test.yaml", "--jobs", "2",
             "--slurm-init-seconds-before-status-checks", "2", CANCELLED_OUTPUT],
            cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        )
        job_id, committed, cancelled_at = None, {}, None
        deadline = time.monotonic() + CANCEL_RUN_TIMEOUT_S
        while run.poll() is None and time.monotonic() < deadline:
            job_id = job_id or _running_job("arena_judge")
            committed = _committed_calls(cache) if job_id else {}
            if committed:
                cancelled_at = time.time()
                cluster.run(["scancel", job_id], timeout=30)
                break
            time.sleep(0.5)
        returncode = run.wait(timeout=CANCEL_RUN_TIMEOUT_S + 60)
    return {"returncode": returncode, "output": log.read_text(errors="replace"), "workdir": workdir,
            "since": since, "job_id": job_id, "committed": committed, "cancelled_at": cancelled_at,
            "uncancelled": uncancelled, "cache": cache}


def _same_records(a: str, b: str) -> None:
    """Equal JSON Lines, floats to 1e-4 (the retry batches the remaining calls differently)."""
    def same(x, y, where):
        if isinstance(x, float) or isinstance(y, float):
            assert isinstance(x, (int, float)) and isinstance(y, (int, float)), where
            assert math.isclose(x, y, rel_tol=1e-4, abs_tol=1e-4), (where, x, y)
        elif isinstance(x, dict):
            assert isinstance(y, dict) and x.keys() == y.keys(), where
            for key in x:
                same(x[key], y[key], f"{where}.{key}")
        elif isinstance(x, list):
            assert isinstance(y, list) and len(x) == len(y), where
            for i, (u, v) in enumerate(zip(x, y)):
                same(u, v, f"{where}[{i}]")
        else:
            assert x == y, (where, x, y)

    rows_a, rows_b = a.splitlines(), b.splitlines()
    assert len(rows_a) == len(rows_b)
    for n, (x, y) in enumerate(zip(rows_a, rows_b, strict=True), start=1):
        same(json.loads(x), json.loads(y), f"line {n}")


def test_a_cancelled_model_job_is_noticed_retried_from_its_cache_and_gives_the_same_output(cancelled_run):
    run = cancelled_run
    assert run["cancelled_at"] is not None, f"the arena judge was never seen running\n{run['output'][-6000:]}"
    assert run["returncode"] == 0, run["output"][-6000:]
    # noticed: with sacct as the status query the plugin reads "CANCELLED by 0" and waits forever
    match = re.search(r"\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]\nError in rule arena_judge:\n\s+message: SLURM-job "
                      rf"'{run['job_id']}' failed, SLURM status is: 'CANCELLED'", run["output"])
    assert match, run["output"][-6000:]
    noticed_at = datetime.strptime(match.group(1), "%a %b %d %H:%M:%S %Y").timestamp()
    assert noticed_at - run["cancelled_at"] <= MAX_STATUS_INTERVAL_S + 10, (noticed_at, run["cancelled_at"])
    # retried: a second arena_judge job that completed
    jobs = [j for j in cluster.sacct_jobs(since=run["since"], timeout=60)
            if os.path.realpath(j["WorkDir"]) == os.path.realpath(run["workdir"])
            and cluster.rule_of(j) == "arena_judge"]
    assert [j["State"].split()[0] for j in jobs] == ["CANCELLED", "COMPLETED"], jobs
    # the calls committed before the cancel were kept and not computed again (same creation time)
    after = _committed_calls(run["cache"])
    assert run["committed"] and all(after.get(k) == t for k, t in run["committed"].items())
    # and the judge wrote what the uncancelled run wrote
    _same_records((run["workdir"] / CANCELLED_OUTPUT).read_text(), run["uncancelled"])
