"""Generation of the hf backend: the shared-prefix decoding loop and HF ``generate`` with beam prefill."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from isqaflow.models.base import BatchCallback, Generation, GenerationParams, Request
from isqaflow.models.inprocess.shared_prefixes import (
    DECODE_STEP_TOKENS,
    SharedPrefixes,
    length_batches,
)

# the backend's logger, as before the split
log = logging.getLogger("isqaflow.models.inprocess.hf")


class Progress:
    """Logs generation progress: requests done, new tokens per second, time left."""

    def __init__(self, name: str, total: int) -> None:
        self.name, self.total, self.done, self.tokens = name, total, 0, 0
        self.started = time.monotonic()

    def update(self, outs: Sequence[Generation]) -> None:
        self.done += len(outs)
        self.tokens += sum(o.n_new_tokens for o in outs)
        elapsed = time.monotonic() - self.started
        eta = elapsed / max(self.done, 1) * (self.total - self.done)
        log.info(
            "%s generate: %d/%d requests, %.1f new tok/s, ETA %.0fs",
            self.name,
            self.done,
            self.total,
            self.tokens / max(elapsed, 1e-9),
            eta,
        )


def sample_top_p(scores, temperature: float, top_p: float, generator):
    """Nucleus sampling from log-probabilities."""
    import torch

    probs = torch.softmax(scores / temperature, dim=-1)
    if top_p < 1.0:
        sorted_p, sorted_i = probs.sort(dim=-1, descending=True)
        keep = sorted_p.cumsum(-1) - sorted_p < top_p
        sorted_p = sorted_p * keep
        probs = torch.zeros_like(probs).scatter(-1, sorted_i, sorted_p)
    return torch.multinomial(probs / probs.sum(-1, keepdim=True), 1, generator=generator)[:, 0]


class Generating:
    """``generate`` of :class:`~.hf.HFModel` (greedy, sampled or beam search, batched)."""

    # ------------------------------------------------------------------ generate
    def generate(
        self,
        requests: Sequence[Request],
        params: GenerationParams,
        on_batch: BatchCallback | None = None,
    ) -> list[Generation]:
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
                    self.name,
                    sum(1 for t in truncated if t),
                    params.max_input_tokens,
                    sum(truncated),
                )
        results: list[Generation | None] = [None] * len(encoded)
        progress = Progress(self.name, len(encoded))

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
            batches = length_batches(
                order,
                [len(x) for x in encoded],
                max_rows=self.batch_size,
                max_waste=DECODE_STEP_TOKENS * params.max_new_tokens,
            )
            for b, idx in enumerate(batches):
                if params.do_sample:
                    torch.manual_seed(params.seed + b)
                finished(idx, self._generate_batch([encoded[i] for i in idx], params))
        self.usage.add(
            len(results),
            sum(o.n_input_tokens for o in results),  # type: ignore[union-attr]
            sum(o.n_new_tokens for o in results),
        )  # type: ignore[union-attr]
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

    def _generate_rows(
        self,
        encoded: list[list[int]],
        params: GenerationParams,
        finished: Callable[[Sequence[int], list[Generation]], None],
    ) -> None:
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
        generator = (
            torch.Generator(device=self.device).manual_seed(params.seed)
            if params.do_sample
            else None
        )
        for rows in length_batches(
            order,
            [prefixes.remainder(i) for i in range(len(encoded))],
            max_rows=self.batch_size,
            max_waste=DECODE_STEP_TOKENS * params.max_new_tokens,
        ):
            lengths = [prefixes.length[i] for i in rows]
            outs = self._decode_rows(
                [encoded[i][p:] for i, p in zip(rows, lengths, strict=True)],
                lengths,
                prefixes.keys_values(rows),
                params,
                generator,
            )
            prefixes.release(rows)
            finished(rows, outs)

    def _decode_rows(
        self,
        suffixes: list[list[int]],
        prefix_lengths: list[int],
        prefix_caches: list[Any],
        params: GenerationParams,
        generator,
    ) -> list[Generation]:
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
            [
                [0] * (p_max - p) + [1] * p + [0] * (width - len(x)) + [1] * len(x)
                for x, p in zip(suffixes, prefix_lengths, strict=True)
            ],
            device=self.device,
        )
        pos = torch.tensor(
            [
                [p] * (width - len(x)) + list(range(p, p + len(x)))
                for x, p in zip(suffixes, prefix_lengths, strict=True)
            ],
            device=self.device,
        )
        last = torch.tensor(
            [p + len(x) - 1 for x, p in zip(suffixes, prefix_lengths, strict=True)],
            device=self.device,
        )
        tokens = torch.empty((n, 0), dtype=torch.long, device=self.device)
        logprob = torch.zeros(n, device=self.device)
        done = torch.zeros(n, dtype=torch.bool, device=self.device)
        with torch.inference_mode():
            out = self.net(
                input_ids=ids,
                attention_mask=mask,
                position_ids=pos,
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            )
            cache, logits = out.cache, out.logits[:, -1].float()
            for step in range(params.max_new_tokens):
                scores = torch.log_softmax(logits, dim=-1)
                if step < params.min_new_tokens:
                    scores[:, eos] = -float("inf")
                if params.do_sample:
                    choice = sample_top_p(scores, params.temperature, params.top_p, generator)
                else:
                    choice = scores.argmax(-1)
                choice = torch.where(done, torch.full_like(choice, pad), choice)
                logprob += torch.where(
                    done, torch.zeros_like(logprob), scores.gather(1, choice[:, None])[:, 0]
                )
                tokens = torch.cat([tokens, choice[:, None]], dim=1)
                done |= torch.isin(choice, eos)
                if params.stop:
                    done |= torch.tensor(
                        [
                            any(stop in self.tokenizer.decode(row) for stop in params.stop)
                            for row in tokens.tolist()
                        ],
                        device=self.device,
                    )
                if bool(done.all()):
                    break
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
                last = last + 1
                out = self.net(
                    input_ids=choice[:, None],
                    attention_mask=mask,
                    position_ids=last[:, None],
                    cache=cache,
                    use_cache=True,
                )
                cache, logits = out.cache, out.logits[:, -1].float()
        return [
            self._decoded(
                p + len(suffix),
                tokens[row].tolist(),
                params,
                logprob=float(logprob[row]) if params.return_logprobs else None,
            )
            for row, (suffix, p) in enumerate(zip(suffixes, prefix_lengths, strict=True))
        ]

    def _decoded(
        self, input_len: int, new_ids: list[int], params: GenerationParams, logprob: float | None
    ) -> Generation:
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
        return Generation(
            text=text.strip(),
            n_input_tokens=input_len,
            n_new_tokens=len(tokens),
            logprob=logprob,
            finish_reason=finish,
        )

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
            repetition_penalty=params.repetition_penalty
            if params.repetition_penalty != 1.0
            else None,
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
            logprobs = [
                float(s[v].sum()) for s, v in zip(scores.float().cpu(), valid.cpu(), strict=True)
            ]
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
        out = self.net(
            input_ids=input_ids[:, :-1],
            attention_mask=mask[:, :-1],
            position_ids=pos[:, :-1],
            use_cache=True,
            logits_to_keep=1,
        )
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
