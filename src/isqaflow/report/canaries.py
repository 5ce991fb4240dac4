"""The known-answer controls as canaries: did a judge's control results change since the last run?

An API judge can change behind the same model name (a new snapshot, a changed sampling
default).  Every judge's known-answer controls (``results/validity/<suite>/<judge>.jsonl``, the
shared record contract of :mod:`isqaflow.report.validity`) are summarised per judge, control
and verdict rule: ``n``, ``n_correct``, ``n_invalid`` and a digest of the per-item outcomes
(item, outcome -- not the margins, whose last digits move with the hardware).  The summary is
written to ``results/judges/canaries.json`` and copied into the manifest (``canaries``); the
next run compares its own summary with the one in the previous ``results/manifest.json``:

* ``unchanged`` -- the same outcome on every control item;
* ``changed`` -- some outcome differs (or the item set does);
* ``no previous run`` -- no previous manifest, or it holds no summary of this control.

With the call cache, a control's outcome changes only when its calls are made again (the
judge's identity or request changed, or the job's cache was removed): delete the judge's
cache (``<output>.calls.sqlite`` beside the control records) to re-ask an API judge.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from isqaflow.io import read_jsonl

__all__ = [
    "CANARIES",
    "NO_PREVIOUS",
    "canary_key",
    "compare_canaries",
    "gather_canaries",
    "previous_canaries",
    "summarize_canaries",
]

#: where the run's canary summary is written, relative to the results folder
CANARIES = "judges/canaries.json"
NO_PREVIOUS = "no previous run"


def canary_key(record: Mapping[str, Any]) -> str:
    """``<instrument>/<judge>/<control>/<rule>`` of one validity record."""
    return "/".join(str(record[k]) for k in ("instrument", "name", "control", "rule"))


def summarize_canaries(paths: Iterable[str | Path]) -> dict[str, dict[str, Any]]:
    """``canary_key`` -> {instrument, judge, control, rule, n, n_correct, n_invalid, digest}."""
    outcomes: dict[str, dict[str, Any]] = {}
    for path in paths:
        for _, record in read_jsonl(path):
            key = canary_key(record)
            entry = outcomes.setdefault(
                key,
                {
                    "instrument": record["instrument"],
                    "judge": record["name"],
                    "control": record["control"],
                    "rule": record["rule"],
                    "n": 0,
                    "n_correct": 0,
                    "n_invalid": 0,
                    "items": [],
                },
            )
            entry["n"] += 1
            entry["n_correct"] += record["correct"] is True
            entry["n_invalid"] += record["correct"] is None
            entry["items"].append([str(record["item"]), str(record["outcome"])])
    summary = {}
    for key, entry in sorted(outcomes.items()):
        items = sorted(entry.pop("items"))
        entry["digest"] = hashlib.sha256(json.dumps(items).encode()).hexdigest()
        summary[key] = entry
    return summary


def previous_canaries(manifest_path: str | Path) -> dict[str, dict[str, Any]] | None:
    """The canary summary of the previous run's manifest; None without a readable one."""
    path = Path(manifest_path)
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    canaries = manifest.get("canaries") if isinstance(manifest, dict) else None
    return canaries if isinstance(canaries, dict) else None


def compare_canaries(
    current: Mapping[str, Mapping[str, Any]], previous: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, str]:
    """``canary_key`` -> "changed", "unchanged" or :data:`NO_PREVIOUS`."""
    status = {}
    for key, entry in current.items():
        before = (previous or {}).get(key)
        if not isinstance(before, Mapping) or "digest" not in before:
            status[key] = NO_PREVIOUS
        else:
            status[key] = "unchanged" if before["digest"] == entry["digest"] else "changed"
    return status


def gather_canaries(results_dir: str | Path) -> dict[str, Any] | None:
    """The run's canary summary (for the manifest), None when the run wrote none."""
    path = Path(results_dir) / CANARIES
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))
