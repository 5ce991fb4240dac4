"""A run exported to an experiment tracker: MLflow (config key ``tracking``, rule track_run).

One MLflow run per workflow run that changed a result (the rule's inputs are the manifest and
every table and figure, so it reruns exactly when one of them changed): the config (from the
manifest, any key in it masked) as ``config.yaml``, the manifest, the tables and the
figures as artifacts, the leaderboard's numbers (``leaderboard_long.csv``) as metrics, and the
manifest's code version as tags. The default store is MLflow's local file store, a folder
beside the results (``mlruns``; ``mlflow ui --backend-store-uri mlruns`` reads it).

MLflow is an optional extra (``pip install -e ".[tracking]"``: ``mlflow-skinny``, which
installs beside the project's pins): the workflow refuses at DAG build, and the job refuses,
with the command that installs it, when tracking is on and it is absent.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from isqaflow.runtime import NamedError

INSTALL = 'pip install -e ".[tracking]"  (mlflow-skinny)'

# What the run's outputs are, by folder: the artifacts' folders in the MLflow run.
ARTIFACT_DIRS = {"tables": "tables", "figures": "figures"}
LEADERBOARD_LONG = "leaderboard_long.csv"


class TrackingError(NamedError):
    """Tracking is on and cannot be done (MLflow absent, a store that refuses): the job logs
    the message, without a traceback, and fails."""


def missing_tracker() -> str | None:
    """Why tracking cannot run in this environment (MLflow not importable), or ``None``."""
    try:
        import mlflow  # noqa: F401
    except ImportError as error:
        return f"MLflow is not installed in this environment ({error}): {INSTALL}"
    return None


def tracking_uri(uri: str, workdir: str | os.PathLike = ".") -> str:
    """``uri`` as MLflow takes it: a URI with a scheme (``sqlite:///x.db``, ``http://...``,
    ``file:///...``) as written, a folder (MLflow's local file store) as a ``file://`` URI,
    relative to ``workdir`` (the workflow's folder)."""
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", uri) or uri.startswith("sqlite:"):
        return uri
    return (Path(workdir) / uri).resolve().as_uri()


def artifacts(files: Iterable[str | os.PathLike]) -> dict[str, list[Path]]:
    """The run's files to log, by artifact folder: each table and figure under its folder's
    name (``results/tables/x.csv`` -> ``tables``); other outputs are not logged (the manifest
    lists them with their checksums)."""
    found: dict[str, list[Path]] = {}
    for file in map(Path, files):
        folder = ARTIFACT_DIRS.get(file.parent.name)
        if folder and file.is_file():
            found.setdefault(folder, []).append(file)
    return {folder: sorted(paths) for folder, paths in sorted(found.items())}


# MLflow's metric names: alphanumerics, underscores, dashes, periods, spaces, colons, slashes.
_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_\-. :/]+")


def metric_name(*parts: str) -> str:
    """``parts`` joined by "/", each character MLflow refuses replaced by "_"."""
    return "/".join(_NOT_IN_A_NAME.sub("_", str(p)).strip("_ ") or "_" for p in parts)


def leaderboard_metrics(path: str | os.PathLike) -> dict[str, float]:
    """The leaderboard's numbers as metrics: ``<system>/<column>`` -> value, and its interval's
    ``<system>/<column>.lower`` and ``.upper`` where it has one (``leaderboard_long.csv``; empty cells and
    a missing file give none)."""
    import csv

    path = Path(path)
    if not path.is_file():
        return {}
    metrics: dict[str, float] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            name = metric_name(row["system"], row["column"])
            # ".lower", not "/lower": the file store keeps a metric as a file at its name's path
            for field, suffix in (("value", ""), ("lower", ".lower"), ("upper", ".upper")):
                number = _number(row.get(field))
                if number is not None:
                    metrics[name + suffix] = number
    return metrics


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def log_run(
    manifest: str | os.PathLike,
    files: Iterable[str | os.PathLike],
    uri: str,
    experiment: str,
    workdir: str | os.PathLike = ".",
    run_name: str | None = None,
) -> dict[str, Any]:
    """Log one MLflow run: ``manifest`` (results/manifest.json) and its ``config`` section as
    ``config.yaml``, the tables and figures among ``files``, the leaderboard's numbers; returns
    the record the rule writes (run id, experiment id, tracking URI, what was logged)."""
    problem = missing_tracker()
    if problem:
        raise TrackingError(f"tracking.enabled is true but {problem}")
    import mlflow
    import yaml

    from isqaflow.settings import mask_secrets

    manifest = Path(manifest)
    record = json.loads(manifest.read_text(encoding="utf-8"))
    found = artifacts(files)
    tables = found.get("tables", [])
    leaderboard = next((t for t in tables if t.name == LEADERBOARD_LONG), None)
    metrics = leaderboard_metrics(leaderboard) if leaderboard else {}
    store = tracking_uri(uri, workdir)
    # MLflow 3 refuses its file store unless asked (it is "in maintenance mode" for new
    # features; it is the store that needs no server and no database, as the issue asks)
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    client = mlflow.MlflowClient(tracking_uri=store)
    try:
        found_experiment = client.get_experiment_by_name(experiment)
        experiment_id = (
            found_experiment.experiment_id
            if found_experiment
            else client.create_experiment(experiment)
        )
        run = client.create_run(experiment_id, run_name=run_name, tags=_tags(record))
    except mlflow.exceptions.MlflowException as error:
        raise TrackingError(f"tracking.uri {uri!r} ({store}): {error}") from error
    run_id = run.info.run_id
    try:
        # a key pasted into the config (a base_url's query) is never sent to the tracker
        config = yaml.safe_dump(record.get("config", {}), sort_keys=False)
        client.log_text(run_id, mask_secrets(config), "config.yaml")
        client.log_text(run_id, mask_secrets(manifest.read_text(encoding="utf-8")), manifest.name)
        for folder, paths in found.items():
            for path in paths:
                client.log_artifact(run_id, str(path), artifact_path=folder)
        for name, value in metrics.items():
            client.log_metric(run_id, name, value)
        client.set_terminated(run_id, "FINISHED")
    except Exception:
        client.set_terminated(run_id, "FAILED")
        raise
    return {
        "tracking_uri": store,
        "experiment": experiment,
        "experiment_id": experiment_id,
        "run_id": run_id,
        "artifacts": {folder: len(paths) for folder, paths in found.items()},
        "metrics": len(metrics),
    }


def _tags(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The manifest's identity of the run as tags: the workflow's commit (and whether the tree
    had edits), the seed, the Snakemake command."""
    workflow = manifest.get("workflow") or {}
    tags = {
        "isqaflow.commit": workflow.get("commit"),
        "isqaflow.dirty": workflow.get("dirty"),
        "isqaflow.seed": manifest.get("seed"),
        "isqaflow.snakemake_command": manifest.get("snakemake_command"),
    }
    return {key: str(value) for key, value in tags.items() if value is not None}
