"""The tracker's export in the DAG (config key tracking; issue 41): off by default (no job),
on it plans one track_run after the manifest; on without MLflow it refuses before any job,
naming the key and the install command."""

from __future__ import annotations

import importlib.util

import pytest
from workflow_utils import REPO, dry_run_jobs, snakemake

HAS_MLFLOW = importlib.util.find_spec("mlflow") is not None


def _overlay(tmp_path):
    path = tmp_path / "tracking.yaml"
    path.write_text(f"tracking: {{enabled: true, uri: {tmp_path / 'mlruns'}}}\n")
    return str(path)


@pytest.mark.skipif(HAS_MLFLOW, reason="MLflow is installed here: the refusal cannot be seen")
def test_tracking_on_without_mlflow_refuses_before_any_job(tmp_path):
    result = snakemake(
        REPO, "-n", "--profile", "profiles/local", "--configfile", _overlay(tmp_path)
    )
    text = result.stdout + result.stderr
    assert result.returncode == 1
    assert (
        "tracking.enabled: true, but MLflow is not installed in this environment (No module "
        "named 'mlflow'): pip install -e \".[tracking]\"  (mlflow-skinny)"
    ) in text
    assert "Job stats" not in text


@pytest.mark.skipif(
    not HAS_MLFLOW, reason='MLflow is an optional extra: pip install -e ".[tracking]"'
)
def test_tracking_on_plans_one_export_after_the_manifest(tmp_path):
    jobs = dry_run_jobs(REPO, "--configfile", _overlay(tmp_path))
    assert jobs["track_run"] == 1 and jobs["manifest"] == 1
