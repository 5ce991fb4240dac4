"""A local model behind an OpenAI-compatible server that the job starts and stops itself.

A local (``backend: hf``) model entry with a ``serve:`` section is not loaded into
the job's process: the job starts the server on its own node (under SLURM inside
the job's allocation, so the stage asks for its GPU as before) and talks to it
through the ``openai`` backend::

    vicuna-7b:
      backend: hf
      model: lmsys/vicuna-7b-v1.5
      chat_template: vicuna_v1.1
      serve:
        engine: vllm
        command: vllm serve {model} --host {host} --port {port} --chat-template {chat_template}
        lora_args: --enable-lora --max-lora-rank 8 --lora-modules {adapter_name}={adapter}
        ready_timeout: 1800

``serve`` keys: :mod:`.settings`; the server's life cycle: :mod:`.process`.

With the job's GPU plan (``server_plan``, :mod:`isqaflow.models.planning.gpu_plan`, passed by the rule) the
server gets the plan's ``--tensor-parallel-size``, ``--gpu-memory-utilization`` and
``--max-model-len`` and its own GPUs (``CUDA_VISIBLE_DEVICES``: entries of the job's
own list), and models of the job with the same weights share one server (the first
starts it, with the adapter the plan serves beside the base model; the last one's
``close`` stops it).  vLLM's answers are read as vLLM means them: with beam search
``usage.completion_tokens`` adds up all n beams, so the best beam's own token ids
count; a log-probability of -9999.0 is vLLM's -inf.

The client side (:class:`ServedModel`) loads the model's tokenizer -- not its
weights -- so the chat template is checked before the server starts, token counts
and truncation are exact, plain-text requests (a prompt string, or
``chat_template: none``) go to the completions endpoint as the text the hf backend
would read, and ``logprobs: prompt_logprobs`` (vLLM) scores candidates exactly as
the hf backend does.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from isqaflow.models import usage
from isqaflow.models.base import (
    BatchCallback,
    Generation,
    GenerationParams,
    Request,
    flatten_messages,
)
from isqaflow.models.identity import adapter_fingerprint, model_fingerprint
from isqaflow.models.api.openai import LogprobsUnavailable, OpenAIModel, split_candidates
from isqaflow.models.served.process import (
    ManagedServer,
    ServerStartError,
    group_alive,
    group_members,
)
from isqaflow.models.served.settings import (
    ENGINES,
    LOCALHOST,
    PLACEHOLDERS,
    SERVED_KEY_ENV,
    ServeSettings,
    free_port,
    with_adapter_server,
)
from isqaflow.models.tokenized import TokenizedText

__all__ = [
    "ENGINES",
    "LOCALHOST",
    "PLACEHOLDERS",
    "SERVED_KEY_ENV",
    "ManagedServer",
    "ServeSettings",
    "ServedModel",
    "ServerStartError",
    "free_port",
    "group_alive",
    "group_members",
    "with_adapter_server",
]

log = logging.getLogger(__name__)
# vLLM's floor for log-probabilities: -inf comes back as -9999.0 (tests/fixtures/vllm-0.33.0-interface.json)
LOGPROB_FLOOR = -9999.0
# servers shared by several models of this job (the GPU plan's ``server`` key) -> (server, its models)
_SHARED: dict[str, tuple[Any, list[Any]]] = {}
# vLLM sampling fields the project never changes, sent at their neutral values (0: top_k off)
VLLM_NEUTRAL = {"top_k": 0, "min_p": 0.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}


class ServedModel(TokenizedText, OpenAIModel):
    """A local model served by a :class:`ManagedServer` for this job; see the module docstring."""

    backend = "served"

    def __init__(
        self,
        model: str,
        *,
        serve: Mapping[str, Any],
        adapter: str | None = None,
        revision: str | None = None,
        dtype: str = "auto",
        chat_template: str | None = None,
        trust_remote_code: bool = False,
        logprobs: str = "top_logprobs",
        top_logprobs: int = 20,
        concurrency: int = 64,
        timeout: float = 600.0,
        max_retries: int = 2,
        backoff: float = 1.0,
        threads: int | None = None,
        name: str | None = None,
        server_plan: Mapping[str, Any] | None = None,
    ) -> None:
        from transformers import AutoConfig, AutoTokenizer

        from isqaflow.models.inprocess.loading import chat_template_for

        self.name = name or model
        self.settings = ServeSettings.from_config(serve, self.name)
        self.model_path = model
        self.adapter_path = adapter
        where = f"models.{self.name}"
        if logprobs == "prompt_logprobs" and self.settings.engine != "vllm":
            raise LogprobsUnavailable(
                f"model {self.name}: logprobs: prompt_logprobs is a vLLM extension; "
                f"{where}.serve.engine is {self.settings.engine}"
            )
        # The tokenizer, not the weights: the template is checked before any server starts.
        config = AutoConfig.from_pretrained(
            model, revision=revision, trust_remote_code=trust_remote_code
        )
        self.is_seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        self.tokenizer = AutoTokenizer.from_pretrained(
            model, revision=revision, trust_remote_code=trust_remote_code
        )
        self.chat_template = chat_template_for(
            self.tokenizer, chat_template, self.name, self.is_seq2seq
        )
        self.has_chat_template = not self.chat_template.plain_text
        # The job's GPU plan (isqaflow.models.planning.gpu_plan, passed by the rule): the server's flags and
        # GPUs, and the adapter a shared server serves next to its base model.
        plan = dict(server_plan or {})
        plan_adapters = dict(plan.get("adapters") or {})
        if len(plan_adapters) > 1:
            raise ValueError(
                f"model {self.name}: the GPU plan serves {len(plan_adapters)} adapters on one server; "
                "lora_args takes one"
            )
        adapter_name = f"{self.name}-adapter"
        served_adapter = adapter
        if plan_adapters:
            ((adapter_name, served_adapter),) = plan_adapters.items()
            if adapter and os.path.abspath(adapter) != os.path.abspath(served_adapter):
                raise ValueError(
                    f"model {self.name}: the job uses the adapter {adapter}, the GPU plan serves "
                    f"{served_adapter}"
                )
        with_lora = served_adapter is not None
        fields = self.settings.placeholders(with_lora=with_lora)
        configured_template = chat_template is not None and self.chat_template.text is not None
        if configured_template != ("chat_template" in fields):
            raise ValueError(
                f"model {self.name}: {where}.serve.command "
                + (
                    "must pass the configured chat_template to the server: add {chat_template} (vLLM: "
                    "--chat-template {chat_template})"
                    if configured_template
                    else "has {chat_template}, but the entry configures no chat template file or name"
                )
            )
        if revision and "revision" not in fields:
            raise ValueError(
                f"model {self.name}: revision {revision} is pinned, but {where}.serve.command "
                "does not pass it: add {revision} (vLLM: --revision {revision})"
            )
        if dtype != "auto" and "dtype" not in fields:
            raise ValueError(
                f"model {self.name}: dtype {dtype} is set, but {where}.serve.command does not "
                "pass it: add {dtype} (vLLM: --dtype {dtype})"
            )
        if served_adapter is not None and not self.settings.lora_args:
            raise ValueError(
                f"model {self.name}: the job uses the LoRA adapter {served_adapter}, but {where}.serve "
                "has no lora_args (vLLM: --enable-lora --lora-modules {adapter_name}={adapter})"
            )
        local = Path(model).exists()
        self._identity = {
            "backend": self.backend,
            "model": Path(model).name if local else model,
            "revision": revision or getattr(config, "_commit_hash", None),
            "weights": model_fingerprint(model) if local else None,
            "adapter": adapter_fingerprint(adapter) if adapter else None,
            "chat_template": self.chat_template.sha256 or self.chat_template.source,
            "server": self.settings.record(adapter is not None),
        }
        self.server_plan = plan
        shared_key = plan.get("server")
        shared = _SHARED.get(shared_key) if shared_key else None
        if shared is not None and shared[0].stopped:
            shared = None
        port = shared[0].port if shared else free_port()
        template_file = self._template_file() if configured_template else None
        values = {
            "model": model,
            "port": port,
            "host": LOCALHOST,
            "revision": revision or "",
            "dtype": dtype,
            "chat_template": template_file or "",
            "threads": threads or 1,
            "adapter": os.path.abspath(served_adapter) if served_adapter else "",
            "adapter_name": adapter_name,
        }
        request_name = adapter_name if adapter else model
        super().__init__(
            request_name,
            base_url=f"http://{LOCALHOST}:{port}/v1",
            api_key_env=SERVED_KEY_ENV,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            concurrency=concurrency,
            logprobs=logprobs,
            top_logprobs=top_logprobs,
            name=self.name,
        )
        if (
            shared is not None
        ):  # the plan's one server for this base model: started by an earlier model
            self.server = shared[0]
            shared[1].append(self)
            log.info(
                "%s: shares the server of %s at %s (GPU plan)",
                self.name,
                self.server.name,
                self.server.base_url,
            )
            return
        env = self.settings.server_env(os.environ)
        if plan.get("gpus") is not None:
            devices = [d for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
            env["CUDA_VISIBLE_DEVICES"] = ",".join(
                devices[i] if devices else str(i) for i in plan["gpus"]
            )
        argv = self.settings.argv(values, with_lora=with_lora) + [
            str(a) for a in plan.get("args", ())
        ]
        self.server = ManagedServer(
            argv,
            name=self.name,
            port=port,
            probe_model=request_name,
            ready_timeout=self.settings.ready_timeout,
            stop_timeout=self.settings.stop_timeout,
            env=env,
        )
        if shared_key:
            _SHARED[shared_key] = (self.server, [self])
        self.server.start().wait_ready()

    def _template_file(self) -> str:
        """A file holding the configured template, for the server's {chat_template}."""
        source = self.chat_template.source
        if source.startswith("file:"):
            return os.path.abspath(source.removeprefix("file:"))
        from isqaflow.models.templates import NAMED, TEMPLATE_DIR

        return str(TEMPLATE_DIR / NAMED[source.removeprefix("named:")])

    # ------------------------------------------------------------ OpenAIModel hooks
    def _check_logprob_mode(self, mode: str) -> None:
        return None  # prompt_logprobs is possible here (checked against the engine above)

    def _register_usage(self) -> usage.ModelUsage:
        server = self.settings.record(self.adapter_path is not None)
        if self.server_plan:
            server["gpu_plan"] = {k: v for k, v in self.server_plan.items() if k != "adapters"}
        return usage.register(
            self.name,
            self.backend,
            self._identity["model"],
            chat_template=self.chat_template.record(),
            server=server,
        )

    def _prompt_tokens(self, request: Request) -> int | None:
        return len(self.encode_request(request))

    def _length_advice(self) -> str:
        where = f"models.{self.name}"
        limit = (
            f"the GPU plan's --max-model-len (from the stage's generation max_input_tokens, or "
            f"{where}.gpu.context)"
            if "--max-model-len" in self.server_plan.get("args", ())
            else f"the server's --max-model-len ({where}.serve.extra_args: [--max-model-len, N], up to the "
            "model's own context)"
        )
        return (
            f"raise {limit}, or cut the prompts to fit: the stage's generation max_input_tokens (vLLM "
            "keeps the prompt's end)"
        )

    def _capability_backend(self) -> str:
        return {"vllm": "vllm", "transformers": "hf"}.get(self.settings.engine, "openai")

    def _sampling(self, params: GenerationParams) -> dict[str, Any]:
        kwargs = super()._sampling(params)
        if self.settings.engine == "vllm" and params.num_beams > 1:
            kwargs.pop(
                "stop", None
            )  # vLLM's beam search ignores it (refused or dropped in _decoding_extras)
        return kwargs

    def _output_tokens(self, response: Any) -> int:
        """New tokens of the answer: with beam search vLLM's completion_tokens adds up all n beams,
        so the first (best) choice's own token ids count, or an even share when they are absent."""
        total = super()._output_tokens(response)
        choices = getattr(response, "choices", None) or []
        if len(choices) <= 1:
            return total
        ids = getattr(choices[0], "token_ids", None)
        if ids is None and getattr(choices[0], "model_extra", None):
            ids = choices[0].model_extra.get("token_ids")
        return len(ids) if ids is not None else total // len(choices)

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def _plain_text(self, request: Request) -> str | None:
        if isinstance(request, str):
            return request
        return None if self.has_chat_template else flatten_messages(request)

    def _decoding_extras(self, params: GenerationParams) -> dict[str, Any]:
        engine = self.settings.engine
        if engine == "transformers":  # every setting, as the in-process backend would use it
            config: dict[str, Any] = {
                "max_new_tokens": params.max_new_tokens,
                "num_beams": params.num_beams,
                "do_sample": params.do_sample,
            }
            if params.do_sample:
                config.update(temperature=params.temperature, top_p=params.top_p)
            for key, default in (
                ("min_new_tokens", 0),
                ("no_repeat_ngram_size", 0),
                ("repetition_penalty", 1.0),
            ):
                if getattr(params, key) != default:
                    config[key] = getattr(params, key)
            return {"generation_config": json.dumps(config, sort_keys=True)}
        extras: dict[str, Any] = {}
        unsupported: list[str] = []
        if engine == "vllm":
            beams = params.num_beams > 1
            if beams:
                # vLLM runs beam search in its API layer with BeamSearchParams only: min_tokens, stop and
                # repetition_penalty sent with it are accepted and ignored, so they are refused here
                extras.update(
                    use_beam_search=True, n=params.num_beams, return_token_ids=True
                )  # best first
                unsupported += [
                    f"{key}={value} (ignored by vLLM's beam search)"
                    for key, value, default in (
                        ("min_new_tokens", params.min_new_tokens, 0),
                        ("repetition_penalty", params.repetition_penalty, 1.0),
                        ("stop", list(params.stop), []),
                    )
                    if value != default
                ]
            else:
                # every field vLLM would otherwise take from the checkpoint's generation_config.json
                # (get_diff_sampling_param, vllm/config/model.py), sent even at its neutral value;
                # temperature, top_p and max_tokens come with every request (OpenAIModel._sampling)
                extras.update(
                    min_tokens=params.min_new_tokens,
                    repetition_penalty=params.repetition_penalty,
                    **VLLM_NEUTRAL,
                )
            if params.max_input_tokens:
                # keeps the end, as the hf backend: vLLM loads a generating model's tokenizer with
                # truncation_side left (0.33.0: vllm/tokenizers/registry.py; 0.11.0: transformers_utils/tokenizer.py)
                extras["truncate_prompt_tokens"] = params.max_input_tokens
        else:
            unsupported += [
                f"{key}={value}"
                for key, value, default in (
                    ("min_new_tokens", params.min_new_tokens, 0),
                    ("repetition_penalty", params.repetition_penalty, 1.0),
                    ("num_beams", params.num_beams, 1),
                )
                if value != default
            ]
        if params.no_repeat_ngram_size:
            unsupported.append(f"no_repeat_ngram_size={params.no_repeat_ngram_size}")
        self._unsupported(unsupported)
        return extras

    def _unsupported(self, settings: list[str]) -> None:
        """Apply ``serve.unsupported_decoding`` to settings the engine cannot apply."""
        if not settings:
            return
        engine = self.settings.engine
        if self.settings.unsupported_decoding == "error":
            raise ValueError(
                f"model {self.name}: the {engine} server cannot apply {', '.join(settings)}; set "
                f"models.{self.name}.serve.unsupported_decoding: drop to decode without "
                f"{'them' if len(settings) > 1 else 'it'} (recorded in the job's usage record), "
                "or run the model with the hf backend (no serve:)"
            )
        new = self.usage.note_dropped(list(settings))
        if new:
            log.warning(
                "%s: the %s server cannot apply %s; decoding without (unsupported_decoding: drop)",
                self.name,
                engine,
                ", ".join(new),
            )

    # ------------------------------------------------------------------ scoring
    def score_batch(
        self, items: Sequence[tuple[Request, Sequence[str]]], on_batch: BatchCallback | None = None
    ) -> list[list[float]]:
        if self.settings.engine == "transformers" and self.logprobs != "none":
            raise LogprobsUnavailable(
                f"model {self.name}: `transformers serve` returns no log-probabilities (it ignores "
                f"logprobs/top_logprobs), so logprobs: {self.logprobs} cannot score candidates; use a "
                "text-mode judge, serve.engine vllm, or the hf backend (no serve:)"
            )
        if self.logprobs != "prompt_logprobs":
            return super().score_batch(items, on_batch)
        rows = [
            (i, ids, cand)
            for i, (context, candidates) in enumerate(items)
            for ids, cand in self._candidate_rows(context, candidates)
        ]
        scores = self._map(
            lambda row: self._named_refusal(
                items[row[0]][0],
                lambda: self._prompt_logprob(row[1], row[2]),
                len(row[1]) + len(row[2]),
            ),
            rows,
        )
        out: list[list[float]] = [[] for _ in items]
        for (i, _, _), score in zip(rows, scores, strict=True):
            out[i].append(score)
        self.usage.add_scoring(items=len(items))
        if on_batch is not None:  # one request per candidate: the items are reported together
            on_batch(list(enumerate(out)))
        return out

    def _plan_scoring(
        self, context: Request, candidates: Sequence[str]
    ) -> tuple[Any, str, list[str]]:
        """As the API's, plus: a plain-text model continues the raw text (no prefill needed), and each
        candidate's rest must be one token after the prefix for this tokenizer.  On vLLM a chat request
        is rendered here and sent as token ids to the completions endpoint: the server then continues
        exactly the text the hf backend scores (the template followed by the prefix).  A prefill through
        the chat endpoint (continue_final_message) renders the prefix as the content of a finished
        assistant turn, which differs where the template writes more than the generation prompt before
        it (vicuna_v1.1: "ASSISTANT: <rating>", against the generation prompt's "ASSISTANT:<rating>")."""
        prefix, rests = split_candidates(list(candidates))
        text = self._plain_text(context)
        if text is None:
            head, templated = self.render(context)[0] + prefix, True
            if self.settings.engine != "vllm":
                self._check_prefill(prefix)
        else:
            head, templated = text + prefix, False
        base = self._encode(head, templated)
        payload: Any = (
            text
            if text is not None
            else base
            if self.settings.engine == "vllm"
            else self._messages(context)
        )
        for rest in rests:
            ids = self._encode(head + rest, templated)
            if ids[: len(base)] != base or len(ids) != len(base) + 1:
                raise LogprobsUnavailable(
                    f"model {self.name}: candidate {prefix + rest!r} is not one token after {prefix!r} for this "
                    "tokenizer, so logprobs: top_logprobs cannot score it; use logprobs: prompt_logprobs (vLLM)"
                )
        return payload, prefix, rests

    def _score_planned(self, payload: Any, prefix: str, rests: list[str]) -> list[float]:
        if (
            isinstance(payload, list) and payload and isinstance(payload[0], int)
        ):  # vLLM: the rendered ids
            prompt: Any = payload
            estimate = len(payload) + 1
        elif isinstance(payload, str):
            prompt, estimate = payload + prefix, self.count_tokens(payload) + 1
        else:
            return super()._score_planned(payload, prefix, rests)
        response = self._send(
            self.client.completions.create,
            estimate,
            model=self.model,
            prompt=prompt,
            max_tokens=1,
            temperature=0.0,
            logprobs=self.top_logprobs,
        )
        choice = response.choices[0]
        tops = getattr(choice.logprobs, "top_logprobs", None) if choice.logprobs else None
        if not tops or not tops[0]:
            raise LogprobsUnavailable(
                f"model {self.name}: the server returned no log-probabilities for a completion with "
                f"logprobs={self.top_logprobs} (logprobs: top_logprobs); use mode text, or a server that "
                "returns them (vLLM)"
            )
        return self._read_top(list(tops[0].items()), rests, prefix)

    def _candidate_rows(
        self, context: Request, candidates: Sequence[str]
    ) -> list[tuple[list[int], list[int]]]:
        """(prompt ids, candidate ids) per candidate, split exactly as the hf backend splits them."""
        text, templated = self.render(context)
        prompt_ids = self._encode(text, templated)
        if prompt_ids and prompt_ids[-1] == self.tokenizer.eos_token_id and not templated:
            prompt_ids = prompt_ids[:-1]
        rows = []
        for candidate in candidates:
            if not candidate:
                raise ValueError("cannot score an empty candidate")
            full = self._encode(text + candidate, templated)
            if not templated and full and full[-1] == self.tokenizer.eos_token_id:
                full = full[:-1]
            if full[: len(prompt_ids)] == prompt_ids and len(full) > len(prompt_ids):
                cand_ids = full[len(prompt_ids) :]
            else:
                cand_ids = self.tokenizer(candidate, add_special_tokens=False)["input_ids"]
            rows.append((prompt_ids, cand_ids))
        return rows

    def _prompt_logprob(self, prompt_ids: list[int], cand_ids: list[int]) -> float:
        ids = prompt_ids + cand_ids
        response = self._send(
            self.client.completions.create,
            len(ids) + 1,
            model=self.model,
            prompt=ids,
            max_tokens=1,
            temperature=0.0,
            extra_body={"prompt_logprobs": 0},
        )
        choice = response.choices[0]
        table = getattr(choice, "prompt_logprobs", None)
        if table is None and getattr(choice, "model_extra", None):
            table = choice.model_extra.get("prompt_logprobs")
        if not table or len(table) != len(ids):
            raise LogprobsUnavailable(
                f"model {self.name}: the server returned no prompt log-probabilities for a completion with "
                "prompt_logprobs=0 (logprobs: prompt_logprobs); that is a vLLM extension"
            )
        total = 0.0
        for position, token in zip(range(len(prompt_ids), len(ids)), cand_ids, strict=True):
            entry = (table[position] or {}).get(str(token))
            if entry is None:
                raise LogprobsUnavailable(
                    f"model {self.name}: prompt log-probabilities lack token {token} at "
                    f"position {position}"
                )
            value = float(entry["logprob"] if isinstance(entry, Mapping) else entry)
            if value <= LOGPROB_FLOOR:  # vLLM returns -inf as -9999.0
                return -math.inf
            total += value
        return total if math.isfinite(total) else -math.inf

    def generate(
        self,
        requests: Sequence[Request],
        params: GenerationParams,
        on_batch: BatchCallback | None = None,
    ) -> list[Generation]:
        over: list[int] = []
        if params.max_input_tokens:
            over = [max(0, len(self.encode_request(r)) - params.max_input_tokens) for r in requests]
            if (
                any(over) and self.settings.engine != "vllm"
            ):  # vLLM cuts them (truncate_prompt_tokens)
                self._unsupported(
                    [f"max_input_tokens={params.max_input_tokens} (a longer request)"]
                )
        cuts = over if any(over) and self.settings.engine == "vllm" else []

        def report(done: list[tuple[int, Generation]]) -> None:
            for i, generation in done:
                if cuts:
                    generation.truncated_tokens = cuts[i]
            if on_batch is not None:
                on_batch(done)

        results = super().generate(requests, params, report)
        for generation, cut in zip(results, cuts, strict=False):
            generation.truncated_tokens = cut
        return results

    def close(self) -> None:
        try:
            super().close()
        finally:
            users = next((entry[1] for entry in _SHARED.values() if entry[0] is self.server), None)
            if users is not None and self in users:
                users.remove(self)
            if not users:  # the last model on a shared server, or a server of its own
                self.server.stop()
