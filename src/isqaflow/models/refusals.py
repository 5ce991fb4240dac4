"""A prompt longer than a model's context, named for the person who must fix it.

A server (vLLM's ``--max-model-len``, an API's context) refuses such a prompt with HTTP 400 and a
message; the OpenAI client raises it as a bare ``BadRequestError`` that names neither the job nor
the record.  The backends (:mod:`isqaflow.models.api.openai` and the served models built on it)
turn it into :class:`PromptTooLong` here, naming the job, the record (the id a stage gives with
:func:`naming_records`; else the prompt's first words), the model, the prompt's tokens, the limit
and what to change.  Backend-neutral, so that a stage names its records without importing a
backend.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator

from isqaflow import runtime
from isqaflow.models.base import Request, canonical_request

__all__ = ["PromptTooLong", "context_limit", "naming_records", "raise_if_too_long"]


class PromptTooLong(runtime.NamedError):
    """A prompt the server refused as longer than the model's context (see the module docstring)."""


# the server's refusal: vLLM (vllm/renderers/params.py) and the OpenAI API say it this way
CONTEXT_LIMIT = re.compile(r"maximum context length is (\d+) tokens")
PROMPT_TOKENS = re.compile(r"(?:contains|has|resulted in) (at least )?(\d+) (?:input )?tokens")
# canonical request -> record id, while a stage's call runs (naming_records)
_RECORDS: dict[str, str] = {}


def _request_key(request: Request) -> str:
    return json.dumps(canonical_request(request), sort_keys=True, ensure_ascii=False)


@contextlib.contextmanager
def naming_records(requests: Iterable[Request], ids: Iterable[object]) -> Iterator[None]:
    """While the block runs, an error about one of ``requests`` names its record id (``ids``, in
    the same order): ``with naming_records(requests, ids): model.generate(requests, params)``."""
    keys = [_request_key(r) for r in requests]
    _RECORDS.update(zip(keys, map(str, ids), strict=True))
    try:
        yield
    finally:
        for key in keys:
            _RECORDS.pop(key, None)


def context_limit(message: str) -> int | None:
    """The limit a server's refusal names, or None when the message is not a context refusal."""
    found = CONTEXT_LIMIT.search(message)
    return int(found.group(1)) if found else None


def raise_if_too_long(
    message: str,
    err: BaseException,
    request: Request,
    model: str,
    tokens: int | None,
    advice: str,
) -> None:
    """Raise :class:`PromptTooLong` from ``err`` when ``message`` is a context refusal of
    ``request`` by ``model`` (its name and id); return otherwise.  ``tokens``: the prompt's tokens
    where the client counted them, else what the message says."""
    limit = context_limit(message)
    if limit is None:
        return
    if tokens is None:
        said = PROMPT_TOKENS.search(message)
        tokens = f"{said.group(1) or ''}{said.group(2)}" if said else "more than the limit's"
    job = runtime.current_job()
    record = _RECORDS.get(_request_key(request))
    canon = canonical_request(request)
    start = " ".join((canon if isinstance(canon, str) else canon[-1]["content"]).split())[:60]
    which = (
        f"record {record}"
        if record is not None
        else f"the request starting {start!r} (the stage names no record id)"
    )
    raise PromptTooLong(
        f"{job.label() if job else 'outside a workflow job'}: model {model}, {which}: "
        f"the prompt has {tokens} tokens, beyond the server's limit of {limit} tokens (its maximum "
        f"context length, prompt and answer together); {advice}"
    ) from err
