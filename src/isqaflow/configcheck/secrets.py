"""No key in the config outside the one field that may carry one.

A value that looks like an API key or token (:func:`isqaflow.settings.looks_like_secret`)
anywhere in the config would reach Snakemake's own output -- its job listing prints inputs,
params and the reasons a job reruns ("Params have changed ... before: {...}") -- and its
metadata, which our masking never sees.  So a key is refused wherever it is, with a message
that never shows it, except in a model's ``base_url``: an endpoint may take its key in the
query string (``?api-key=...``), and the rules pass that field redacted
(:func:`isqaflow.settings.redact_secrets`), the job reading the value from its config.
``api_key_env`` has its own message (:func:`isqaflow.settings.api_key_variable`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from isqaflow.configcheck.references import References
from isqaflow.settings import looks_like_secret

#: model-entry keys whose values may hold a key: passed redacted to the jobs
SECRET_FIELDS = ("base_url",)


def _strings(node: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from _strings(value, (*path, str(key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, (*path[:-1], f"{path[-1]}[{i}]") if path else (f"[{i}]",))
    elif isinstance(node, str):
        yield path, node


def check_secrets(refs: References) -> None:
    for path, value in _strings(refs.config, ()):
        if not looks_like_secret(value):
            continue
        if len(path) == 3 and path[0] == "models" and path[2] in SECRET_FIELDS:
            continue  # redacted in the jobs' params
        if len(path) == 3 and path[0] == "models" and path[2] == "api_key_env":
            continue  # its own message (isqaflow.settings.api_key_variable)
        refs.problem(
            ".".join(path),
            "holds what looks like an API key or token (not shown); a key goes into the "
            "environment variable that the model's api_key_env names (or into its base_url), "
            "never into another field, where Snakemake would print it",
        )
