"""Hugging Face transformers backend: causal and seq2seq models, optional peft adapter.

The backend class composes :mod:`.loading` (device, dtype, template, weights),
:mod:`.shared_prefixes` (batches and shared prefixes), :mod:`.generation` and
:mod:`.scoring`.

* Chat conversations go through the chat template (``apply_chat_template``): the
  entry's ``chat_template`` (a shipped name, a Jinja file, or ``none`` for plain text
  on purpose) or else the tokenizer's own.  A causal model with neither fails when
  it is loaded, before its weights are read (:mod:`.templates`); a seq2seq model
  without one (Flan-T5) gets the turns as plain text, by design.
* Generation is batched: requests are sorted by length, left-padded (causal) with
  attention masks, and decoded greedily, with beams or by sampling as the
  :class:`~.base.GenerationParams` say.
* ``dtype="auto"`` is bfloat16 on a GPU that supports it and float32 on the CPU
  (measured: on CPU, fp32 batches scale and bf16 does not); ``device="auto"`` is
  CUDA when present.
* Scoring computes the log-probability of each candidate continuation with batched
  forward passes; when every candidate is a single token (YES/NO, 1/2/3) one forward
  pass over the context answers all of them.
* ``on_batch`` (generate and score): called after every batch with the ``(index,
  result)`` pairs that batch finished, so the call cache can commit them while the
  rest of the plan (length order, prefix groups) runs on.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from isqaflow.models import usage
from isqaflow.models.base import LanguageModel
from isqaflow.models.inprocess.generation import Generating
from isqaflow.models.inprocess.loading import (
    chat_template_for,
    load_pretrained,
    resolve_device,
    resolve_dtype,
)
from isqaflow.models.inprocess.shared_prefixes import (
    DECODE_STEP_TOKENS,
    MIN_SHARED_PREFIX,
    PAD_FILL,
    PrefixKV,
    SharedPrefixes,
    common_prefix_of,
    length_batches,
)
from isqaflow.models.inprocess.scoring import Scoring
from isqaflow.models.identity import adapter_fingerprint, model_fingerprint
from isqaflow.models.inprocess.prefix_groups import PrefixStore
from isqaflow.models.tokenized import TokenizedText

__all__ = [
    "DECODE_STEP_TOKENS",
    "MIN_SHARED_PREFIX",
    "PAD_FILL",
    "HFModel",
    "SharedPrefixes",
    "chat_template_for",
    "common_prefix_of",
    "length_batches",
    "resolve_device",
    "resolve_dtype",
]

log = logging.getLogger(__name__)


class HFModel(Generating, Scoring, PrefixKV, TokenizedText, LanguageModel):
    backend = "hf"

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        adapter: str | None = None,
        dtype: str = "auto",
        device: str = "auto",
        batch_size: int = 8,
        score_batch_tokens: int = 8192,
        trust_remote_code: bool = False,
        prefix_sharing: bool = True,
        prefix_cache_mb: int = 1024,
        chat_template: str | None = None,
        threads: int | None = None,
        name: str | None = None,
    ) -> None:
        import torch

        if threads:
            torch.set_num_threads(threads)
        self.name = name or model
        self.model_id = model
        self.revision = revision
        self.adapter_path = adapter
        self.batch_size = batch_size
        self.score_batch_tokens = score_batch_tokens
        self.prefix_sharing = prefix_sharing
        # keys and values of sequences already read, reused by later requests that start alike
        self.store = (
            PrefixStore(prefix_cache_mb * 2**20) if prefix_sharing and prefix_cache_mb else None
        )
        self.device = resolve_device(device, self.name)
        self.torch_dtype = resolve_dtype(dtype, self.device)
        started = time.monotonic()
        config, self.tokenizer, self.chat_template, self.net = load_pretrained(
            model,
            revision=revision,
            adapter=adapter,
            torch_dtype=self.torch_dtype,
            device=self.device,
            trust_remote_code=trust_remote_code,
            chat_template=chat_template,
            name=self.name,
        )
        self.is_seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        self.has_chat_template = not self.chat_template.plain_text
        self._identity = {
            "backend": self.backend,
            "model": model if not Path(model).exists() else Path(model).name,
            # for a hub id: the commit actually loaded (pinned or resolved from the cache)
            "revision": revision or getattr(config, "_commit_hash", None),
            "weights": model_fingerprint(model) if Path(model).exists() else None,
            "adapter": adapter_fingerprint(adapter) if adapter else None,
            "dtype": str(self.torch_dtype).removeprefix("torch."),
        }
        if chat_template is not None:  # only when configured: unconfigured keys stay as they were
            self._identity["chat_template"] = self.chat_template.sha256 or self.chat_template.source
        self.usage = usage.register(
            self.name,
            self.backend,
            self._identity["model"],
            chat_template=self.chat_template.record(),
        )
        log.info(
            "loaded %s (%s, %s, %s%s) in %.1fs",
            self.name,
            "seq2seq" if self.is_seq2seq else "causal",
            self.device,
            self._identity["dtype"],
            f", adapter {adapter}" if adapter else "",
            time.monotonic() - started,
        )

    # ------------------------------------------------------------------ identity
    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def close(self) -> None:
        import gc

        del self.net
        gc.collect()
