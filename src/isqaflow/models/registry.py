"""A model from its config entry, with the call cache in front of it.

A config entry (``models.<name>`` in the workflow config) looks like::

    backend: hf            # or openai
    model: resources/models/smollm2-135m-instruct   # local path or hub id
    revision: null         # hub revision (a commit hash at paper scale)
    dtype: auto            # auto | float32 | bfloat16 | float16
    batch_size: 16
    # openai only: base_url, api_key_env, timeout, max_retries, concurrency

Rules pass the entry through ``params:`` so a changed value reruns exactly the
stages that use the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from isqaflow.models.base import LanguageModel
from isqaflow.models.cache import CachedModel, CallCache

HF_KEYS = {"backend", "model", "revision", "dtype", "device", "batch_size", "score_batch_tokens",
           "trust_remote_code", "adapter", "prefix_sharing", "prefix_cache_mb"}
OPENAI_KEYS = {"backend", "model", "base_url", "api_key_env", "timeout", "max_retries", "backoff",
               "concurrency"}
# Keys that describe the entry for the workflow (conversion, resources), not the backend.
WORKFLOW_KEYS = {"convert", "gpu", "description"}


def build_model(spec: dict[str, Any], *, name: str | None = None, adapter: str | None = None,
                threads: int | None = None) -> LanguageModel:
    spec = {k: v for k, v in spec.items() if k not in WORKFLOW_KEYS}
    backend = spec.get("backend", "hf")
    if backend == "hf":
        unknown = set(spec) - HF_KEYS
        if unknown:
            raise ValueError(f"model {name}: unknown hf option(s) {sorted(unknown)}")
        from isqaflow.models.hf import HFModel

        kwargs = {k: v for k, v in spec.items() if k not in ("backend", "model", "adapter")}
        return HFModel(spec["model"], adapter=adapter or spec.get("adapter"), threads=threads,
                       name=name, **kwargs)
    if backend == "openai":
        unknown = set(spec) - OPENAI_KEYS
        if unknown:
            raise ValueError(f"model {name}: unknown openai option(s) {sorted(unknown)}")
        if adapter:
            raise ValueError(f"model {name}: an adapter needs a local (hf) model")
        from isqaflow.models.openai import OpenAIModel

        kwargs = {k: v for k, v in spec.items() if k not in ("backend", "model")}
        return OpenAIModel(spec["model"], name=name, **kwargs)
    raise ValueError(f"model {name}: unknown backend {backend!r} (expected hf or openai)")


def load_model(spec: dict[str, Any], *, cache: CallCache | str | Path | None = None, name: str | None = None,
               adapter: str | None = None, threads: int | None = None) -> LanguageModel:
    """Build the backend for ``spec`` and, when a cache is given, wrap it in the call cache."""
    model = build_model(spec, name=name, adapter=adapter, threads=threads)
    if cache is None:
        return model
    if not isinstance(cache, CallCache):
        cache = CallCache(cache)
    return CachedModel(model, cache)
