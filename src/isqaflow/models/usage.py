"""What a job's models did: calls sent, tokens in and out, the chat template used.

Every backend registers itself in this process's ledger when it is built and counts
the calls it actually sends (calls answered from the call cache cost nothing and
are not counted).  Inside a workflow job (:func:`isqaflow.runtime.job`) the ledger
is written when the job ends -- also after a failure or SIGTERM, since a failed job
spent its tokens too -- to ``<first output>.usage.json`` beside the job's outputs::

    {"rule": "arena_judge", "wildcards": {...}, "models": [
        {"name": "gpt4", "backend": "openai", "model": "gpt-4-0125-preview",
         "requests": 78, "input_tokens": 91234, "output_tokens": 1840,
         "chat_template": null, "server": null, "scoring": {...}, "dropped_decoding": [],
         "decoding": [{"settings": {...}, "applied": {...}}]}]}

``decoding`` lists, per distinct generation setting a job used, what the backend did
with each parameter (honoured, emulated, dropped; :func:`isqaflow.models.capabilities.applied`).

The provenance manifest gathers these files (token usage per model and stage, and
the cost where the config's price table has the model; see
:func:`isqaflow.report.manifest.gather_usage`).
"""

from __future__ import annotations

import copy
import json
import os
import threading
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from isqaflow import runtime


@dataclass
class ModelUsage:
    name: str
    backend: str
    model: str
    chat_template: dict[str, Any] | None = None
    server: dict[str, Any] | None = None
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    # log-probability scoring through an API: candidates missing from the returned
    # top list (scored at the list's floor) and items where none of them was there
    scoring: dict[str, int] = field(
        default_factory=lambda: {"items": 0, "absent_candidates": 0, "items_without_candidates": 0}
    )
    dropped_decoding: list[str] = field(default_factory=list)
    decoding: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, requests: int = 1, input_tokens: int = 0, output_tokens: int = 0) -> None:
        with self._lock:
            self.requests += requests
            self.input_tokens += int(input_tokens or 0)
            self.output_tokens += int(output_tokens or 0)

    def add_scoring(
        self, items: int = 0, absent_candidates: int = 0, items_without_candidates: int = 0
    ) -> None:
        with self._lock:
            self.scoring["items"] += items
            self.scoring["absent_candidates"] += absent_candidates
            self.scoring["items_without_candidates"] += items_without_candidates

    def note_dropped(self, settings: list[str]) -> list[str]:
        """Record dropped settings; returns those not recorded before (check and add under one
        lock, so that concurrent requests warn about a setting once, not once per thread)."""
        new = []
        with self._lock:
            for setting in settings:
                if setting not in self.dropped_decoding:
                    self.dropped_decoding.append(setting)
                    new.append(setting)
        return new

    def note_decoding(self, settings: dict[str, Any], applied: dict[str, Any]) -> None:
        """What one generation setting became on this backend (once per distinct setting)."""
        entry = {"settings": settings, "applied": applied}
        with self._lock:
            for i, known in enumerate(self.decoding):
                if known["settings"] == settings:
                    self.decoding[i] = entry  # a drop noted after the first request
                    return
            self.decoding.append(entry)

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                f.name: copy.deepcopy(getattr(self, f.name))
                for f in fields(self)
                if f.name != "_lock"
            }


_ledger: dict[tuple[str, str, str], ModelUsage] = {}
_ledger_lock = threading.Lock()
_write_registered = False


def register(
    name: str,
    backend: str,
    model: str,
    *,
    chat_template: dict[str, Any] | None = None,
    server: dict[str, Any] | None = None,
) -> ModelUsage:
    """The ledger entry of a model (one per name, backend and model id; loading it again reuses it)."""
    global _write_registered
    key = (name, backend, model)
    with _ledger_lock:
        entry = _ledger.get(key)
        if entry is None:
            entry = _ledger[key] = ModelUsage(name=name, backend=backend, model=model)
        if chat_template is not None:
            entry.chat_template = chat_template
        if server is not None:
            entry.server = server
        job = runtime.current_job()
        if job is not None and not _write_registered:
            _write_registered = True
            runtime.at_job_exit(lambda: write(job.usage_path(), job))
    return entry


def snapshot() -> list[dict[str, Any]]:
    with _ledger_lock:
        return [entry.as_dict() for entry in _ledger.values()]


def reset() -> None:
    """Forget every entry (tests; a job is one process, so jobs never share a ledger)."""
    global _write_registered
    with _ledger_lock:
        _ledger.clear()
        _write_registered = False


def write(path: str | os.PathLike, job: runtime.Job | None = None) -> dict[str, Any]:
    """Write the ledger as JSON (atomically: a temporary file renamed into place)."""
    record = {
        "rule": job.rule if job else None,
        "wildcards": dict(job.wildcards) if job else {},
        "models": snapshot(),
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return record
