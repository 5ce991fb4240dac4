"""The OpenAI Batch API for an API model's generations (``batch:`` in its ``models`` entry).

The requests a job's ``generate`` call leaves to compute (the call cache's misses) become
the lines of one JSON Lines batch file -- each line's ``body`` is exactly the online request
(:meth:`.openai.OpenAIModel._chat_kwargs`) -- which is uploaded (purpose ``batch``) and
submitted as one batch (endpoint ``/v1/chat/completions``, completion window 24 h), then
polled every ``poll_s`` seconds until it ends.  The replies are read back in the requests'
order and handed to the call cache as online replies are, under the same keys (the key
never holds the mode): a batch-mode run and an online run of the same config share their
cache, and a stage can be moved to batch mode by pointing it at a second ``models`` entry
with the same ``model`` and ``batch:``.

**Resumable.**  The batch id is recorded before the first poll in
``<first output>.batches.json`` beside the job's call cache, keyed by the SHA-256 of the
batch file; a job killed while its batch is pending is rerun with the same misses, hence the
same file, and polls the recorded batch instead of submitting another.  A batch that fails,
expires or is cancelled, or a request in it that did not succeed, is an error naming the
batch and the request; its record is dropped so that a rerun submits again.

**Budget and usage.**  Before submitting, the whole batch's bound is reserved in the run's
ledger (:mod:`.budget`: refused when it would cross the budget); the replies' tokens settle
it and go to the job's usage record, as online calls do.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from isqaflow import runtime
from isqaflow.models.api import budget
from isqaflow.models.base import BatchCallback, Generation, GenerationParams, Request
from isqaflow.models.api.rate_limit import estimate_tokens

log = logging.getLogger(__name__)

ENDPOINT = "/v1/chat/completions"
FAILED = ("failed", "expired", "cancelled", "cancelling")


def batch_file(bodies: Sequence[dict[str, Any]]) -> bytes:
    """The JSON Lines batch file of request bodies (``custom_id`` = ``request-<position>``)."""
    lines = [
        {"custom_id": f"request-{i}", "method": "POST", "url": ENDPOINT, "body": body}
        for i, body in enumerate(bodies)
    ]
    return "".join(
        json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n" for line in lines
    ).encode()


def record_path() -> Path | None:
    """Where the job records its pending batches (None outside a workflow job: nothing resumes)."""
    job = runtime.current_job()
    if job is None:
        return None
    first = Path(job.outputs[0])
    return first.with_name(first.name + ".batches.json")


def _records(path: Path | None) -> dict[str, str]:
    return (
        json.loads(path.read_text(encoding="utf-8")) if path is not None and path.exists() else {}
    )


def _write_records(path: Path | None, records: dict[str, str]) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _body(model: Any, request: Request, params: GenerationParams) -> dict[str, Any]:
    body = model._chat_kwargs(request, params)
    body.update(
        body.pop("extra_body", None) or {}
    )  # the client sends extra_body's fields in the body
    return body


def generate_in_batch(
    model: Any,
    requests: Sequence[Request],
    params: GenerationParams,
    on_batch: BatchCallback | None = None,
) -> list[Generation]:
    """``model.generate`` through one batch (``model``: an :class:`.openai.OpenAIModel` with ``batch``)."""
    from openai.types.chat import ChatCompletion

    if not requests:
        return []
    if any(model._plain_text(r) is not None for r in requests):
        raise ValueError(f"model {model.name}: batch mode sends chat requests only")
    bodies = [_body(model, r, params) for r in requests]
    data = batch_file(bodies)
    key = hashlib.sha256(data).hexdigest()
    path = record_path()
    records = _records(path)
    bound = sum(estimate_tokens(b["messages"]) + params.max_new_tokens for b in bodies)
    batch_id = records.get(key)
    if batch_id is None:
        ticket = budget.reserve(model.model, bound)  # BudgetExceeded before anything is submitted
        uploaded = model.client.files.create(file=("batch.jsonl", data), purpose="batch")
        batch = model.client.batches.create(
            input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h"
        )
        batch_id = batch.id
        records[key] = batch_id
        _write_records(path, records)
        log.info("%s: %d requests submitted as batch %s", model.name, len(bodies), batch_id)
    else:
        ticket = budget.reserve(model.model, 0)  # the killed job's reservation is gone: settle here
        log.info(
            "%s: resuming batch %s (%d requests), submitted before",
            model.name,
            batch_id,
            len(bodies),
        )
    poll_s = float((model.batch or {}).get("poll_s", 60))
    while True:
        batch = model.client.batches.retrieve(batch_id)
        if batch.status == "completed":
            break
        if batch.status in FAILED:
            records.pop(key, None)
            _write_records(path, records)
            budget.settle(ticket, model.model, 0, 0)
            raise RuntimeError(
                f"model {model.name}: batch {batch_id} ended {batch.status}: {batch.errors}"
            )
        time.sleep(poll_s)
    rows = {}
    for line in model.client.files.content(batch.output_file_id).text.splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row["custom_id"]] = row
    results, n_in, n_out = [], 0, 0
    for i in range(len(bodies)):
        row = rows.get(f"request-{i}")
        response = (row or {}).get("response") or {}
        if row is None or row.get("error") or response.get("status_code") != 200:
            budget.settle(ticket, model.model, n_in, n_out)
            raise RuntimeError(
                f"model {model.name}: request {i} of batch {batch_id} did not succeed: "
                f"{(row or {}).get('error') or response.get('status_code', 'missing')}"
            )
        completion = ChatCompletion.model_validate(response["body"])
        generation = model._chat_generation(completion, params)
        model.usage.add(1, generation.n_input_tokens, generation.n_new_tokens)
        n_in, n_out = n_in + generation.n_input_tokens, n_out + generation.n_new_tokens
        results.append(generation)
    budget.settle(ticket, model.model, n_in, n_out)
    if on_batch is not None:
        on_batch(list(enumerate(results)))
    records.pop(key, None)
    _write_records(path, records)
    return results
