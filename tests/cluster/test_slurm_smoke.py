"""End-to-end smoke test of the SLURM executor on a one-node cluster on localhost.

The module fixture starts the cluster with tests/slurm/start_slurm.sh (root on
Debian; installs slurm/munge/mariadb on first use, ~20-30 s, ~10 s later).
If it cannot start, the tests FAIL when CI=true and SKIP otherwise. The cluster
is stopped afterwards only if this module started it (ISQAFLOW_SLURM_KEEP=1
keeps it running).

Then the smoke workflow (tests/slurm/smoke) runs through snakemake-executor-plugin-slurm
and the tests check the outputs and, through sacct, that only the GPU rule's
job asked SLURM for a GPU.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from conftest import slurm_helpers

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "tests" / "slurm" / "smoke"
SNAKEMAKE_TIMEOUT_S = 300

cluster = slurm_helpers()

pytestmark = pytest.mark.slurm


def _profile_defaults() -> dict[str, str]:
    """slurm_partition / slurm_account from the smoke profile, outer quotes removed."""
    import yaml

    config = yaml.safe_load((SMOKE / "profile" / "config.yaml").read_text())
    return {k: str(v).strip("'\"") for k, v in config["default-resources"].items()}


def _slurm_logs(workdir: Path) -> str:
    parts = []
    for log in sorted((workdir / ".snakemake" / "slurm_logs").rglob("*.log")):
        parts.append(f"----- {log}\n{log.read_text(errors='replace')[-3000:]}")
    return "\n".join(parts)


@pytest.fixture(scope="module")
def smoke_run(slurm_cluster, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("slurm-smoke")
    # The jobs inherit this environment (sbatch --export=ALL): drop anything that
    # would fake a GPU or confuse sbatch when pytest itself runs inside a job.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLURM_", "SBATCH_", "SRUN_")) and k != "CUDA_VISIBLE_DEVICES"
    }
    local = Path(sys.executable).with_name("snakemake")
    snakemake = str(local) if local.exists() else "snakemake"
    # sacct --starttime has a resolution of seconds; step back one to be safe.
    since = datetime.fromtimestamp(time.time() - 1).strftime("%Y-%m-%dT%H:%M:%S")
    t0 = time.monotonic()
    result = cluster.run(
        [
            snakemake,
            "--snakefile",
            str(SMOKE / "Snakefile"),
            "--profile",
            str(SMOKE / "profile"),
            "--directory",
            str(workdir),
        ],
        timeout=SNAKEMAKE_TIMEOUT_S,
        cwd=REPO,
        env=env,
    )
    wall = time.monotonic() - t0
    print(f"\nsmoke workflow: exit {result.returncode} after {wall:.1f}s")
    return {"result": result, "workdir": workdir, "since": since, "wall_s": wall}


def _read_probe(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def _failure_context(run) -> str:
    return f"snakemake output:\n{run['result'].output[-6000:]}\n{_slurm_logs(run['workdir'])}"


def test_profile_matches_cluster(slurm_cluster):
    defaults = _profile_defaults()
    assert defaults["slurm_partition"] == slurm_cluster.partition
    assert defaults["slurm_account"] == slurm_cluster.account


def test_smoke_workflow_completes(smoke_run):
    result = smoke_run["result"]
    assert not result.timed_out, (
        f"snakemake killed after {SNAKEMAKE_TIMEOUT_S}s\n{_failure_context(smoke_run)}"
    )
    assert result.returncode == 0, _failure_context(smoke_run)
    for name in ("cpu.txt", "gpu.txt"):
        assert (smoke_run["workdir"] / name).is_file(), (
            f"{name} missing\n{_failure_context(smoke_run)}"
        )


def test_gpu_rule_sees_one_gpu(smoke_run):
    gpu_file = smoke_run["workdir"] / "gpu.txt"
    cpu_file = smoke_run["workdir"] / "cpu.txt"
    if not gpu_file.is_file() or not cpu_file.is_file():
        pytest.fail(f"workflow outputs missing\n{_failure_context(smoke_run)}", pytrace=False)
    gpu, cpu = _read_probe(gpu_file), _read_probe(cpu_file)
    # One device of the node's four fake GPUs (gpu:fake:4): which one SLURM binds depends on
    # what else runs -- the dress rehearsal's model jobs share the cluster in CI -- so the test
    # checks that exactly one index is visible, not that it is the first.
    assert gpu["CUDA_VISIBLE_DEVICES"] in {"0", "1", "2", "3"}, gpu
    assert cpu["CUDA_VISIBLE_DEVICES"] == "unset", cpu
    assert gpu["SLURM_JOB_ID"].isdigit() and cpu["SLURM_JOB_ID"].isdigit()


def _smoke_jobs(run, expected: set[str], timeout_s: float = 30) -> dict[str, dict[str, str]]:
    """The sacct records of this run's jobs, by rule; waits for slurmdbd to catch up."""
    workdir = os.path.realpath(run["workdir"])
    deadline = time.monotonic() + timeout_s
    while True:
        jobs = [
            j
            for j in cluster.sacct_jobs(since=run["since"])
            if os.path.realpath(j["WorkDir"]) == workdir
        ]
        by_rule = {cluster.rule_of(j): j for j in jobs}
        done = all(by_rule.get(r, {}).get("State") == "COMPLETED" for r in expected)
        if done or time.monotonic() > deadline:
            return by_rule
        time.sleep(1)


def test_sacct_shows_gpu_request_only_for_gpu_rule(slurm_cluster, smoke_run):
    if smoke_run["result"].returncode != 0:
        pytest.fail(f"workflow failed\n{_failure_context(smoke_run)}", pytrace=False)
    by_rule = _smoke_jobs(smoke_run, {"cpu_probe", "gpu_probe"})
    assert set(by_rule) == {"cpu_probe", "gpu_probe"}, by_rule
    gpu, cpu = by_rule["gpu_probe"], by_rule["cpu_probe"]

    # The plugin names every job after the run's UUID and puts the rule in the comment.
    assert gpu["JobName"] == cpu["JobName"]
    assert gpu["Comment"] == "rule_gpu_probe" and cpu["Comment"] == "rule_cpu_probe"
    for job in (gpu, cpu):
        assert job["State"] == "COMPLETED", job
        assert job["Partition"] == slurm_cluster.partition, job
        assert job["Account"] == slurm_cluster.account, job

    assert "gres/gpu" in gpu["ReqTRES"] and cluster.gpu_count(gpu["ReqTRES"]) == 1, gpu
    assert cluster.gpu_count(gpu["AllocTRES"]) == 1, gpu
    assert "gres/gpu" not in cpu["ReqTRES"] and "gres/gpu" not in cpu["AllocTRES"], cpu

    # The job ids the jobs saw themselves are the ones sacct reports for their rules.
    workdir = smoke_run["workdir"]
    assert _read_probe(workdir / "gpu.txt")["SLURM_JOB_ID"] == gpu["JobID"]
    assert _read_probe(workdir / "cpu.txt")["SLURM_JOB_ID"] == cpu["JobID"]
