"""A model from its config entry, with the call cache in front of it.

A config entry (``models.<name>`` in the workflow config) looks like::

    backend: hf            # or openai
    model: resources/models/smollm2-135m-instruct   # local path or hub id
    revision: null         # hub revision (a commit hash at paper scale)
    dtype: auto            # auto | float32 | bfloat16 | float16
    batch_size: 16
    chat_template: null    # a shipped name (vicuna_v1.1, llama-2), a Jinja file, or none
    serve: null            # hf only: run the model behind a managed server (models/served/model.py)
    # openai: base_url, api_key_env, timeout, max_retries, backoff, concurrency,
    #         requests_per_minute, tokens_per_minute
    # openai and served: logprobs (top_logprobs | prompt_logprobs | none), top_logprobs

* :func:`load_model` is what stages use: a local model with ``serve:`` runs behind
  its own OpenAI-compatible server for the job (:class:`~.serve.ServedModel`),
  every other entry in-process or through its API.
* :func:`build_model` always builds the in-process backend -- fine-tuning needs
  the weights themselves, whatever ``serve:`` says.

Rules pass the entry through ``params:`` so a changed value reruns exactly the
stages that use the model.  ``price`` (the manifest's price table) and the
workflow's own keys never reach a backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from isqaflow.backends import Backend, backend_of
from isqaflow.models.base import LanguageModel
from isqaflow.models.cache import CachedModel, CallCache
from isqaflow.settings import api_key_variable

HF_KEYS = {
    "backend",
    "model",
    "revision",
    "dtype",
    "device",
    "batch_size",
    "score_batch_tokens",
    "trust_remote_code",
    "adapter",
    "prefix_sharing",
    "prefix_cache_mb",
    "chat_template",
}
# With serve:, the client's options join the hf keys (which fine-tuning still uses in-process).
SERVED_KEYS = HF_KEYS | {
    "serve",
    "concurrency",
    "timeout",
    "max_retries",
    "backoff",
    "logprobs",
    "top_logprobs",
    "server_plan",
}
OPENAI_KEYS = {
    "backend",
    "model",
    "base_url",
    "api_key_env",
    "timeout",
    "max_retries",
    "backoff",
    "concurrency",
    "requests_per_minute",
    "tokens_per_minute",
    "logprobs",
    "top_logprobs",
    "check_model",
    "batch",
}
# Keys that describe the entry for the workflow (conversion, resources, cost, the self-preference
# family of isqaflow.configcheck.families), not the backend.
# unsupported_decoding (openai): read by the config check (models.servecheck); the API backend drops and records.
WORKFLOW_KEYS = {"convert", "gpu", "description", "price", "unsupported_decoding", "family"}
# The backends (isqaflow.backends.BACKENDS) build_model builds: hf (in process, or served with
# serve:) and openai; a backend registered there without its branch here is refused by name.
BUILT = ("hf", "openai")
# hf keys a served model does not use: the server's command decides (fine-tuning uses them)
IN_PROCESS_ONLY = {
    "device",
    "batch_size",
    "score_batch_tokens",
    "prefix_sharing",
    "prefix_cache_mb",
}


def _backend(spec: dict[str, Any], name: str | None) -> Backend:
    """The entry's backend record; one registered in isqaflow.backends without a builder here
    is an error, not another backend's client."""
    backend = backend_of(spec, name)
    if backend.name not in BUILT:
        raise ValueError(
            f"models.{name}.backend: backend {backend.name!r} is registered in "
            "isqaflow.backends but models/registry.py builds no model for it"
        )
    return backend


def build_model(
    spec: dict[str, Any],
    *,
    name: str | None = None,
    adapter: str | None = None,
    threads: int | None = None,
) -> LanguageModel:
    """The in-process backend of ``spec`` (hf weights in this process, or the API client)."""
    spec = {k: v for k, v in spec.items() if k not in WORKFLOW_KEYS}
    backend = _backend(spec, name)
    if backend.name == "hf":
        unknown = set(spec) - SERVED_KEYS
        if unknown:
            raise ValueError(f"model {name}: unknown hf option(s) {sorted(unknown)}")
        if "serve" not in spec and set(spec) - HF_KEYS:
            raise ValueError(
                f"model {name}: option(s) {sorted(set(spec) - HF_KEYS)} apply to a served model "
                "only (with serve:)"
            )
        from isqaflow.models.inprocess.hf import HFModel

        kwargs = {
            k: v
            for k, v in spec.items()
            if k in HF_KEYS and k not in ("backend", "model", "adapter")
        }
        return HFModel(
            spec["model"],
            adapter=adapter or spec.get("adapter"),
            threads=threads,
            name=name,
            **kwargs,
        )
    unknown = set(spec) - OPENAI_KEYS
    if "chat_template" in unknown:
        raise ValueError(
            f"model {name}: chat_template applies to local models (hf, or served with serve:); "
            "an API model applies its own"
        )
    if "serve" in unknown:
        raise ValueError(
            f"model {name}: serve: starts a local model's server: use it with backend hf (the "
            "job then talks to the server through the openai backend)"
        )
    if unknown:
        raise ValueError(f"model {name}: unknown openai option(s) {sorted(unknown)}")
    if adapter:
        raise ValueError(f"model {name}: an adapter needs a local (hf) model")
    from isqaflow.models.api.openai import OpenAIModel

    kwargs = {k: v for k, v in spec.items() if k not in ("backend", "model")}
    try:  # the config check reads the same definition
        kwargs["api_key_env"] = api_key_variable(spec)
    except ValueError as err:
        raise ValueError(f"model {name}: {err}") from None
    return OpenAIModel(spec["model"], name=name, **kwargs)


def serve_model(
    spec: dict[str, Any],
    *,
    name: str | None = None,
    adapter: str | None = None,
    threads: int | None = None,
) -> LanguageModel:
    """A local model behind its managed server (``spec`` has ``serve:``)."""
    spec = {k: v for k, v in spec.items() if k not in WORKFLOW_KEYS}
    if not _backend(spec, name).servable:
        raise ValueError(
            f"model {name}: serve: starts a local model's server: use it with backend hf"
        )
    unknown = set(spec) - SERVED_KEYS
    if unknown:
        raise ValueError(f"model {name}: unknown option(s) for a served model {sorted(unknown)}")
    from isqaflow.models.served.model import ServedModel

    kwargs = {
        k: v for k, v in spec.items() if k not in IN_PROCESS_ONLY | {"backend", "model", "adapter"}
    }
    return ServedModel(
        spec["model"], adapter=adapter or spec.get("adapter"), threads=threads, name=name, **kwargs
    )


def load_model(
    spec: dict[str, Any],
    *,
    cache: CallCache | str | Path | None = None,
    name: str | None = None,
    adapter: str | None = None,
    threads: int | None = None,
) -> LanguageModel:
    """The model a stage uses (served when the entry has ``serve:``), behind the call cache when one is given."""
    if spec.get("serve"):
        model = serve_model(spec, name=name, adapter=adapter, threads=threads)
    else:
        model = build_model(spec, name=name, adapter=adapter, threads=threads)
    if cache is None:
        return model
    if not isinstance(cache, CallCache):
        cache = CallCache(cache)
    return CachedModel(model, cache)
