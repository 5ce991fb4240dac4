"""Helpers for tests that need the one-node SLURM cluster of tests/slurm/start_slurm.sh.

Every external command runs under ``timeout -s KILL``: a SLURM client waiting
on a dead daemon (or Snakemake waiting on a broken ``sacct``) would otherwise
hang the test session. Output goes to a temporary file, never to a pipe, so a
daemon that inherits the stream cannot keep the call from returning.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
START_SCRIPT = HERE / "start_slurm.sh"
STOP_SCRIPT = HERE / "stop_slurm.sh"

#: sacct columns read by :func:`sacct_jobs`; Comment is last because it is free text.
SACCT_FIELDS = (
    "JobID",
    "JobName",
    "State",
    "ExitCode",
    "Partition",
    "Account",
    "NodeList",
    "Submit",
    "AllocTRES",
    "ReqTRES",
    "ReqCPUS",
    "AllocCPUS",
    "WorkDir",
    "Comment",
)

_INFO_RE = re.compile(
    r"cluster ready: partition=(?P<partition>\S+) account=(?P<account>\S+) "
    r"node=(?P<node>\S+) base=(?P<base>\S+)"
)


class ClusterError(RuntimeError):
    """The cluster could not be started; ``output`` holds the start script's log."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text}\n{self.output}" if self.output else text


@dataclass(frozen=True)
class ClusterInfo:
    partition: str
    account: str
    node: str
    base: Path
    output: str  # the start script's log (timings included)


@dataclass(frozen=True)
class Result:
    returncode: int
    output: str  # stdout and stderr, interleaved

    @property
    def timed_out(self) -> bool:
        # timeout(1) exits 124 after TERM; a KILLed child makes it 137 (128 + 9)
        return self.returncode in (124, 137, -9)


def _root_prefix() -> list[str]:
    """How to run the start/stop scripts as root: directly, or via passwordless sudo."""
    if os.geteuid() == 0:
        return []
    env = [f"{k}={v}" for k, v in os.environ.items() if k.startswith("ISQAFLOW_SLURM_")]
    return ["sudo", "-n", "env", *env]


def run(
    cmd: list[str],
    timeout: float,
    cwd: str | os.PathLike | None = None,
    env: dict[str, str] | None = None,
) -> Result:
    """Run ``cmd`` under ``timeout -s KILL``; stdout and stderr are returned together."""
    with tempfile.TemporaryFile(mode="w+b") as out:
        proc = subprocess.run(
            ["timeout", "-s", "KILL", str(int(timeout)), *cmd],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            check=False,
        )
        out.seek(0)
        text = out.read().decode("utf-8", errors="replace")
    return Result(proc.returncode, text)


def cluster_available() -> tuple[bool, str]:
    """Whether this machine can host the test cluster at all (cheap checks only)."""
    if not os.path.exists("/etc/debian_version"):
        return False, "not a Debian-like system (no /etc/debian_version)"
    for tool in ("apt-get", "dpkg-query", "timeout", "bash"):
        if shutil.which(tool) is None:
            return False, f"{tool} not found"
    if os.geteuid() != 0:
        if shutil.which("sudo") is None:
            return False, "not root and sudo is not installed"
        probe = run(["sudo", "-n", "true"], timeout=10)
        if probe.returncode != 0:
            return False, "not root and no passwordless sudo"
    return True, "root" if os.geteuid() == 0 else "passwordless sudo"


def cluster_running() -> bool:
    """Whether a controller already answers (the cluster was started before)."""
    if shutil.which("scontrol") is None:
        return False
    res = run(["scontrol", "ping"], timeout=15)
    return res.returncode == 0 and "is UP" in res.output


def start_cluster(timeout: float = 300) -> ClusterInfo:
    """Run start_slurm.sh (installs packages on first use); raise ClusterError on failure."""
    ok, why = cluster_available()
    if not ok:
        raise ClusterError(f"cannot host a SLURM cluster here: {why}")
    res = run([*_root_prefix(), "bash", str(START_SCRIPT)], timeout=timeout)
    if res.timed_out:
        raise ClusterError(f"start_slurm.sh killed after {timeout:.0f}s", res.output)
    if res.returncode != 0:
        raise ClusterError(f"start_slurm.sh failed (exit {res.returncode})", res.output)
    match = _INFO_RE.search(res.output)
    if not match:
        raise ClusterError("start_slurm.sh did not print its 'cluster ready' line", res.output)
    return ClusterInfo(
        partition=match["partition"],
        account=match["account"],
        node=match["node"],
        base=Path(match["base"]),
        output=res.output,
    )


def stop_cluster(purge: bool = False, timeout: float = 120) -> Result:
    args = ["--purge"] if purge else []
    return run([*_root_prefix(), "bash", str(STOP_SCRIPT), *args], timeout=timeout)


def sacct_jobs(since: str | None = None, timeout: float = 30) -> list[dict[str, str]]:
    """Jobs known to the accounting database, one dict per job allocation.

    ``since`` is anything ``sacct --starttime`` accepts (``2025-01-31T12:00:00``,
    ``now-1hours``); by default the last two days. Keys are :data:`SACCT_FIELDS`.
    Each dict also gets ``gpus``: the GPU count in ReqTRES (0 when none was requested).
    """
    cmd = [
        "sacct",
        "-X",
        "-P",
        "-n",
        "--allusers",
        "--starttime",
        since or "now-2days",
        "--format=" + ",".join(SACCT_FIELDS),
    ]
    res = run(cmd, timeout=timeout)
    if res.returncode != 0:
        raise ClusterError(f"sacct failed (exit {res.returncode})", res.output)
    jobs = []
    for line in res.output.splitlines():
        if not line.strip():
            continue
        parts = line.split("|", len(SACCT_FIELDS) - 1)
        if len(parts) != len(SACCT_FIELDS):
            continue  # a warning line, not a record
        job = dict(zip(SACCT_FIELDS, parts))
        job["gpus"] = str(gpu_count(job["ReqTRES"]))
        jobs.append(job)
    return jobs


def gpu_count(tres: str) -> int:
    """GPUs in a TRES string such as ``cpu=1,gres/gpu:fake=1,gres/gpu=1,mem=500M``."""
    match = re.search(r"(?:^|,)gres/gpu=(\d+)", tres)
    return int(match.group(1)) if match else 0


def rule_of(job: dict[str, str]) -> str | None:
    """The Snakemake rule of a job submitted by snakemake-executor-plugin-slurm.

    Plugin 2.8.0 sets the job *name* to the run's UUID (it filters its status
    queries by name) and the *comment* to ``rule_<rule>`` or
    ``rule_<rule>_wildcards_<values>`` (``group_<group>`` for group jobs).
    The comment reaches sacct only with ``AccountingStoreFlags=job_comment``.
    """
    match = re.match(r"rule_(.+?)(?:_wildcards_.*)?$", job.get("Comment", ""))
    return match.group(1) if match else None
