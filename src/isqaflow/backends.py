"""What each model backend needs, in one record per backend (``models.<name>.backend``).

Every place that must know whether a model asks for GPUs, has Hub weights, needs an API key,
is priced, or may be served reads the entry's :class:`Backend` here instead of comparing the
backend's name -- so a new backend is one line in :data:`BACKENDS` (and its builder in
``models/registry.py``), and a place that forgot it cannot treat it as "not openai" silently.
On the ground floor: the rules, the config check, the GPU and spend plans and the backends
themselves all read it.  ``config/schema.yaml``'s enum of ``models.<name>.backend`` is tested
to be this registry's keys (tests/unit/test_backends.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# an entry without backend: (the schema requires one; tests' entries omit it)
DEFAULT_BACKEND = "hf"


@dataclass(frozen=True)
class Backend:
    """What a model of this backend needs from the workflow."""

    name: str
    # weights on the workflow's machines (in the job's process, or behind a server the job
    # starts): adapters, fine-tuning, GGUF conversion and weight fingerprints apply
    local: bool
    # a job running it asks for its stage's GPUs (resources.<stage>.gpu, or the GPU plan)
    gpus: bool
    # its ``model`` may be a Hugging Face Hub id, fetched by rule fetch_weights
    hub_weights: bool
    # the environment variable holding its key when the entry has no api_key_env (None: no key)
    key_env: str | None
    # billed per token: counted in the spend plan, priced by the budget (models.<name>.price)
    priced: bool
    # ``serve:`` may start it behind an OpenAI-compatible server the job manages
    servable: bool
    # its endpoint lists its models (GET /models), checked at the workflow's start
    # (models/api/model_lists.py)
    lists_models: bool
    # its column in models/capabilities.py (unserved; a served model's engine decides)
    capabilities: str

    @property
    def api_key(self) -> bool:
        return self.key_env is not None


BACKENDS: dict[str, Backend] = {
    "hf": Backend(
        name="hf",
        local=True,
        gpus=True,
        hub_weights=True,
        key_env=None,
        priced=False,
        servable=True,
        lists_models=False,
        capabilities="hf",
    ),
    "openai": Backend(
        name="openai",
        local=False,
        gpus=False,
        hub_weights=False,
        key_env="OPENAI_API_KEY",
        priced=True,
        servable=False,
        lists_models=True,
        capabilities="openai",
    ),
}


def backend_of(entry: Mapping[str, Any], name: str | None = None) -> Backend:
    """The record of a model entry's backend; an unknown one is a ``ValueError`` naming the
    config field ``models.<name>.backend`` and the registered backends."""
    key = entry.get("backend", DEFAULT_BACKEND)
    try:
        return BACKENDS[key]
    except (KeyError, TypeError):
        field = f"models.{name}.backend" if name else "models.<name>.backend"
        raise ValueError(
            f"{field}: unknown backend {key!r} (expected one of {', '.join(BACKENDS)})"
        ) from None


def is_priced(entry: Mapping[str, Any], name: str | None = None) -> bool:
    """Billed per token: a priced backend not served by a server the job starts itself."""
    return backend_of(entry, name).priced and not entry.get("serve")


def needs_gpus(entries: list[Mapping[str, Any]]) -> bool:
    """Whether a job running these models asks for GPUs: none when no model's backend needs one
    (every model behind an API); a job that names no model (a stage's own) asks."""
    return not entries or any(backend_of(entry).gpus for entry in entries)


def key_env_of(entry: Mapping[str, Any]) -> str | None:
    """The key's variable of the entry's backend (None for a backend without a key, or an
    unknown one: the schema and :func:`backend_of` report that)."""
    key = entry.get("backend", DEFAULT_BACKEND)
    record = BACKENDS.get(key) if isinstance(key, str) else None
    return record.key_env if record else None
