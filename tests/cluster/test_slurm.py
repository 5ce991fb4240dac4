"""The embedded default DAG's SLURM-specific jobs through ``--profile profiles/slurm`` on a live
SLURM cluster.

The cluster is the one-node cluster of tests/slurm/ (Debian's slurmctld, slurmd,
munge, slurmdbd + MariaDB so that ``sacct`` works, and four fake GPUs).  The run starts
from the session's complete local run (``embedded_run`` in tests/conftest.py): a fresh
copy of the repository with that run's converted model and results, copied with their
modification times, so that Snakemake finds them up to date.  Only the jobs that test
something SLURM-specific run again (``RERUN``: their outputs are removed from the copy and
forced; the targets, ``TARGETS``, bound the jobs after them): a conversion job of the two-thread stage,
every model stage (the ISQA stages after the papers' conversion, the fine-tuning, the
InFoBench responder, the arena's retrieval, answers and judges) asking for a GPU as at paper
scale, every other stage CPU-only, and the tables after them -- while finished model calls
come from the local run's caches, as after a resubmission on a real cluster.  The rest of
the DAG (the HTML tables, browsers, audits, leaderboard, manifest) does nothing SLURM-specific
and stays the local run's: tests/workflow/test_workflow.py tests it.  Three things run for real:

* the fine-tuning (it keeps no call cache);
* one model stage through a managed server: the InFoBench responder ``smollm2`` is
  served by ``transformers serve`` (``serve:``, standing in for vLLM) inside its job's
  allocation, and talked to through the OpenAI-compatible API;
* a cancelled job: the arena judge's call cache is dropped, so it computes its calls;
  once it has committed some, it is ``scancel``-ed while it runs.  The workflow must
  notice (squeue status: "CANCELLED", not sacct's "CANCELLED by <uid>"), retry it,
  keep the calls committed before the cancel, and end with the local run's output.

The tables the SLURM run wrote again must equal the local run's, byte for byte.  From
``sacct``: exactly the GPU stages' jobs requested a GPU, and the conversion jobs, given two
threads, asked for and got two CPUs (``ReqCPUS``, ``AllocCPUS``).  In CI (CI=true) the test
fails, never skips, when the cluster cannot start.
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
RUN_TIMEOUT_S = 2400
GPU_STAGES = {"finetune", "generate"}  # resources sections that ask for the fake GPU
# A CPU stage with two threads (conversion: pure Python, so its outputs do not depend on them):
# its jobs must be submitted with --cpus-per-task=2 and get two CPUs.
MULTI_THREAD_STAGE, MULTI_THREAD_THREADS = "data", 2
MULTI_THREAD_RULES = {"convert_papers", "convert_qa_train", "convert_instructions", "convert_rag"}
GPU_RULES = {
    "gpu_smoke",  # before every GPU job (rules/models.smk): the served responder's engine, in-process smollm2
    "finetune_feedback",
    "evaluate_feedback",
    "generate_questions",
    "baseline_summaries",
    "generic_feedback",
    "isqa_refine",
    "score_summaries",
    "metric_controls",
    "drfr_responses",
    "rag_answers",
    # the validity table's Arena-Hard controls read its answers; it waits for the smoke job's
    # record, which the SLURM config's served responder makes again
    "arena_hard_answers",
}
SERVED_RESPONDER = "smollm2"  # drfr.responders.<this> runs through transformers serve
CANCELLED_RULE = "arena_judge"
CANCELLED_OUTPUT = "results/arena/judgments/bm25-k5/local.jsonl"  # one model job, many batches
MAX_STATUS_INTERVAL_S = 180  # the plugin's longest wait between two status queries (2.8.0)


def slurm_config(workdir: Path) -> str:
    """The embedded config with GPU stages and the served responder; returns its path."""
    config = yaml.safe_load((workdir / "config/config.yaml").read_text())
    for stage in GPU_STAGES:
        config["resources"].setdefault(stage, {})["gpu"] = 1
    config["resources"].setdefault(MULTI_THREAD_STAGE, {})["threads"] = MULTI_THREAD_THREADS
    # The cluster's GPUs are fake (GRES on /dev/null): the in-process models say CPU on purpose, as
    # a job given a GPU that finds no CUDA device otherwise stops (isqaflow.devices.NoGPUError).
    # The device is no part of a model's call-cache identity: the local run's caches still serve.
    for entry in config["models"].values():
        if entry.get("backend", "hf") == "hf":
            entry["device"] = "cpu"
    served = dict(config["models"]["smollm2"])
    transformers = Path(sys.executable).with_name("transformers")
    served["serve"] = {
        "engine": "transformers",
        "command": f"{transformers} serve {{model}} --host {{host}} --port {{port}} --device cpu --dtype float32",
        "ready_timeout": 300,
    }
    config["models"]["smollm2-served"] = served
    config["drfr"]["responders"][SERVED_RESPONDER]["model"] = "smollm2-served"
    (workdir / "config/slurm_test.yaml").write_text(yaml.safe_dump(config))
    return "config/slurm_test.yaml"


# The outputs made again (removed from the copy of the local run and named to --forcerun: Snakemake
# does not remake a missing file whose users are up to date): the jobs that make them, and the jobs
# after them on the way to TARGETS, run through SLURM -- 23 of the DAG's 87 jobs.
RERUN = (
    "results/data/papers/qasper.jsonl",  # convert_papers (two threads): then every ISQA stage
    "results/data/qa/hotpotqa.dev.jsonl",  # convert_qa_train (two threads): the adapter's evaluation
    "results/finetune/smollm2-hotpotqa/adapter/adapter_model.safetensors",  # the fine-tuning, for real
    f"results/drfr/responses/infobench/{SERVED_RESPONDER}.jsonl",  # the served responder
    "results/arena/retrieval/fiqa/bm25.jsonl",  # retrieve: then the arena's answers and judges
    CANCELLED_OUTPUT,
)
# What the SLURM run makes: the jobs on the way to these files that RERUN makes stale.
TARGETS = (
    "results/finetune/smollm2-hotpotqa/eval.json",  # evaluate_feedback
    "results/figures/isqa_figure3_qasper.png",  # isqa_tables: its model stages before it
    "results/validity/summary.json",  # validity_table: the judges and their controls
)


def resume_from(local: Path, workdir: Path) -> None:
    """The local run's converted model, call caches and results (modification times kept, so that
    they are up to date), less the outputs of RERUN; the cancelled judge's call cache dropped."""
    for tree in ("resources", "results"):
        shutil.copytree(local / tree, workdir / tree, symlinks=True)
    for rel in RERUN:
        (workdir / rel).unlink()
    for stale in workdir.glob(CANCELLED_OUTPUT + ".calls.sqlite*"):
        stale.unlink()  # the judge computes its calls again, so that there is something to cancel


def _written(workdir: Path, since: float) -> list[Path]:
    """The tables (relative paths) the SLURM run wrote, newer than ``since``."""
    return sorted(
        p.relative_to(workdir)
        for p in (workdir / "results/tables").iterdir()
        if p.stat().st_mtime >= since
    )


def _committed_calls(cache: Path) -> dict[str, float]:
    """key -> creation time of every call in a job's call cache (read while the job writes it)."""
    if not cache.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=5) as conn:
            return dict(conn.execute("SELECT key, created FROM calls").fetchall())
    except sqlite3.OperationalError:  # not created yet
        return {}


def _running_job(rule: str, workdir: Path) -> str | None:
    """SLURM id of a RUNNING job of ``rule`` (the plugin puts rule_<rule>... into the comment)
    started from ``workdir``: the dress rehearsal may share the cluster (the slow tier's two
    xdist workers) and has a job of the same rule."""
    res = cluster.run(["squeue", "-h", "--states=RUNNING", "-o", "%i|%k|%Z"], timeout=30)
    for line in res.output.splitlines():
        job_id, comment, job_dir = (line.split("|", 2) + ["", ""])[:3]
        if cluster.rule_of({"Comment": comment.strip()}) == rule and os.path.realpath(
            job_dir.strip()
        ) == os.path.realpath(workdir):
            return job_id.strip()
    return None


@pytest.fixture(scope="module")
def slurm_run(slurm_cluster, embedded_run, tmp_path_factory):
    workdir = copy_repo(tmp_path_factory.mktemp("slurm-embedded"))
    resume_from(embedded_run, workdir)
    configfile = slurm_config(workdir)
    # Jobs inherit this environment (sbatch --export=ALL): no SLURM_* of an enclosing
    # job and no real GPU mask may leak in; partition and account feed the profile.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLURM_", "SBATCH_", "SRUN_")) and k != "CUDA_VISIBLE_DEVICES"
    }
    env.update(
        SLURM_PARTITION=slurm_cluster.partition,
        SLURM_ACCOUNT=slurm_cluster.account,
        HF_HUB_OFFLINE="1",
    )
    since = datetime.fromtimestamp(time.time() - 1).strftime("%Y-%m-%dT%H:%M:%S")
    cache = workdir / (CANCELLED_OUTPUT + ".calls.sqlite")
    log = workdir / "snakemake-slurm.log"
    started, started_at = time.monotonic(), time.time()
    with open(log, "w") as out:
        # six jobs at once: the test cluster shares its CPUs and has four fake GPUs
        # (tests/slurm/start_slurm.sh); most jobs resume from call caches and wait on the scheduler
        run = subprocess.Popen(
            [
                "timeout",
                "-s",
                "KILL",
                str(RUN_TIMEOUT_S),
                sys.executable,
                "-m",
                "snakemake",
                "--profile",
                "profiles/slurm",
                "--configfile",
                configfile,
                "--jobs",
                "6",
                "--slurm-init-seconds-before-status-checks",
                "2",
                *TARGETS,
                "--forcerun",
                *RERUN,
            ],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        job_id, committed, cancelled_at = None, {}, None
        while run.poll() is None:  # cancel the judge once, after it has committed calls
            if cancelled_at is None:
                job_id = _running_job(CANCELLED_RULE, workdir)
                committed = _committed_calls(cache) if job_id else {}
                if committed:
                    cancelled_at = time.time()
                    cluster.run(["scancel", job_id], timeout=30)
            time.sleep(0.5)
        returncode = run.wait()
    wall = time.monotonic() - started
    jobs = len(re.findall(r"Job \d+ has been submitted with SLURM jobid", log.read_text()))
    print(
        f"\nthe embedded DAG's SLURM-specific jobs through SLURM: exit {returncode} after {wall:.0f}s"
        f" ({jobs} sbatch submissions)"
    )
    return {
        "returncode": returncode,
        "output": log.read_text(errors="replace"),
        "workdir": workdir,
        "local": embedded_run,
        "since": since,
        "job_id": job_id,
        "committed": committed,
        "cancelled_at": cancelled_at,
        "cache": cache,
        "started_at": started_at,
        "written": _written(workdir, started_at),
    }


def _context(run) -> str:
    logs = sorted((run["workdir"] / ".snakemake" / "slurm_logs").rglob("*.log"))
    tails = "\n".join(f"----- {p}\n{p.read_text(errors='replace')[-2000:]}" for p in logs[-5:])
    return f"{run['output'][-6000:]}\n{tails}"


def _jobs(run) -> list[dict[str, str]]:
    workdir = os.path.realpath(run["workdir"])
    return [
        j
        for j in cluster.sacct_jobs(since=run["since"], timeout=60)
        if os.path.realpath(j["WorkDir"]) == workdir
    ]


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


def test_the_slurm_jobs_write_the_local_runs_tables(slurm_run):
    assert slurm_run["returncode"] == 0, _context(slurm_run)
    workdir, local = slurm_run["workdir"], slurm_run["local"]
    tables = sorted(p.relative_to(local) for p in (local / "results/tables").iterdir())
    assert len(tables) > 60
    for table in tables:
        assert (workdir / table).read_bytes() == (local / table).read_bytes(), table
    # the tables after the SLURM jobs were written again (the ISQA and validity tables), from the
    # adapter fine-tuned again, the served responses and the retried judge
    written = {str(p) for p in slurm_run["written"]}
    assert {"results/tables/isqa_table1.csv", "results/tables/validity.csv"} <= written, sorted(
        written
    )
    assert (workdir / "results/manifest.json").exists()
    adapter = workdir / "results/finetune/smollm2-hotpotqa/adapter/adapter_model.safetensors"
    assert adapter.exists() and adapter.stat().st_mtime >= slurm_run["started_at"]


def test_gpu_stages_and_only_they_requested_a_gpu(slurm_run):
    if slurm_run["returncode"] != 0:
        pytest.fail(f"workflow failed\n{_context(slurm_run)}", pytrace=False)
    by_rule: dict[str, list[dict]] = {}
    for job in _jobs(slurm_run):
        by_rule.setdefault(cluster.rule_of(job), []).append(job)
    assert GPU_RULES <= set(by_rule), sorted(by_rule)
    assert {
        "convert_papers",
        "retrieve",
        "drfr_judge",
        "arena_judge",
        "isqa_tables",
        "validity_table",
    } <= set(by_rule)
    for rule, rule_jobs in by_rule.items():
        for job in rule_jobs:
            assert job["State"].split()[0] in (
                ("CANCELLED", "COMPLETED") if rule == CANCELLED_RULE else ("COMPLETED",)
            ), job
            requested = cluster.gpu_count(job["ReqTRES"])
            assert requested == (1 if rule in GPU_RULES else 0), (rule, job["ReqTRES"])


def test_a_multi_thread_job_asked_for_and_got_its_cpus(slurm_run):
    if slurm_run["returncode"] != 0:
        pytest.fail(f"workflow failed\n{_context(slurm_run)}", pytrace=False)
    jobs = [j for j in _jobs(slurm_run) if cluster.rule_of(j) in MULTI_THREAD_RULES]
    assert jobs, "no job of the two-thread stage in sacct"
    for job in jobs:
        # ReqCPUS: --cpus-per-task x --ntasks (1); AllocCPUS may round up to whole cores
        assert int(job["ReqCPUS"]) == MULTI_THREAD_THREADS, job
        assert int(job["AllocCPUS"]) >= MULTI_THREAD_THREADS, job


def test_a_served_model_stage_runs_in_its_jobs_allocation(slurm_run):
    """The served responder: a server started and stopped inside its SLURM job, its usage recorded."""
    if slurm_run["returncode"] != 0:
        pytest.fail(f"workflow failed\n{_context(slurm_run)}", pytrace=False)
    workdir = slurm_run["workdir"]
    log = (workdir / f"logs/drfr_responses/infobench/{SERVED_RESPONDER}.log").read_text()
    assert "server ready" in log and "server stopped" in log, log[-3000:]
    usage = yaml.safe_load(
        (
            workdir / f"results/drfr/responses/infobench/{SERVED_RESPONDER}.jsonl.usage.json"
        ).read_text()
    )
    (entry,) = usage["models"]
    assert (
        entry["backend"] == "served"
        and entry["server"]["engine"] == "transformers"
        and entry["requests"] > 0
    )


def test_a_cancelled_model_job_is_noticed_retried_from_its_cache_and_gives_the_same_output(
    slurm_run,
):
    run = slurm_run
    assert run["cancelled_at"] is not None, (
        f"the arena judge was never seen running\n{run['output'][-6000:]}"
    )
    assert run["returncode"] == 0, run["output"][-6000:]
    # noticed: with sacct as the status query the plugin reads "CANCELLED by 0" and waits forever
    match = re.search(
        rf"\[(\w{{3}} \w{{3}} +\d+ [\d:]+ \d{{4}})\]\nError in rule {CANCELLED_RULE}:\n\s+message: "
        rf"SLURM-job '{run['job_id']}' failed, SLURM status is: 'CANCELLED'",
        run["output"],
    )
    assert match, run["output"][-6000:]
    noticed_at = datetime.strptime(match.group(1), "%a %b %d %H:%M:%S %Y").timestamp()
    assert noticed_at - run["cancelled_at"] <= MAX_STATUS_INTERVAL_S + 10, (
        noticed_at,
        run["cancelled_at"],
    )
    # retried: a second job of the same rule and wildcards that completed (the plugin's comment
    # names both; the default's second arena judge has an arena_judge job of its own)
    every = _jobs(run)
    cancelled = next(j for j in every if j["JobID"] == str(run["job_id"]))
    assert cluster.rule_of(cancelled) == CANCELLED_RULE, cancelled
    jobs = [j for j in every if j.get("Comment") == cancelled.get("Comment")]
    assert [j["State"].split()[0] for j in jobs] == ["CANCELLED", "COMPLETED"], jobs
    # the calls committed before the cancel were kept and not computed again (same creation time)
    after = _committed_calls(run["cache"])
    assert run["committed"] and all(after.get(k) == t for k, t in run["committed"].items())
    # and the judge wrote what the uncancelled local run wrote
    _same_records(
        (run["workdir"] / CANCELLED_OUTPUT).read_text(),
        (run["local"] / CANCELLED_OUTPUT).read_text(),
    )
