"""Hugging Face transformers backend: causal and seq2seq models, optional peft adapter.

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from isqaflow.models.base import (
    BatchCallback,
    Generation,
    GenerationParams,
    LanguageModel,
    Request,
)
from isqaflow.models import usage
from isqaflow.models.identity import adapter_fingerprint, model_fingerprint
from isqaflow.models.prefix import PrefixStore, common_prefix, prefix_groups
from isqaflow.models.templates import (
    SEQ2SEQ_PLAIN,
    ChatTemplate,
    missing_template_error,
    resolve_chat_template,
    tokenizer_template,
)
from isqaflow.models.tokenized import TokenizedText

log = logging.getLogger(__name__)

# A shared prefix shorter than this is not worth a separate forward pass.
MIN_SHARED_PREFIX = 32
# Rows scored together are at least this share of the batch's longest row (see length_batches).
PAD_FILL = 0.85
# A decoding step of a batch costs about as much as this many prompt tokens (CPU, measured
# on SmolLM2-135M: ~57 ms a step, ~275 prompt tokens/s): padding up to this many tokens per
# new token to decode is cheaper than a further batch (see length_batches).
DECODE_STEP_TOKENS = 16


def common_prefix_of(sequences: list[list[int]]) -> int:
    """Length of the token prefix shared by all sequences."""
    return min((common_prefix(sequences[0], s) for s in sequences[1:]), default=len(sequences[0]))


def length_batches(order: Sequence[int], lengths: Sequence[int], max_rows: int | None = None,
                   max_tokens: int | None = None, max_waste: int | None = None) -> list[list[int]]:
    """Consecutive batches of ``order`` (rows sorted longest first) for left-padded forward passes.

    A batch holds at most ``max_rows`` rows and ``max_tokens`` padded tokens, and no row
    longer than its first (``order`` may restart its descent, as when rows come group by
    group).  On a CPU a forward pass costs what its padded tokens cost, so padding is
    limited: without ``max_waste`` no row is shorter than ``PAD_FILL`` of the first (scoring:
    one forward pass per batch); with it, the batch's padding stays within ``max_waste``
    tokens (generation: a further batch costs a further run of decoding steps, worth
    ``max_waste`` tokens of padding).
    """
    batches: list[list[int]] = []
    pos = 0
    while pos < len(order):
        width = max(lengths[order[pos]], 1)
        limit = len(order) - pos
        if max_rows is not None:
            limit = min(limit, max_rows)
        if max_tokens is not None:
            limit = min(limit, max(1, max_tokens // width))
        take, waste = 1, 0
        while take < limit and lengths[order[pos + take]] <= width:
            length = lengths[order[pos + take]]
            if max_waste is None and length < PAD_FILL * width:
                break
            if max_waste is not None and waste + width - length > max_waste:
                break
            waste += width - length
            take += 1
        batches.append(list(order[pos : pos + take]))
        pos += take
    return batches


class _Progress:
    """Logs generation progress: requests done, new tokens per second, time left."""

    def __init__(self, name: str, total: int) -> None:
        self.name, self.total, self.done, self.tokens = name, total, 0, 0
        self.started = time.monotonic()

    def update(self, outs: Sequence[Generation]) -> None:
        self.done += len(outs)
        self.tokens += sum(o.n_new_tokens for o in outs)
        elapsed = time.monotonic() - self.started
        eta = elapsed / max(self.done, 1) * (self.total - self.done)
        log.info("%s generate: %d/%d requests, %.1f new tok/s, ETA %.0fs",
                 self.name, self.done, self.total, self.tokens / max(elapsed, 1e-9), eta)


def _sample(scores, temperature: float, top_p: float, generator):
    """Nucleus sampling from log-probabilities."""
    import torch

    probs = torch.softmax(scores / temperature, dim=-1)
    if top_p < 1.0:
        sorted_p, sorted_i = probs.sort(dim=-1, descending=True)
        keep = sorted_p.cumsum(-1) - sorted_p < top_p
        sorted_p = sorted_p * keep
        probs = torch.zeros_like(probs).scatter(-1, sorted_i, sorted_p)
    return torch.multinomial(probs / probs.sum(-1, keepdim=True), 1, generator=generator)[:, 0]


def resolve_device(device: str = "auto") -> str:
    import torch

    if device != "auto":
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(dtype: str, device: str):
    import torch

    if dtype == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; expected auto, float32, bfloat16 or float16") from None


class SharedPrefixes:
    """Which prefix each row of a call continues, and that prefix's keys and values.

    Rows are grouped by shared token prefix (:func:`~.prefix.prefix_groups`, each group's
    prefix computed once); a row whose longer start the model's prefix store holds (a
    conversation's earlier turn) continues from that instead.  ``limits[i]`` is the longest
    prefix row ``i`` may take: the positions after it must be computed (their logits are
    read).  A group's keys and values are computed when its first batch needs them and freed
    after its last row (:meth:`release`).
    """

    def __init__(self, model: HFModel, sequences: Sequence[Sequence[int]], limits: Sequence[int]) -> None:
        self.model, self.sequences = model, sequences
        # a group costs one extra forward pass over its prefix (~16 tokens of overhead)
        self.groups, _ = prefix_groups(sequences, MIN_SHARED_PREFIX, group_cost=16,
                                       keep_last=[len(s) - limit for s, limit in zip(sequences, limits, strict=True)])
        self.length = [0] * len(sequences)
        self.group_of = [-1] * len(sequences)
        for g, (length, members) in enumerate(self.groups):
            for i in members:
                self.length[i], self.group_of[i] = length, g
        self.stored: dict[int, Any] = {}
        for i, (ids, limit) in enumerate(zip(sequences, limits, strict=True)):
            n, kv = model._stored_prefix(list(ids), limit)
            if n > self.length[i]:  # the store holds more of this row than its group shares
                self.length[i], self.stored[i], self.group_of[i] = n, kv, -1
        self.remaining = [sum(self.group_of[i] == g for i in members) for g, (_, members) in enumerate(self.groups)]
        self.computed: dict[int, Any] = {}

    def remainder(self, i: int) -> int:
        """Tokens of row ``i`` after its prefix."""
        return len(self.sequences[i]) - self.length[i]

    def keys_values(self, rows: Sequence[int]) -> list[Any]:
        """The prefix keys and values of each row (None: no prefix)."""
        out = []
        for i in rows:
            g = self.group_of[i]
            if g < 0:
                out.append(self.stored.get(i))
                continue
            if g not in self.computed:
                length, members = self.groups[g]
                self.computed[g] = self.model._prefix_kv(list(self.sequences[members[0]][:length]))
            out.append(self.computed[g])
        return out

    def release(self, rows: Sequence[int]) -> None:
        for i in rows:
            g = self.group_of[i]
            if g >= 0:
                self.remaining[g] -= 1
                if self.remaining[g] == 0:
                    self.computed.pop(g, None)


def chat_template_for(tokenizer: Any, configured: str | None, name: str, is_seq2seq: bool) -> ChatTemplate:
    """The template chat requests of this model use (see :mod:`.templates`).

    A configured template replaces the tokenizer's (``tokenizer.chat_template`` is set
    to it, so ``apply_chat_template`` renders it); ``none`` keeps plain text.  Raises
    :class:`~.templates.MissingChatTemplate` for a causal model with no template at all.
    """
    template = resolve_chat_template(configured, name)
    if template is not None:
        if template.text is not None:
            tokenizer.chat_template = template.text
        return template
    own = tokenizer_template(tokenizer)
    if own is not None:
        return own
    if is_seq2seq:
        return ChatTemplate(SEQ2SEQ_PLAIN, None)
    raise missing_template_error(name)


class HFModel(TokenizedText, LanguageModel):
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
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

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
        self.store = PrefixStore(prefix_cache_mb * 2**20) if prefix_sharing and prefix_cache_mb else None
        self.device = resolve_device(device)
        self.torch_dtype = resolve_dtype(dtype, self.device)
        started = time.monotonic()
        config = AutoConfig.from_pretrained(model, revision=revision, trust_remote_code=trust_remote_code)
        self.is_seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        self.tokenizer = AutoTokenizer.from_pretrained(model, revision=revision, trust_remote_code=trust_remote_code)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "right" if self.is_seq2seq else "left"
        # Checked before the weights are read: a missing template fails in seconds.
        self.chat_template = chat_template_for(self.tokenizer, chat_template, self.name, self.is_seq2seq)
        auto = AutoModelForSeq2SeqLM if self.is_seq2seq else AutoModelForCausalLM
        net = auto.from_pretrained(
            model, revision=revision, dtype=self.torch_dtype, trust_remote_code=trust_remote_code
        )
        if adapter:
            from peft import PeftModel

            # Merged into the weights: inference then costs what the base model costs.
            net = PeftModel.from_pretrained(net, adapter).merge_and_unload()
        self.net = net.to(self.device).eval()
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
        self.usage = usage.register(self.name, self.backend, self._identity["model"],
                                    chat_template=self.chat_template.record())
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

    # ------------------------------------------------------------------ generate
    def generate(self, requests: Sequence[Request], params: GenerationParams,
                 on_batch: BatchCallback | None = None) -> list[Generation]:
        import torch

        encoded = [self.encode_request(r) for r in requests]
        truncated = [0] * len(encoded)
        if params.max_input_tokens:
            for i, ids in enumerate(encoded):
                cut = len(ids) - params.max_input_tokens
                if cut > 0:
                    # Keep the end: it holds the question and the generation prompt.
                    keep_head = 1 if (ids and ids[0] == self.tokenizer.bos_token_id) else 0
                    encoded[i] = ids[:keep_head] + ids[keep_head + cut :]
                    truncated[i] = cut
            if any(truncated):
                log.warning(
                    "%s: %d request(s) longer than max_input_tokens=%d were cut from the left (%d tokens in all)",
                    self.name, sum(1 for t in truncated if t), params.max_input_tokens, sum(truncated),
                )
        results: list[Generation | None] = [None] * len(encoded)
        progress = _Progress(self.name, len(encoded))

        def finished(idx: Sequence[int], outs: list[Generation]) -> None:
            for i, out in zip(idx, outs, strict=True):
                out.truncated_tokens = truncated[i]
                results[i] = out
            progress.update(outs)
            if on_batch is not None:
                on_batch(list(zip(idx, outs)))

        if self._can_share_prefix(params):
            self._generate_rows(encoded, params, finished)
        else:
            order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))
            batches = length_batches(order, [len(x) for x in encoded], max_rows=self.batch_size,
                                     max_waste=DECODE_STEP_TOKENS * params.max_new_tokens)
            for b, idx in enumerate(batches):
                if params.do_sample:
                    torch.manual_seed(params.seed + b)
                finished(idx, self._generate_batch([encoded[i] for i in idx], params))
        self.usage.add(len(results), sum(o.n_input_tokens for o in results),  # type: ignore[union-attr]
                       sum(o.n_new_tokens for o in results))  # type: ignore[union-attr]
        return results  # type: ignore[return-value]

    def _can_share_prefix(self, params: GenerationParams) -> bool:
        """Shared-prefix decoding is a plain token-by-token loop: greedy or sampled, without beams
        or n-gram rules, on full-attention causal models (those go through ``generate``)."""
        return (
            self.prefix_sharing
            and not self.is_seq2seq
            and not getattr(self.net.config, "sliding_window", None)
            and params.num_beams == 1
            and params.no_repeat_ngram_size == 0
            and params.repetition_penalty == 1.0
        )

    # ------------------------------------------------------------------ shared prefixes
    @staticmethod
    def _layers(cache) -> list[tuple[Any, Any]]:
        return [(layer.keys, layer.values) for layer in cache.layers]

    def _prefix_kv(self, tokens: list[int]) -> list[tuple[Any, Any]]:
        """Keys and values (per layer, batch 1) of exactly ``tokens``: what the prefix store
        holds of them is reused, the rest is computed and the whole is stored."""
        import torch
        from transformers import DynamicCache

        n, stored = self.store.lookup(tokens) if self.store is not None else (0, None)
        if n == len(tokens):
            return [(k[:, :, :n], v[:, :, :n]) for k, v in stored]
        cache = DynamicCache([(k[:, :, :n], v[:, :, :n]) for k, v in stored], config=self.net.config) if n else None
        with torch.inference_mode():
            out = self.net(
                input_ids=torch.tensor([tokens[n:]], device=self.device),
                position_ids=torch.arange(n, len(tokens), device=self.device)[None],
                cache=cache, use_cache=True, logits_to_keep=1,
            )
        layers = self._layers(out.cache)
        self._remember(tokens, layers)
        return layers

    def _remember(self, tokens: list[int], layers: list[tuple[Any, Any]]) -> None:
        if self.store is not None and len(tokens) >= MIN_SHARED_PREFIX:
            nbytes = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in layers)
            self.store.put(tokens, layers, nbytes)

    def _stored_prefix(self, tokens: list[int], limit: int) -> tuple[int, list[tuple[Any, Any]] | None]:
        """The longest start of ``tokens`` (at most ``limit`` tokens) the prefix store holds."""
        if self.store is None:
            return 0, None
        n, stored = self.store.lookup(tokens, limit)
        if n < MIN_SHARED_PREFIX:
            return 0, None
        return n, [(k[:, :, :n], v[:, :, :n]) for k, v in stored]

    def _batch_cache(self, prefixes: list[list[tuple[Any, Any]] | None], lengths: list[int]):
        """One cache for a batch whose rows continue different prefixes: each row holds its
        prefix's keys and values, left-padded to the longest prefix (the padding is masked)."""
        import torch
        from transformers import DynamicCache

        width = max(lengths)
        ref = prefixes[lengths.index(width)]
        layers = []
        for layer, (ref_k, ref_v) in enumerate(ref):
            keys, values = [], []
            for kv, p in zip(prefixes, lengths, strict=True):
                k, v = kv[layer] if p else (ref_k[:, :, :0], ref_v[:, :, :0])
                pad = width - p
                if pad:
                    k = torch.cat([k.new_zeros(k.shape[:2] + (pad,) + k.shape[3:]), k], dim=2)
                    v = torch.cat([v.new_zeros(v.shape[:2] + (pad,) + v.shape[3:]), v], dim=2)
                keys.append(k)
                values.append(v)
            layers.append((torch.cat(keys), torch.cat(values)))
        return DynamicCache(layers, config=self.net.config)

    def _generate_rows(self, encoded: list[list[int]], params: GenerationParams,
                       finished: Callable[[Sequence[int], list[Generation]], None]) -> None:
        """Decode every request token by token in full batches; a prefix shared by several
        requests is run through the model once and its keys and values are reused.

        Requests are grouped by shared token prefix (:func:`~.prefix.prefix_groups`); a batch
        may mix groups: each row reads its own prefix's keys and values, left-padded to the
        batch's longest prefix, then its own suffix, left-padded after them; the attention mask
        hides both paddings and explicit position ids continue each row's prefix, so every row
        reads exactly ``prefix + suffix``.  Rows are batched longest suffix first
        (:func:`length_batches`), and a group's prefix is freed once its rows are done;
        ``finished(rows, outs)`` is called after every batch.
        """
        import torch

        prefixes = SharedPrefixes(self, encoded, [len(x) - 1 for x in encoded])
        # longest remainder first, groups mixed: a batch's rows may continue different prefixes
        order = sorted(range(len(encoded)), key=lambda i: -prefixes.remainder(i))
        generator = torch.Generator(device=self.device).manual_seed(params.seed) if params.do_sample else None
        for rows in length_batches(order, [prefixes.remainder(i) for i in range(len(encoded))],
                                   max_rows=self.batch_size, max_waste=DECODE_STEP_TOKENS * params.max_new_tokens):
            lengths = [prefixes.length[i] for i in rows]
            outs = self._decode_rows([encoded[i][p:] for i, p in zip(rows, lengths, strict=True)], lengths,
                                     prefixes.keys_values(rows), params, generator)
            prefixes.release(rows)
            finished(rows, outs)

    def _decode_rows(self, suffixes: list[list[int]], prefix_lengths: list[int], prefix_caches: list[Any],
                     params: GenerationParams, generator) -> list[Generation]:
        """Greedy or sampled decoding of one batch of ``prefix + suffix`` rows (see
        :meth:`_generate_rows`)."""
        import torch

        pad = self.tokenizer.pad_token_id
        eos = torch.tensor(self._eos_ids(), device=self.device)
        n, width = len(suffixes), max(len(x) for x in suffixes)
        p_max = max(prefix_lengths)
        cache = self._batch_cache(prefix_caches, prefix_lengths) if p_max else None
        ids = torch.tensor([[pad] * (width - len(x)) + x for x in suffixes], device=self.device)
        mask = torch.tensor(
            [[0] * (p_max - p) + [1] * p + [0] * (width - len(x)) + [1] * len(x)
             for x, p in zip(suffixes, prefix_lengths, strict=True)],
            device=self.device,
        )
        pos = torch.tensor(
            [[p] * (width - len(x)) + list(range(p, p + len(x))) for x, p in zip(suffixes, prefix_lengths, strict=True)],
            device=self.device,
        )
        last = torch.tensor([p + len(x) - 1 for x, p in zip(suffixes, prefix_lengths, strict=True)], device=self.device)
        tokens = torch.empty((n, 0), dtype=torch.long, device=self.device)
        logprob = torch.zeros(n, device=self.device)
        done = torch.zeros(n, dtype=torch.bool, device=self.device)
        with torch.inference_mode():
            out = self.net(input_ids=ids, attention_mask=mask, position_ids=pos, cache=cache, use_cache=True,
                           logits_to_keep=1)
            cache, logits = out.cache, out.logits[:, -1].float()
            for step in range(params.max_new_tokens):
                scores = torch.log_softmax(logits, dim=-1)
                if step < params.min_new_tokens:
                    scores[:, eos] = -float("inf")
                if params.do_sample:
                    choice = _sample(scores, params.temperature, params.top_p, generator)
                else:
                    choice = scores.argmax(-1)
                choice = torch.where(done, torch.full_like(choice, pad), choice)
                logprob += torch.where(done, torch.zeros_like(logprob), scores.gather(1, choice[:, None])[:, 0])
                tokens = torch.cat([tokens, choice[:, None]], dim=1)
                done |= torch.isin(choice, eos)
                if params.stop:
                    done |= torch.tensor(
                        [any(stop in self.tokenizer.decode(row) for stop in params.stop) for row in tokens.tolist()],
                        device=self.device,
                    )
                if bool(done.all()):
                    break
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
                last = last + 1
                out = self.net(input_ids=choice[:, None], attention_mask=mask, position_ids=last[:, None],
                               cache=cache, use_cache=True)
                cache, logits = out.cache, out.logits[:, -1].float()
        return [
            self._decoded(p + len(suffix), tokens[row].tolist(), params,
                          logprob=float(logprob[row]) if params.return_logprobs else None)
            for row, (suffix, p) in enumerate(zip(suffixes, prefix_lengths, strict=True))
        ]

    def _decoded(self, input_len: int, new_ids: list[int], params: GenerationParams,
                 logprob: float | None) -> Generation:
        """Text of generated ids: up to the first end-of-sequence or padding token, then any stop string.

        ``finish_reason`` is "stop" when the model ended the text (or a stop string
        did), "length" when ``max_new_tokens`` cut it.
        """
        pad = self.tokenizer.pad_token_id
        eos = set(self._eos_ids())
        tokens = []
        for t in new_ids:
            if t in eos or t == pad:
                break
            tokens.append(t)
        finish = "stop" if len(tokens) < len(new_ids) else "length"
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        for stop in params.stop:
            cut = text.find(stop)
            if cut >= 0:
                text, finish = text[:cut], "stop"
        return Generation(text=text.strip(), n_input_tokens=input_len, n_new_tokens=len(tokens),
                          logprob=logprob, finish_reason=finish)

    def _generate_batch(self, batch: list[list[int]], params: GenerationParams) -> list[Generation]:
        import torch

        pad = self.tokenizer.pad_token_id
        width = max(len(ids) for ids in batch)
        if self.is_seq2seq:  # encoder inputs are right-padded
            input_ids = [ids + [pad] * (width - len(ids)) for ids in batch]
            mask = [[1] * len(ids) + [0] * (width - len(ids)) for ids in batch]
        else:  # decoder-only: left padding keeps every prompt's end next to its generation
            input_ids = [[pad] * (width - len(ids)) + ids for ids in batch]
            mask = [[0] * (width - len(ids)) + [1] * len(ids) for ids in batch]
        input_ids_t = torch.tensor(input_ids, device=self.device)
        mask_t = torch.tensor(mask, device=self.device)
        kwargs: dict[str, Any] = dict(
            max_new_tokens=params.max_new_tokens,
            min_new_tokens=params.min_new_tokens or None,
            num_beams=params.num_beams,
            do_sample=params.do_sample,
            no_repeat_ngram_size=params.no_repeat_ngram_size or None,
            repetition_penalty=params.repetition_penalty if params.repetition_penalty != 1.0 else None,
            pad_token_id=pad,
            eos_token_id=self._eos_ids(),
            return_dict_in_generate=True,
            output_logits=params.return_logprobs,  # raw logits: log-probs under the model, before min-length masks
        )
        if params.do_sample:
            kwargs.update(temperature=params.temperature, top_p=params.top_p)
        else:  # make greedy/beam explicit: some checkpoints ship sampling defaults
            kwargs.update(temperature=None, top_p=None, top_k=None)
        if params.stop:
            kwargs.update(stop_strings=list(params.stop), tokenizer=self.tokenizer)
        with torch.inference_mode():
            if params.num_beams > 1 and not self.is_seq2seq and width > 1:
                kwargs["cache"] = self._beam_prefill(input_ids_t, mask_t, params.num_beams)
            out = self.net.generate(input_ids=input_ids_t, attention_mask=mask_t, **kwargs)
        sequences = out.sequences
        new = sequences if self.is_seq2seq else sequences[:, input_ids_t.shape[1] :]
        logprobs: list[float | None] = [None] * len(batch)
        if params.return_logprobs:
            scores = self.net.compute_transition_scores(
                sequences, out.logits, getattr(out, "beam_indices", None), normalize_logits=True
            )
            gen_part = new[:, -scores.shape[1] :] if not self.is_seq2seq else new[:, 1:]
            valid = gen_part != pad
            logprobs = [float(s[v].sum()) for s, v in zip(scores.float().cpu(), valid.cpu(), strict=True)]
        results = []
        for row, ids in enumerate(new.tolist()):
            if self.is_seq2seq and ids and ids[0] == self.net.config.decoder_start_token_id:
                ids = ids[1:]
            results.append(self._decoded(len(batch[row]), ids, params, logprobs[row]))
        return results

    def _beam_prefill(self, input_ids, mask, num_beams: int):
        """The prompts' keys and values, computed once and repeated for every beam.

        ``generate`` copies each prompt ``num_beams`` times before its first forward pass, so
        the prompt -- most of the work for long inputs -- would be computed once per beam.
        Every prompt token but the last is run here once per row (positions from the attention
        mask, as ``generate`` counts them); ``generate`` then reads only the last token.
        """
        pos = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)
        out = self.net(input_ids=input_ids[:, :-1], attention_mask=mask[:, :-1], position_ids=pos[:, :-1],
                       use_cache=True, logits_to_keep=1)
        cache = out.cache
        cache.batch_repeat_interleave(num_beams)
        return cache

    def _eos_ids(self) -> list[int]:
        ids = {self.tokenizer.eos_token_id}
        gen_eos = getattr(self.net.generation_config, "eos_token_id", None)
        if isinstance(gen_eos, int):
            ids.add(gen_eos)
        elif isinstance(gen_eos, list):
            ids.update(gen_eos)
        return sorted(i for i in ids if i is not None)

    # ------------------------------------------------------------------ score
    def score_batch(self, items: Sequence[tuple[Request, Sequence[str]]],
                    on_batch: BatchCallback | None = None) -> list[list[float]]:
        self.usage.add(len(items))
        if self.is_seq2seq:
            return self._score_seq2seq(items, on_batch)
        return self._score_causal(items, on_batch)

    def _split_candidate(
        self, prompt_ids: list[int], prompt_text: str, templated: bool, candidate: str
    ) -> list[int]:
        full = self._encode(prompt_text + candidate, templated)
        if not templated and full and full[-1] == self.tokenizer.eos_token_id:
            full = full[:-1]
        if full[: len(prompt_ids)] == prompt_ids and len(full) > len(prompt_ids):
            return full[len(prompt_ids) :]
        # Tokens merged across the boundary: tokenize the candidate on its own.
        return self.tokenizer(candidate, add_special_tokens=False)["input_ids"]

    def _score_causal(self, items: Sequence[tuple[Request, Sequence[str]]],
                      on_batch: BatchCallback | None = None) -> list[list[float]]:
        # One sequence per item: its prompt, then its candidates as a prefix tree -- each
        # distinct candidate prefix is one token that attends to the prompt and its own
        # ancestors (a 4D attention mask), so shared starts ("<rating>" of "<rating>1" and
        # "<rating>2", "the" of two spans) are read once and no candidate copies the prompt.
        sequences: list[tuple[list[int], int, tuple[int, ...]]] = []  # (ids, start, parent of each node)
        plan: list[list[tuple[int, list[int], list[int]]]] = []  # per item: (sequence, candidate, read at)
        for context, candidates in items:
            text, templated = self.render(context)
            prompt_ids = self._encode(text, templated)
            if prompt_ids and prompt_ids[-1] == self.tokenizer.eos_token_id and not templated:
                prompt_ids = prompt_ids[:-1]  # a plain prompt's EOS would end the text before the candidate
            cand_ids = [self._split_candidate(prompt_ids, text, templated, c) for c in candidates]
            if any(not ids for ids in cand_ids):
                raise ValueError("cannot score an empty candidate")
            nodes, parents, node_of = [], [], {}
            for ids in cand_ids:
                for k in range(len(ids) - 1):  # a candidate's last token is only read, never input
                    key = tuple(ids[: k + 1])
                    if key not in node_of:
                        node_of[key] = len(nodes)
                        nodes.append(ids[k])
                        parents.append(node_of[tuple(ids[:k])] if k else -1)
            sequences.append((prompt_ids + nodes, len(prompt_ids), tuple(parents)))
            # the logits after the prompt (table row 0) or after node j (row 1 + j) predict the next token
            plan.append([(len(sequences) - 1, ids, [0] + [1 + node_of[tuple(ids[:k])] for k in range(1, len(ids))])
                         for ids in cand_ids])
        logps: list[Any] = [None] * len(sequences)
        results: list[list[float] | None] = [None] * len(plan)
        # an item is scored once all its sequences are: they may fall into different batches
        owner = {seq_index: item for item, row in enumerate(plan) for seq_index, _, _ in row}
        waiting = [len({seq_index for seq_index, _, _ in row}) for row in plan]

        def computed(seq_indices: Sequence[int], tables: list[Any]) -> None:
            ready = []
            for seq_index, table in zip(seq_indices, tables, strict=True):
                logps[seq_index] = table
                item = owner[seq_index]
                waiting[item] -= 1
                if waiting[item] == 0:
                    results[item] = [float(sum(logps[i][at, tok] for at, tok in zip(read, cand, strict=True)))
                                     for i, cand, read in plan[item]]
                    ready.append((item, results[item]))
            if ready and on_batch is not None:
                on_batch(ready)

        self._score_sequences(sequences, computed)
        return results  # type: ignore[return-value]

    def _score_sequences(self, sequences: list[tuple[list[int], int, tuple[int, ...]]],
                         computed: Callable[[Sequence[int], list[Any]], None]) -> None:
        """Log-probability tables at position ``start-1`` and at every candidate-tree node of each
        ``(ids, start, parents)`` (see :meth:`_score_rows`), handed to ``computed(indices,
        tables)`` after every batch.

        With prefix sharing, the sequences are grouped by shared prefix (each group's prefix
        computed once, from what the prefix store holds of it), and a sequence that starts
        with a longer stretch the store holds (a conversation's earlier turn) continues from
        that instead.  Rows are batched by the length of what is left to compute, within
        ``score_batch_tokens``, and each row's context is stored for the requests that follow.
        """
        if self.prefix_sharing:
            prefixes = SharedPrefixes(self, [ids for ids, _, _ in sequences], [start - 1 for _, start, _ in sequences])
            # rows of a group together (its prefix is freed after them), longest remainder first
            order = sorted(range(len(sequences)), key=lambda i: (prefixes.group_of[i], -prefixes.remainder(i)))
            remainder = [prefixes.remainder(i) for i in range(len(sequences))]
        else:
            prefixes = None
            order = sorted(range(len(sequences)), key=lambda i: -len(sequences[i][0]))
            remainder = [len(ids) for ids, _, _ in sequences]
        for idx in length_batches(order, remainder, max_tokens=self.score_batch_tokens):
            if prefixes is None:
                tables = self._score_rows([sequences[i] for i in idx], [0] * len(idx), [None] * len(idx))
            else:
                tables = self._score_rows([sequences[i] for i in idx], [prefixes.length[i] for i in idx],
                                          prefixes.keys_values(idx))
                prefixes.release(idx)
            computed(idx, tables)

    def _score_rows(self, rows: list[tuple[list[int], int, tuple[int, ...]]], prefix_lengths: list[int],
                    prefixes: list[Any]) -> list[Any]:
        """Log-probability tables of each row ``(ids, start, parents)``: at position ``start-1``
        (the prompt's last token), then at every candidate-tree node ``ids[start + j]``, whose
        parent is node ``parents[j]`` (-1: the prompt).  Row ``r`` continues a prefix of
        ``prefix_lengths[r]`` tokens whose keys and values are ``prefixes[r]``.

        Each row's remainder is left-padded after its (left-padded) prefix.  A 4D mask lets
        the prompt's tokens attend causally and each node attend to the prompt and to its
        own ancestors; position ids continue the prompt (a node sits at ``start`` + its
        depth).  Only the scored positions' logits are computed (``logits_to_keep``): the
        vocabulary projection of a whole batch would need gigabytes.  With the prefix store
        on, every row's context (``ids[:start]``) is stored from the same forward pass.
        """
        import torch

        pad = self.tokenizer.pad_token_id
        p_max = max(prefix_lengths)
        suffixes = [ids[p:] for (ids, _, _), p in zip(rows, prefix_lengths, strict=True)]
        width = max(len(x) for x in suffixes)
        keep = max(len(ids) - start + 1 for ids, start, _ in rows)
        allowed = torch.zeros(len(rows), width, p_max + width, dtype=torch.bool)
        positions, valid = [], []
        for r, ((full, start, parents), p, suffix) in enumerate(zip(rows, prefix_lengths, suffixes, strict=True)):
            pad_s, a, m = width - len(suffix), start - p, len(parents)
            s0 = p_max + pad_s  # where the row's own tokens begin among the keys
            allowed[r, pad_s:, p_max - p : p_max] = True  # its prefix
            allowed[r, pad_s : pad_s + a, s0 : s0 + a] = torch.ones(a, a, dtype=torch.bool).tril()
            depth: list[int] = []
            if m:
                allowed[r, pad_s + a :, s0 : s0 + a] = True  # every node sees the whole prompt
                ancestors = torch.zeros(m, m, dtype=torch.bool)
                for j, parent in enumerate(parents):
                    if parent >= 0:
                        ancestors[j] = ancestors[parent]
                    ancestors[j, j] = True
                    depth.append(depth[parent] + 1 if parent >= 0 else 0)
                allowed[r, pad_s + a :, s0 + a :] = ancestors
            for j in range(pad_s):  # padding attends to itself only: no row is fully masked
                allowed[r, j, p_max + j] = True
            positions.append([p] * pad_s + list(range(p, start)) + [start + d for d in depth])
            valid.append(list(range(p_max - p, p_max)) + list(range(s0, s0 + a)))
        ids = torch.tensor([[pad] * (width - len(x)) + x for x in suffixes], device=self.device)
        mask = torch.zeros(allowed.shape, dtype=self.net.dtype).masked_fill_(
            ~allowed, torch.finfo(self.net.dtype).min)[:, None].to(self.device)
        pos = torch.tensor(positions, device=self.device)
        cache = self._batch_cache(prefixes, prefix_lengths) if p_max else None
        remember = self.store is not None
        with torch.inference_mode():
            out = self.net(
                input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=keep, cache=cache,
                use_cache=remember,
            )
        tables = []
        for row, (full, start, _) in enumerate(rows):
            n = len(full) - start + 1  # position start-1 and the nodes are the row's last n
            tables.append(torch.log_softmax(out.logits[row, keep - n :].float(), dim=-1).cpu())
        if remember:
            layers = self._layers(out.cache)
            kept: set[tuple[int, ...]] = set()
            for row, (full, start, _) in enumerate(rows):
                context = tuple(full[:start])
                # too short to be worth keeping; already held but for the last token (the
                # prefix came from the store); or kept from another row already
                if start < MIN_SHARED_PREFIX or start - prefix_lengths[row] <= 1 or context in kept:
                    continue
                kept.add(context)
                where = torch.tensor(valid[row], device=self.device)
                self._remember(full[:start], [(k[row : row + 1, :, where], v[row : row + 1, :, where])
                                              for k, v in layers])
        return tables

    def _score_seq2seq(self, items: Sequence[tuple[Request, Sequence[str]]],
                       on_batch: BatchCallback | None = None) -> list[list[float]]:
        import torch

        results = []
        for item, (context, candidates) in enumerate(items):
            enc = self.encode_request(context)
            cands = [self.tokenizer(c, add_special_tokens=False)["input_ids"] for c in candidates]
            if any(not c for c in cands):
                raise ValueError("cannot score an empty candidate")
            width = max(len(c) for c in cands)
            # -100 marks padding: the model shifts the labels into decoder inputs itself
            labels = torch.tensor([c + [-100] * (width - len(c)) for c in cands], device=self.device)
            input_ids = torch.tensor([enc] * len(cands), device=self.device)
            with torch.inference_mode():
                logits = self.net(input_ids=input_ids, labels=labels).logits.float()
            lp = torch.log_softmax(logits, dim=-1)
            gathered = lp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            gathered = gathered.masked_fill(labels == -100, 0.0)
            results.append([float(x) for x in gathered.sum(-1).cpu()])
            if on_batch is not None:
                on_batch([(item, results[-1])])
        return results

    def close(self) -> None:
        import gc

        del self.net
        gc.collect()
