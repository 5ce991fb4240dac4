"""The submit host's environment exactly as docs/paper-scale.md's step 1 builds it.

That ``.venv`` holds Snakemake and the SLURM executor plugin only (the pins of the step's
``pip install`` line); the workflow's parse (``Snakefile``, ``rules/*.smk`` and the parts of
``src/isqaflow`` they import) and its ``onstart`` (the API-model listing) run in it on the
submit host.  ``tests/docs/test_paper_scale_docs.py`` links ``.venv`` to the project's full
environment, so it cannot see a module the docs' venv lacks; this test builds the docs' venv
from the package index, once per machine (cached under the temporary folder, keyed by the
pins), and runs the workflow in it: a dry run of the embedded and the paper config, and a
real (non-dry) start whose onstart lists the API models at a local endpoint.  Without the
package index it skips, saying why, unless ``CI=true`` (then it fails).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import machine_lock
from test_api_models import ModelList
from test_paper_scale_docs import steps
from workflow_utils import copy_repo, env

pytestmark = pytest.mark.slow


def docs_pins() -> list[str]:
    """The requirement specifiers of the docs' ``.venv/bin/pip install`` line."""
    (line,) = [line for line in steps() if line.startswith(".venv/bin/pip install ")]
    return line.split("#", 1)[0].split()[2:]


def docs_venv_path(pins: list[str]) -> Path:
    key = hashlib.sha256(" ".join(sorted(pins)).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"isqaflow-docs-venv-{key}"


def build_docs_venv(pins: list[str]) -> Path:
    """The docs' step 1 (``python3 -m venv .venv``; ``.venv/bin/pip install <pins>``), once per
    machine; a venv left incomplete by an earlier try is built again."""
    venv = docs_venv_path(pins)
    with machine_lock(f"isqaflow-docs-venv-{venv.name}"):  # the rehearsal's worker builds it too
        return _build_docs_venv(venv, pins)


def _build_docs_venv(venv: Path, pins: list[str]) -> Path:
    if (venv / ".complete").exists():
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run(
        ["python3", "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300
    )
    result = subprocess.run(
        [str(venv / "bin/pip"), "install", "--disable-pip-version-check", *pins],
        check=False,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if result.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        message = f"the docs' venv could not be built ({' '.join(pins)}; no package index?):\n{result.stderr[-2000:]}"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    (venv / ".complete").write_text(" ".join(pins) + "\n")
    return venv


@pytest.fixture(scope="module")
def docs_checkout(tmp_path_factory) -> Path:
    """A copy of the repository whose ``.venv`` is the docs' venv."""
    venv = build_docs_venv(docs_pins())
    workdir = copy_repo(tmp_path_factory.mktemp("docs-venv-checkout"))
    (workdir / ".venv").symlink_to(venv)
    scimrc = workdir / "resources/local/scimrc/scimrc_train_dev.json"  # the docs' step 3, a stub
    scimrc.parent.mkdir(parents=True, exist_ok=True)
    scimrc.write_text("[]")
    return workdir


def docs_env(tmp_path: Path) -> dict[str, str]:
    """The docs' step 2 (placeholders), without the test process's own interpreter environment."""
    run_env = {
        k: v for k, v in env().items() if not k.startswith(("SLURM_", "VIRTUAL_ENV", "PYTHON"))
    }
    run_env.update(
        SLURM_ACCOUNT="acct",
        SLURM_CPU_PARTITION="cpu",
        SLURM_GPU_PARTITION="gpu",
        OPENAI_API_KEY="sk-placeholder",
        HF_TOKEN="hf_placeholder",
        HF_HOME=str(tmp_path / "hf"),
    )
    return run_env


def snakemake(workdir: Path, run_env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(workdir / ".venv/bin/snakemake"), *args],
        check=False,
        cwd=workdir,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_docs_venv_parses_the_workflow(docs_checkout, tmp_path):
    run_env = docs_env(tmp_path)
    for args in (
        ["--cores", "1"],
        ["--profile", "profiles/slurm", "--configfile", "config/paper.yaml"],
    ):
        result = snakemake(docs_checkout, run_env, *args, "-n")
        output = result.stdout + result.stderr
        assert result.returncode == 0 and "This was a dry-run" in output, output[-4000:]


def test_the_docs_venv_runs_the_onstart_api_check(docs_checkout, tmp_path):
    """A real start (not a dry run, so onstart runs): the API models are listed at their endpoint
    from the docs' venv. The config's judge is not listed there, so the run stops before any job
    with the project's message -- not with ``ModuleNotFoundError`` (the docs' venv has no openai)."""
    endpoint = ModelList(["gpt-4.1"])
    try:
        config = yaml.safe_load((docs_checkout / "config/config.yaml").read_text())
        config["models"]["api-judge"] = {
            "backend": "openai",
            "model": "gpt-4-0125-preview",
            "base_url": endpoint.url,
            "check_model": True,
        }
        (docs_checkout / "config/docs_venv_test.yaml").write_text(yaml.safe_dump(config))
        result = snakemake(
            docs_checkout,
            docs_env(tmp_path),
            "--cores",
            "1",
            "--configfile",
            "config/docs_venv_test.yaml",
        )
    finally:
        endpoint.close()
    output = result.stdout + result.stderr
    assert "ModuleNotFoundError" not in output, output[-4000:]
    assert result.returncode != 0, output[-4000:]
    assert "isqaflow: API models the endpoints do not serve; no job was started" in output, output[
        -4000:
    ]
    assert (
        f"models.api-judge.model: the endpoint {endpoint.url} does not serve 'gpt-4-0125-preview'"
        in output
    )
    assert endpoint.requests == ["GET /v1/models"]
    assert not (docs_checkout / "resources/models").exists()  # no job ran
