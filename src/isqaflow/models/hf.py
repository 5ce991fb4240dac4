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
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from isqaflow.models.base import (
    Generation,
    GenerationParams,
    LanguageModel,
    Request,
)
from isqaflow.models.identity import adapter_fingerprint, model_fingerprint
from isqaflow.models.prefix import common_prefix, prefix_groups
from isqaflow.models import usage
from isqaflow.models.tokenized import TokenizedText
from isqaflow.models.templates import (
    SEQ2SEQ_PLAIN,
    ChatTemplate,
    missing_template_error,
    resolve_chat_template,
    tokenizer_template,
)

log = logging.getLogger(__name__)

# A shared prefix shorter than this is not worth a separate forward pass.
MIN_SHARED_PREFIX = 32


def common_prefix_of(sequences: list[list[int]]) -> int:
    """Length of the token prefix shared by all sequences."""
    return min((common_prefix(sequences[0], s) for s in sequences[1:]), default=len(sequences[0]))


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
    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
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
        singles = list(range(len(encoded)))
        if self._can_share_prefix(params):
            # a group decodes on its own: ~8 prompt tokens' worth of work per decoding step
            groups, singles = prefix_groups(encoded, MIN_SHARED_PREFIX, group_cost=8 * params.max_new_tokens)
            for prefix_len, members in groups:
                prefix = encoded[members[0]][:prefix_len]
                outs = self._generate_with_prefix(prefix, [encoded[i][prefix_len:] for i in members], params)
                for i, out in zip(members, outs, strict=True):
                    results[i] = out
                progress.update(outs)
        singles.sort(key=lambda i: -len(encoded[i]))
        for b in range(0, len(singles), self.batch_size):
            idx = singles[b : b + self.batch_size]
            if params.do_sample:
                torch.manual_seed(params.seed + b)
            outs = self._generate_batch([encoded[i] for i in idx], params)
            for i, out in zip(idx, outs, strict=True):
                results[i] = out
            progress.update(outs)
        for i, out in enumerate(results):
            out.truncated_tokens = truncated[i]  # type: ignore[union-attr]
        self.usage.add(len(results), sum(o.n_input_tokens for o in results),  # type: ignore[union-attr]
                       sum(o.n_new_tokens for o in results))  # type: ignore[union-attr]
        return results  # type: ignore[return-value]

    def _can_share_prefix(self, params: GenerationParams) -> bool:
        """Shared-prefix decoding is a plain token-by-token loop: no beams or n-gram rules."""
        return (
            self.prefix_sharing
            and not self.is_seq2seq
            and params.num_beams == 1
            and params.no_repeat_ngram_size == 0
            and params.repetition_penalty == 1.0
        )

    def _prefix_cache(self, prefix: list[int]):
        import torch

        with torch.inference_mode():
            out = self.net(input_ids=torch.tensor([prefix], device=self.device), use_cache=True)
        return out.cache

    def _generate_with_prefix(
        self, prefix: list[int], suffixes: list[list[int]], params: GenerationParams
    ) -> list[Generation]:
        """Decode every ``prefix + suffix``, computing the prefix's keys and values once.

        Suffixes are left-padded *after* the prefix; the attention mask hides the
        padding and explicit position ids continue the prefix's positions, so each
        row reads exactly ``prefix + suffix``.
        """
        import copy

        import torch

        base = self._prefix_cache(prefix)
        p = len(prefix)
        pad = self.tokenizer.pad_token_id
        eos = torch.tensor(self._eos_ids(), device=self.device)
        generator = torch.Generator(device=self.device).manual_seed(params.seed) if params.do_sample else None
        results: list[Generation] = []
        for start in range(0, len(suffixes), self.batch_size):
            batch = suffixes[start : start + self.batch_size]
            n, width = len(batch), max(len(x) for x in batch)
            cache = copy.deepcopy(base)
            cache.batch_repeat_interleave(n)
            ids = torch.tensor([[pad] * (width - len(x)) + x for x in batch], device=self.device)
            mask = torch.tensor([[1] * p + [0] * (width - len(x)) + [1] * len(x) for x in batch], device=self.device)
            pos = torch.tensor([[p] * (width - len(x)) + list(range(p, p + len(x))) for x in batch], device=self.device)
            last = torch.tensor([p + len(x) - 1 for x in batch], device=self.device)
            tokens = torch.empty((n, 0), dtype=torch.long, device=self.device)
            logprob = torch.zeros(n, device=self.device)
            done = torch.zeros(n, dtype=torch.bool, device=self.device)
            with torch.inference_mode():
                logits = self.net(
                    input_ids=ids, attention_mask=mask, position_ids=pos, cache=cache, use_cache=True
                ).logits[:, -1].float()
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
                    logits = self.net(
                        input_ids=choice[:, None], attention_mask=mask, position_ids=last[:, None],
                        cache=cache, use_cache=True,
                    ).logits[:, -1].float()
            for row, suffix in enumerate(batch):
                results.append(
                    self._decoded(p + len(suffix), tokens[row].tolist(), params,
                                  logprob=float(logprob[row]) if params.return_logprobs else None)
                )
        return results

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

    def _eos_ids(self) -> list[int]:
        ids = {self.tokenizer.eos_token_id}
        gen_eos = getattr(self.net.generation_config, "eos_token_id", None)
        if isinstance(gen_eos, int):
            ids.add(gen_eos)
        elif isinstance(gen_eos, list):
            ids.update(gen_eos)
        return sorted(i for i in ids if i is not None)

    # ------------------------------------------------------------------ score
    def score_batch(self, items: Sequence[tuple[Request, Sequence[str]]]) -> list[list[float]]:
        self.usage.add(len(items))
        if self.is_seq2seq:
            return self._score_seq2seq(items)
        return self._score_causal(items)

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

    def _score_causal(self, items: Sequence[tuple[Request, Sequence[str]]]) -> list[list[float]]:
        import torch

        # One sequence per (item, candidate) -- or one per item when all its candidates
        # are single tokens: then the logits after the context answer all of them.
        sequences: list[tuple[list[int], int]] = []  # (token ids, start of the scored span)
        plan: list[list[tuple[int, list[int]]]] = []  # per item: (sequence index, candidate ids)
        for context, candidates in items:
            text, templated = self.render(context)
            prompt_ids = self._encode(text, templated)
            if prompt_ids and prompt_ids[-1] == self.tokenizer.eos_token_id and not templated:
                prompt_ids = prompt_ids[:-1]  # a plain prompt's EOS would end the text before the candidate
            cand_ids = [self._split_candidate(prompt_ids, text, templated, c) for c in candidates]
            if any(not ids for ids in cand_ids):
                raise ValueError("cannot score an empty candidate")
            # Candidates that differ only in their last token ("<rating>1" vs "<rating>2")
            # share one sequence: their common start is scored once and the differing
            # token is read from the same logits.
            common = common_prefix_of(cand_ids)
            if all(len(ids) == common + 1 for ids in cand_ids) or all(len(ids) == 1 for ids in cand_ids):
                shared = cand_ids[0][:-1] if all(len(ids) == common + 1 for ids in cand_ids) else []
                sequences.append((prompt_ids + shared, len(prompt_ids)))
                plan.append([(len(sequences) - 1, ids) for ids in cand_ids])
            else:
                row = []
                for ids in cand_ids:
                    sequences.append((prompt_ids + ids[:-1], len(prompt_ids)))
                    row.append((len(sequences) - 1, ids))
                plan.append(row)
        # logits at positions start-1 .. end-1 predict the candidate tokens
        logps: list[Any] = [None] * len(sequences)
        singles = list(range(len(sequences)))
        if self.prefix_sharing:
            groups, singles = prefix_groups(
                [ids for ids, _ in sequences], MIN_SHARED_PREFIX,
                keep_last=[len(ids) - start + 1 for ids, start in sequences],
            )
            for prefix_len, members in groups:
                for i, table in zip(members, self._score_with_prefix(
                        sequences[members[0]][0][:prefix_len], [sequences[i] for i in members]), strict=True):
                    logps[i] = table
        singles.sort(key=lambda i: -len(sequences[i][0]))
        pos = 0
        while pos < len(singles):
            width = len(sequences[singles[pos]][0])
            take = max(1, min(len(singles) - pos, self.score_batch_tokens // max(width, 1)))
            idx = singles[pos : pos + take]
            pos += take
            for i, table in zip(idx, self._score_rows([], [sequences[i] for i in idx]), strict=True):
                logps[i] = table
        results = []
        for row in plan:
            scores = []
            for seq_index, cand in row:
                table = logps[seq_index]
                scores.append(float(sum(table[k, tok] for k, tok in enumerate(cand))))
            results.append(scores)
        return results

    def _score_with_prefix(self, prefix: list[int], members: list[tuple[list[int], int]]) -> list[Any]:
        """Log-probability tables of several sequences that start with ``prefix`` (computed once)."""
        tables: list[Any] = []
        width = max(len(ids) for ids, _ in members) - len(prefix)
        per_batch = max(1, self.score_batch_tokens // max(width, 1))
        cache = self._prefix_cache(prefix)
        for b in range(0, len(members), per_batch):
            tables += self._score_rows(prefix, members[b : b + per_batch], cache)
        return tables

    def _score_rows(self, prefix: list[int], rows: list[tuple[list[int], int]], cache=None) -> list[Any]:
        """Log-probabilities at positions ``start-1 .. len-1`` of each row (rows start with ``prefix``).

        Rows are left-padded after the prefix with explicit position ids, so every
        row's scored positions are at the end and only those logits are computed
        (``logits_to_keep``): the vocabulary projection of a whole batch would need
        gigabytes.
        """
        import copy

        import torch

        p, pad = len(prefix), self.tokenizer.pad_token_id
        suffixes = [ids[p:] for ids, _ in rows]
        width = max(len(x) for x in suffixes)
        keep = max(len(ids) - start + 1 for ids, start in rows)
        ids = torch.tensor([[pad] * (width - len(x)) + x for x in suffixes], device=self.device)
        mask = torch.tensor([[1] * p + [0] * (width - len(x)) + [1] * len(x) for x in suffixes], device=self.device)
        pos = torch.tensor([[p] * (width - len(x)) + list(range(p, p + len(x))) for x in suffixes], device=self.device)
        kwargs: dict[str, Any] = {}
        if cache is not None:
            cache = copy.deepcopy(cache)
            cache.batch_repeat_interleave(len(rows))
            kwargs["cache"] = cache
        with torch.inference_mode():
            logits = self.net(
                input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=keep, use_cache=False, **kwargs
            ).logits
        tables = []
        for row, (full, start) in enumerate(rows):
            n = len(full) - start + 1  # positions start-1 .. len-1 are the row's last n
            tables.append(torch.log_softmax(logits[row, keep - n :].float(), dim=-1).cpu())
        return tables

    def _score_seq2seq(self, items: Sequence[tuple[Request, Sequence[str]]]) -> list[list[float]]:
        import torch

        results = []
        for context, candidates in items:
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
        return results

    def close(self) -> None:
        import gc

        del self.net
        gc.collect()
