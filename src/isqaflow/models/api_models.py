"""The config's API models checked against their endpoints' model lists before any job (onstart)."""

from __future__ import annotations

import os
from typing import Any

from isqaflow.settings import api_key_variable, mask_secrets


def check_api_models(models: dict[str, Any], environ: dict[str, str] | None = None) -> list[str]:
    """Problems of the config's API models, one listing per endpoint (the workflow's onstart, on the
    submit host, before any job): each entry on OpenAI's endpoint (or with ``check_model: true``)
    must be listed there.  Each problem names the model, the endpoint and the config key."""
    import openai

    environ = dict(os.environ if environ is None else environ)
    by_endpoint: dict[tuple[str | None, str], list[tuple[str, str]]] = {}
    for key, entry in models.items():
        if entry.get("backend") != "openai" or entry.get("serve"):
            continue
        check = entry.get("check_model")
        if not (check if check is not None else entry.get("base_url") is None):
            continue
        by_endpoint.setdefault((entry.get("base_url"), api_key_variable(entry)), []).append(
            (key, entry["model"]))
    problems = []
    for (base_url, key_env), entries in sorted(by_endpoint.items(), key=str):
        endpoint = base_url or "https://api.openai.com/v1"
        client = openai.OpenAI(api_key=environ.get(key_env) or "unused", base_url=base_url, timeout=60, max_retries=2)
        try:
            listed = {m.id for m in client.models.list()}
        except openai.OpenAIError as err:
            # an endpoint's error may quote the key it was sent (401: "Incorrect API key provided: ..."):
            # masked as every config-check message is
            problems.append(mask_secrets(f"cannot list the models of {endpoint} (key from {key_env}) to check "
                                         f"{', '.join(m for _, m in entries)}: {type(err).__name__}: {err}"))
            continue
        finally:
            client.close()
        for key, model in entries:
            if model not in listed:
                problems.append(f"models.{key}.model: the endpoint {endpoint} does not serve {model!r}; set a model "
                                "it lists (a substitute judge: check it against the validity table, docs/validity.md)")
    return problems

