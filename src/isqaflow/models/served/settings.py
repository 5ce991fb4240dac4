"""Settings of a served model: the ``serve:`` section and the server's command line.

``serve`` keys (``models.<name>.serve``):

* ``command`` -- the command line, split like a shell would (no shell runs it), with
  placeholders ``{model}`` (the entry's ``model``) and ``{port}`` (required: a free
  port chosen by the job), ``{host}`` (127.0.0.1), ``{revision}``, ``{dtype}``,
  ``{chat_template}`` (a Jinja file holding the entry's template), ``{threads}``
  (the job's threads).  A setting that changes outputs must reach the server:
  a configured ``chat_template``, ``revision`` or a non-auto ``dtype`` without its
  placeholder is an error, not silently ignored.
* ``engine`` -- ``vllm``, ``transformers`` (``transformers serve``) or ``other``:
  which request extensions the server understands (default ``other``: the plain
  OpenAI API).  vLLM: ``min_tokens``, ``repetition_penalty``, beam search
  (``use_beam_search`` with ``n`` beams; it ignores ``min_tokens``, ``stop`` and
  ``repetition_penalty``, so those are refused with beams), token-id prompts (a
  log-prob judge's prompt, rendered by the client) and ``prompt_logprobs``; it has no n-gram blocking
  (the whole table: :mod:`isqaflow.models.capabilities`).
  transformers: every decoding setting, as a ``generation_config``; no
  log-probabilities.
* ``unsupported_decoding`` -- ``error`` (default): a decoding setting the engine
  cannot apply fails the first request, naming the model and the setting;
  ``drop``: decode without it, with a warning, recorded in the job's usage record.
* ``lora_args`` -- appended when the job uses a LoRA adapter (the adapter path comes
  from the rule, as for the hf backend): placeholders ``{adapter}`` (its path) and
  ``{adapter_name}`` (the name requests then ask for).  A job with an adapter and
  no ``lora_args`` fails at start.
* ``extra_args`` -- a list of further arguments, appended as they are.
* ``ready_timeout`` (s, default 900), ``stop_timeout`` (s, default 20).

What the project adds to every vLLM server it starts (:meth:`ServeSettings.argv_template`,
:meth:`ServeSettings.server_env`):

* ``--generation-config vllm`` unless the command sets ``--generation-config`` itself:
  vLLM otherwise takes every sampling setting a request leaves out from the checkpoint's
  ``generation_config.json`` (``get_diff_sampling_param`` in ``vllm/config/model.py``).
  The requests send every decoding setting as well (:mod:`.model`), so either alone
  would do; the flag is part of the server's record (``command``), i.e. of the cache identity.
* ``VLLM_ENGINE_READY_TIMEOUT_S`` = ``ready_timeout`` (whole seconds, rounded up) in the
  server's environment: vLLM waits that long for its engine core, which is ready only
  after the weights are loaded (``vllm/envs.py``: default 600 s), so without it a large
  checkpoint dies in vLLM's own timeout however long the job waits.
"""

from __future__ import annotations

import math
import shlex
import socket
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ENGINES = ("vllm", "transformers", "other")
PLACEHOLDERS = {
    "model",
    "port",
    "host",
    "revision",
    "dtype",
    "chat_template",
    "threads",
    "adapter",
    "adapter_name",
}
LOCALHOST = "127.0.0.1"
# an environment variable nobody sets: a served model never sends a real API key
SERVED_KEY_ENV = "ISQAFLOW_SERVED_MODEL_KEY"
# vLLM: the checkpoint's generation_config.json sets no default of any request (module docstring)
VLLM_GENERATION_CONFIG = ("--generation-config", "vllm")
# vLLM's own wait for its engine core, in whole seconds (vllm/envs.py; 600 when unset)
VLLM_READY_ENV = "VLLM_ENGINE_READY_TIMEOUT_S"


@dataclass(frozen=True)
class ServeSettings:
    """``models.<name>.serve``; see the module docstring."""

    command: str
    engine: str = "other"
    ready_timeout: float = 900.0
    stop_timeout: float = 20.0
    extra_args: tuple[str, ...] = ()
    lora_args: str | None = None
    unsupported_decoding: str = "error"

    @classmethod
    def from_config(cls, values: Mapping[str, Any], model_name: str) -> ServeSettings:
        where = f"models.{model_name}.serve"
        if not isinstance(values, Mapping):
            raise ValueError(f"{where} must be a mapping with at least a command, got {values!r}")
        unknown = set(values) - {
            "command",
            "engine",
            "ready_timeout",
            "stop_timeout",
            "extra_args",
            "lora_args",
            "unsupported_decoding",
        }
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}")
        command = values.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ValueError(f"{where}.command must be the server's command line, got {command!r}")
        engine = values.get("engine", "other")
        if engine not in ENGINES:
            raise ValueError(f"{where}.engine must be one of {', '.join(ENGINES)}, got {engine!r}")
        policy = values.get("unsupported_decoding", "error")
        if policy not in ("error", "drop"):
            raise ValueError(f"{where}.unsupported_decoding must be error or drop, got {policy!r}")
        timeouts = {}
        for key, default in (("ready_timeout", 900.0), ("stop_timeout", 20.0)):
            value = values.get(key, default)
            if not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(
                    f"{where}.{key} must be a positive number of seconds, got {value!r}"
                )
            timeouts[key] = float(value)
        extra = values.get("extra_args", ())
        if isinstance(extra, str) or not all(isinstance(a, str) for a in extra):
            raise ValueError(f"{where}.extra_args must be a list of strings, got {extra!r}")
        lora = values.get("lora_args")
        if lora is not None and not isinstance(lora, str):
            raise ValueError(f"{where}.lora_args must be a string, got {lora!r}")
        settings = cls(
            command=command,
            engine=engine,
            extra_args=tuple(extra),
            lora_args=lora,
            unsupported_decoding=policy,
            **timeouts,
        )
        fields = settings.placeholders()
        unknown_fields = fields - PLACEHOLDERS
        if unknown_fields:
            raise ValueError(
                f"{where}: unknown placeholder(s) {sorted(unknown_fields)} "
                f"(known: {', '.join(sorted(PLACEHOLDERS))})"
            )
        missing = {"model", "port"} - _fields(shlex.split(command))
        if missing:
            raise ValueError(
                f"{where}.command must contain {{model}} and {{port}}; it lacks "
                f"{', '.join('{' + m + '}' for m in sorted(missing))}"
            )
        return settings

    def placeholders(self, with_lora: bool = True) -> set[str]:
        return _fields(self.argv_template(with_lora))

    def argv_template(self, with_lora: bool) -> list[str]:
        argv = shlex.split(self.command) + list(self.extra_args)
        if self.engine == "vllm" and not any(
            a.split("=", 1)[0] == VLLM_GENERATION_CONFIG[0] for a in argv
        ):
            argv += list(VLLM_GENERATION_CONFIG)
        if with_lora and self.lora_args:
            argv += shlex.split(self.lora_args)
        return argv

    def argv(self, values: Mapping[str, Any], with_lora: bool) -> list[str]:
        """The command line with every placeholder filled (each argument formatted on its own)."""
        return [arg.format(**values) for arg in self.argv_template(with_lora)]

    def server_env(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The server's environment: ``environ`` and, for vLLM, its engine wait = ``ready_timeout``."""
        env = dict(environ)
        if self.engine == "vllm":
            env[VLLM_READY_ENV] = str(math.ceil(self.ready_timeout))
        return env

    def record(self, with_lora: bool) -> dict[str, Any]:
        """What identifies the server (for the cache identity and the usage record): no port."""
        return {"engine": self.engine, "command": self.argv_template(with_lora)}


def _fields(args: Sequence[str]) -> set[str]:
    return {
        field
        for arg in args
        for _, field, _, _ in string.Formatter().parse(arg)
        if field is not None
    }


def free_port(host: str = LOCALHOST) -> int:
    """A port nothing listens on now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def with_adapter_server(spec: Mapping[str, Any], adapter: str, adapter_name: str) -> dict[str, Any]:
    """``spec`` (a model entry) such that the base model and ``adapter`` share one server in this job.

    For a job that uses a base model both alone and with its LoRA adapter (``evaluate_feedback``:
    before and after fine-tuning) but has no GPU plan that says so: its ``server_plan`` serves the
    adapter as ``adapter_name`` next to the base, so the first model loaded starts the one server
    (with ``lora_args``) and the other asks it.  The models must then be open at the same time: the
    last one's ``close`` stops the server.  A spec without ``serve:`` is returned unchanged."""
    out = dict(spec)
    if not out.get("serve"):
        return out
    plan = dict(out.get("server_plan") or {})
    adapters = dict(plan.get("adapters") or {})
    if adapters and set(adapters) != {adapter_name}:
        raise ValueError(
            f"model {out.get('model')}: the job's server already serves the adapter(s) "
            f"{sorted(adapters)}; lora_args takes one"
        )
    plan["adapters"] = {adapter_name: str(adapter)}
    plan.setdefault("server", f"{out['model']}@{out.get('dtype', 'auto')}+{adapter_name}")
    out["server_plan"] = plan
    return out
