"""The config's API models checked against their endpoints' model lists before any job (onstart).

This runs on the submit host, inside the Snakemake process, whose environment is the one
docs/paper-scale.md builds (Snakemake and the SLURM executor plugin only): so it uses the
standard library's HTTP client, not the ``openai`` package the jobs use."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Any

from isqaflow.backends import backend_of
from isqaflow.settings import api_key_variable, mask_secrets

OPENAI_ENDPOINT = "https://api.openai.com/v1"
ATTEMPTS = 3  # the openai client's max_retries=2, as the jobs use it for the same listing


class ListingError(Exception):
    """An endpoint's model list could not be read (the message names no key)."""


def list_models(
    base_url: str, api_key: str, timeout: float = 60, attempts: int = ATTEMPTS
) -> set[str]:
    """The model ids ``GET <base_url>/models`` lists (OpenAI's API and vLLM's answer alike);
    connection errors, timeouts, rate limits and server errors are retried with backoff."""
    request = urllib.request.Request(
        base_url.rstrip("/") + "/models",
        headers={"Authorization": f"Bearer {api_key}", "Accept": "application/json"},
    )
    for attempt in range(attempts):
        retry = attempt + 1 < attempts
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                body = json.load(response)
            return {entry["id"] for entry in body["data"]}
        except urllib.error.HTTPError as err:
            if not (retry and (err.code == 429 or err.code >= 500)):
                raise ListingError(f"HTTP {err.code} {err.reason}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
            if not retry:
                raise ListingError(f"{type(err).__name__}: {getattr(err, 'reason', err)}") from None
        except (ValueError, KeyError, TypeError) as err:
            raise ListingError(f"not a model list: {type(err).__name__}: {err}") from None
        time.sleep(0.5 * 2**attempt)
    raise AssertionError("unreachable")


# OpenAI snapshots retired (by name), each with the substitute config/paper.yaml's comments and
# docs/paper-scale.md recommend: the papers' snapshots the docs name as retired during 2026.
RETIRED = {
    "gpt-4-0314": "gpt-4.1",
    "gpt-4-0125-preview": "gpt-4.1",
    "gpt-3.5-turbo-0125": "gpt-4o-mini",
    "gpt-4o-2024-05-13": "gpt-4o",
}
SUBSTITUTE_NOTE = "a substitute judge: check it against the validity table, docs/validity.md"


def _by_endpoint(models: dict[str, Any]) -> dict[tuple[str | None, str], list[tuple[str, str]]]:
    """The API entries to check, per (base_url, key variable): each on OpenAI's endpoint (no
    ``base_url``) or with ``check_model: true``; a local server is not asked."""
    by_endpoint: dict[tuple[str | None, str], list[tuple[str, str]]] = {}
    for key, entry in models.items():
        if not backend_of(entry, key).lists_models or entry.get("serve"):
            continue
        check = entry.get("check_model")
        if not (check if check is not None else entry.get("base_url") is None):
            continue
        by_endpoint.setdefault((entry.get("base_url"), api_key_variable(entry)), []).append(
            (key, entry["model"])
        )
    return by_endpoint


def _endpoint(base_url: str | None, environ: dict[str, str]) -> str:
    # the openai client's own default: $OPENAI_BASE_URL, else OpenAI's endpoint
    return base_url or environ.get("OPENAI_BASE_URL") or OPENAI_ENDPOINT


def _retired(key: str, model: str) -> str:
    return (
        f"models.{key}.model: {model!r} is a retired OpenAI snapshot; the docs' substitute: "
        f"{RETIRED[model]!r} ({SUBSTITUTE_NOTE})"
    )


# Set to 1, a dry run sends no request for the providers' model lists (the tests set it: a dry
# run of config/paper.yaml with a placeholder key must not reach out to the provider).
OFFLINE_ENV = "ISQAFLOW_NO_MODEL_LISTS"


def dry_run_report(
    models: dict[str, Any], environ: dict[str, str] | None = None, timeout: float = 10
) -> list[str]:
    """What a dry run says of the config's API models, before any job: each retired snapshot by
    name (on OpenAI's endpoint) with its substitute; then, per endpoint, the models its list
    does not serve, or what could not be checked and why (no key, no network) -- never silence.
    One listing per endpoint, one attempt (a dry run does not wait out retries)."""
    environ = dict(os.environ if environ is None else environ)
    lines = []
    for (base_url, key_env), entries in sorted(_by_endpoint(models).items(), key=str):
        endpoint = _endpoint(base_url, environ)
        names = ", ".join(sorted({m for _, m in entries}))
        if endpoint == OPENAI_ENDPOINT:
            lines += [_retired(key, model) for key, model in entries if model in RETIRED]
        if not environ.get(key_env):
            lines.append(
                f"not checked against the model list of {endpoint}: {key_env} is not set ({names})"
            )
            continue
        if environ.get(OFFLINE_ENV) == "1":  # tests, and a user who wants no request at all
            lines.append(
                f"not checked against the model list of {endpoint}: {OFFLINE_ENV}=1 ({names})"
            )
            continue
        try:
            listed = list_models(endpoint, environ[key_env], timeout=timeout, attempts=1)
        except ListingError as err:
            lines.append(
                mask_secrets(f"not checked against the model list of {endpoint}: {err} ({names})")
            )
            continue
        missing = [(key, model) for key, model in entries if model not in listed]
        lines += [_not_served(key, model, endpoint) for key, model in missing]
        if not missing:
            lines.append(f"{endpoint} lists every model of the config ({names})")
    return lines


def _not_served(key: str, model: str, endpoint: str) -> str:
    substitute = f" (retired; the docs' substitute: {RETIRED[model]!r})" if model in RETIRED else ""
    return (
        f"models.{key}.model: the endpoint {endpoint} does not serve {model!r}{substitute}; set a "
        f"model it lists ({SUBSTITUTE_NOTE})"
    )


def check_api_models(models: dict[str, Any], environ: dict[str, str] | None = None) -> list[str]:
    """Problems of the config's API models, one listing per endpoint (the workflow's onstart, on the
    submit host, before any job): each entry on OpenAI's endpoint (or with ``check_model: true``)
    must be listed there.  Each problem names the model, the endpoint and the config key."""
    environ = dict(os.environ if environ is None else environ)
    problems = []
    for (base_url, key_env), entries in sorted(_by_endpoint(models).items(), key=str):
        endpoint = _endpoint(base_url, environ)
        try:
            listed = list_models(endpoint, environ.get(key_env) or "unused")
        except ListingError as err:
            # an endpoint's error may quote the key it was sent (401: "Incorrect API key provided: ..."):
            # masked as every config-check message is
            problems.append(
                mask_secrets(
                    f"cannot list the models of {endpoint} (key from {key_env}) to check "
                    f"{', '.join(m for _, m in entries)}: {err}"
                )
            )
            continue
        problems += [
            _not_served(key, model, endpoint) for key, model in entries if model not in listed
        ]
    return problems
