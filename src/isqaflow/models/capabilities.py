"""Which generation parameter each backend honours, emulates or refuses, checked before any job runs.

Every :class:`~isqaflow.models.base.GenerationParams` field a stage can set, against the
three ways a model runs: ``hf`` (in-process transformers), ``vllm`` (a served model,
``serve.engine: vllm``, vLLM 0.33.0 as read from its wheel: ``tests/fixtures/``) and
``openai`` (an OpenAI API model).  ``HONOURED`` = sent and applied as the hf backend
applies it; ``EMULATED`` = applied by this project around the backend (stated per cell);
``REFUSED`` = the backend cannot apply it: a stage that sets it fails at config check,
naming the stage, the model and the choices -- unless the model's
``serve.unsupported_decoding: drop`` (served) accepts decoding without it, which is then
recorded in each job's usage record and the manifest (``dropped_decoding``).

vLLM's beam search (``use_beam_search`` with ``n`` beams) runs in its API layer and keeps
only ``BeamSearchParams`` (beam width, max tokens, temperature, length penalty, ...):
``min_tokens``, ``stop``, ``repetition_penalty``, ``seed`` and ``top_p`` sent with it are
accepted and ignored.  So beam search *with* any of them is refused on vllm, even though
each alone is honoured (:func:`refusals` checks the combination).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from isqaflow import backends

HONOURED, EMULATED, REFUSED = "honoured", "emulated", "refused"
BACKENDS = ("hf", "vllm", "openai")

# parameter -> backend -> (status, how)
TABLE: dict[str, dict[str, tuple[str, str]]] = {
    "max_new_tokens": {
        "hf": (HONOURED, "max_new_tokens"),
        "vllm": (HONOURED, "max_tokens"),
        "openai": (HONOURED, "max_tokens"),
    },
    "min_new_tokens": {
        "hf": (HONOURED, "min_new_tokens"),
        "vllm": (
            HONOURED,
            "min_tokens (greedy/sampling only; ignored by beam search: refused with num_beams > 1)",
        ),
        "openai": (REFUSED, "no such API field"),
    },
    "num_beams": {
        "hf": (HONOURED, "num_beams"),
        "vllm": (
            HONOURED,
            "use_beam_search + n (in vLLM's API layer; the best beam is choices[0])",
        ),
        "openai": (REFUSED, "no beam search in the API"),
    },
    "do_sample": {
        "hf": (HONOURED, "do_sample"),
        "vllm": (EMULATED, "temperature 0 when false"),
        "openai": (EMULATED, "temperature 0 when false"),
    },
    "temperature": {
        "hf": (HONOURED, "temperature"),
        "vllm": (HONOURED, "temperature"),
        "openai": (HONOURED, "temperature"),
    },
    "top_p": {
        "hf": (HONOURED, "top_p"),
        "vllm": (HONOURED, "top_p (ignored by beam search)"),
        "openai": (HONOURED, "top_p"),
    },
    "no_repeat_ngram_size": {
        "hf": (HONOURED, "no_repeat_ngram_size"),
        "vllm": (REFUSED, "vLLM has no n-gram blocking"),
        "openai": (REFUSED, "no such API field"),
    },
    "repetition_penalty": {
        "hf": (HONOURED, "repetition_penalty"),
        "vllm": (
            HONOURED,
            "repetition_penalty (ignored by beam search: refused with num_beams > 1)",
        ),
        "openai": (REFUSED, "no such API field (frequency_penalty is another formula)"),
    },
    "max_input_tokens": {
        "hf": (HONOURED, "a longer request is cut from the left (keeps the end)"),
        "vllm": (HONOURED, "truncate_prompt_tokens (vLLM truncates from the left: keeps the end)"),
        "openai": (REFUSED, "the API cannot cut a prompt; a request within the limit is sent"),
    },
    "stop": {
        "hf": (HONOURED, "stop_strings"),
        "vllm": (HONOURED, "stop (ignored by beam search: refused with num_beams > 1)"),
        "openai": (HONOURED, "stop"),
    },
    "seed": {
        "hf": (HONOURED, "torch generator seed"),
        "vllm": (HONOURED, "seed (ignored by beam search)"),
        "openai": (HONOURED, "seed (best effort on the API's side)"),
    },
}
DEFAULTS = {
    "max_new_tokens": None,
    "min_new_tokens": 0,
    "num_beams": 1,
    "do_sample": False,
    "temperature": 1.0,
    "top_p": 1.0,
    "no_repeat_ngram_size": 0,
    "repetition_penalty": 1.0,
    "max_input_tokens": None,
    "stop": (),
    "seed": 0,
}
# fields vLLM's beam search ignores (not read by to_beam_search_params), among those set by a stage
BEAM_IGNORED = {
    "min_new_tokens": "min_tokens",
    "repetition_penalty": "repetition_penalty",
    "stop": "stop",
}
# what a field does not change when at its default (seed and sampling settings matter only when sampling)
ONLY_WHEN_SAMPLING = {"temperature", "top_p", "seed"}


def backend_of(entry: Mapping[str, Any]) -> str | None:
    """hf, vllm or openai for a model entry; None for a served model of another engine (its own rules)."""
    record = backends.backend_of(entry)
    serve = entry.get("serve")
    if serve and record.servable:
        return "vllm" if serve.get("engine") == "vllm" else None
    return record.capabilities


def set_parameters(generation: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters a generation mapping sets to a value that changes decoding."""
    out = {}
    sampling = bool(generation.get("do_sample"))
    for key, value in generation.items():
        if key not in TABLE:
            continue
        if key in ONLY_WHEN_SAMPLING and not sampling:
            continue
        default = DEFAULTS[key]
        if value is None or value == default or (key == "stop" and not value):
            continue
        out[key] = value
    return out


def refusals(generation: Mapping[str, Any], backend: str) -> list[str]:
    """``key=value`` of each parameter the backend cannot honour (beam search's ignored fields included)."""
    params = set_parameters(generation)
    refused = [f"{k}={v}" for k, v in params.items() if TABLE[k][backend][0] == REFUSED]
    if backend == "vllm" and params.get("num_beams", 1) > 1:
        refused += [
            f"{k}={params[k]} (with num_beams={params['num_beams']}: vLLM's beam search ignores "
            f"{BEAM_IGNORED[k]})"
            for k in BEAM_IGNORED
            if k in params
        ]
    return refused


def applied(
    generation: Mapping[str, Any], backend: str, dropped: list[str] | None = None
) -> dict[str, Any]:
    """What a stage actually decodes with on ``backend`` (for its records and the manifest):
    each set parameter with its status and how it is sent; dropped ones marked as such."""
    dropped = dropped or []
    out = {}
    for key, value in set_parameters(generation).items():
        status, how = TABLE[key][backend]
        if any(d.startswith(f"{key}=") for d in dropped):
            status, how = "dropped", "decoded without it (serve.unsupported_decoding: drop)"
        out[key] = {
            "value": list(value) if isinstance(value, tuple) else value,
            "status": status,
            "how": how,
        }
    return out


def choices(stage: str, model: str, backend: str, refused: list[str]) -> str:
    """The message of a refusal: what cannot be honoured and what the user can do."""
    keys = sorted({r.split("=", 1)[0] for r in refused})
    options = [
        f"run model {model} with the hf backend for this stage (no serve:)"
        if backend == "vllm"
        else "use a local model (hf backend) for this stage",
        f"drop {', '.join(keys)} from {stage}",
    ]
    if backend == "vllm":
        options.append(
            f"set models.{model}.serve.unsupported_decoding: drop to decode without "
            f"{'them' if len(keys) > 1 else 'it'} (recorded in the records and the manifest)"
        )
    return (
        f"model {model} ({backend}) cannot honour {', '.join(refused)}; choices: "
        + "; or ".join(options)
    )


def markdown_table() -> str:
    """The table for the documentation (docs/paper-scale.md holds this text; a test compares them)."""
    lines = ["| parameter | hf (in-process) | vLLM (served) | OpenAI API |", "|---|---|---|---|"]
    for key, row in TABLE.items():
        cells = [f"{row[b][0]}: {row[b][1]}" for b in BACKENDS]
        lines.append(f"| `{key}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
