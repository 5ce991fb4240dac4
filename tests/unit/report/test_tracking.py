"""The export to an experiment tracker (isqaflow.report.tracking; issue 41): the files and
numbers it picks, the refusal without MLflow, and a run logged to MLflow's local file store
and read back with MLflow's own client (where the optional extra is installed)."""

from __future__ import annotations

import json
import sys

import pytest

from isqaflow.report import tracking

KEY = "sk-abcdefghijklmnopqrstuvwxyz0123"


@pytest.fixture
def run_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results/tables").mkdir(parents=True)
    (tmp_path / "results/figures").mkdir()
    (tmp_path / "results/data").mkdir()
    (tmp_path / "results/tables/leaderboard_long.csv").write_text(
        "system,column,value,lower,upper,n\n"
        "my-rag,RAG-QA Arena win % (local),41.5,30.25,52,20\n"
        "my-rag,DRFR %,,,,\n"
        "smollm2,RAG-QA Arena win % (local),12.5,,,20\n"
    )
    (tmp_path / "results/tables/arena_win_rates.md").write_text("| a |\n")
    (tmp_path / "results/figures/arena_ratings.png").write_bytes(b"\x89PNG")
    (tmp_path / "results/data/queries.jsonl").write_text("{}\n")
    manifest = {
        "workflow": {"commit": "0123abc", "dirty": False},
        "seed": 13,
        "config": {"seed": 13, "models": {"api": {"base_url": f"https://h/v1?key={KEY}"}}},
    }
    (tmp_path / "results/manifest.json").write_text(json.dumps(manifest))
    files = [
        "results/tables/leaderboard_long.csv",
        "results/tables/arena_win_rates.md",
        "results/figures/arena_ratings.png",
        "results/data/queries.jsonl",
        "results/manifest.json",
    ]
    return tmp_path, files


def test_the_tables_and_figures_are_the_artifacts(run_files):
    _, files = run_files
    found = {folder: [p.name for p in paths] for folder, paths in tracking.artifacts(files).items()}
    assert found == {
        "figures": ["arena_ratings.png"],
        "tables": ["arena_win_rates.md", "leaderboard_long.csv"],
    }


def test_the_leaderboards_numbers_are_the_metrics(run_files):
    root, _ = run_files
    assert tracking.leaderboard_metrics(root / "results/tables/leaderboard_long.csv") == {
        "my-rag/RAG-QA Arena win _ _local": 41.5,
        "my-rag/RAG-QA Arena win _ _local.lower": 30.25,
        "my-rag/RAG-QA Arena win _ _local.upper": 52.0,
        "smollm2/RAG-QA Arena win _ _local": 12.5,
    }
    assert tracking.leaderboard_metrics(root / "absent.csv") == {}


def test_a_folder_is_the_local_file_store_and_a_uri_is_kept(tmp_path):
    assert tracking.tracking_uri("mlruns", tmp_path) == (tmp_path / "mlruns").as_uri()
    for uri in ("sqlite:///mlflow.db", "http://tracker:5000", "file:///srv/mlruns"):
        assert tracking.tracking_uri(uri, tmp_path) == uri


def test_without_mlflow_the_job_refuses_naming_the_key_and_the_install(run_files, monkeypatch):
    _, files = run_files
    monkeypatch.setitem(sys.modules, "mlflow", None)  # `import mlflow` raises ImportError
    with pytest.raises(tracking.TrackingError) as refused:
        tracking.log_run("results/manifest.json", files, "mlruns", "isqaflow")
    assert str(refused.value).startswith("tracking.enabled is true but MLflow is not installed")
    assert 'pip install -e ".[tracking]"' in str(refused.value)


def test_a_run_is_logged_to_mlflows_file_store(run_files):
    """Against the real package (the optional extra `tracking`); skipped where it is absent."""
    mlflow = pytest.importorskip(
        "mlflow", reason='MLflow is an optional extra: pip install -e ".[tracking]"'
    )
    root, files = run_files
    record = tracking.log_run("results/manifest.json", files, "mlruns", "my-experiment")
    assert record["tracking_uri"] == (root / "mlruns").as_uri()
    assert record["artifacts"] == {"figures": 1, "tables": 2} and record["metrics"] == 4

    client = mlflow.MlflowClient(tracking_uri=record["tracking_uri"])
    run = client.get_run(record["run_id"])
    assert run.info.status == "FINISHED"
    assert client.get_experiment(run.info.experiment_id).name == "my-experiment"
    assert run.data.metrics["my-rag/RAG-QA Arena win _ _local.upper"] == 52.0
    assert run.data.tags["isqaflow.commit"] == "0123abc" and run.data.tags["isqaflow.seed"] == "13"
    logged = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert logged == {"config.yaml", "manifest.json", "figures", "tables"}
    assert {a.path for a in client.list_artifacts(run.info.run_id, "tables")} == {
        "tables/arena_win_rates.md",
        "tables/leaderboard_long.csv",
    }
    local = client.download_artifacts(run.info.run_id, "", str(root / "back"))
    for name in ("config.yaml", "manifest.json"):  # a key in the config never reaches the tracker
        text = (root / "back" / name).read_text()
        assert KEY not in text and "key=sk-***" in text, (local, name)

    second = tracking.log_run("results/manifest.json", files, "mlruns", "my-experiment")
    assert second["experiment_id"] == record["experiment_id"]  # one experiment, two runs
    assert second["run_id"] != record["run_id"]
