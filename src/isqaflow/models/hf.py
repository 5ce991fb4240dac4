"""Hugging Face transformers backend: causal and seq2seq models, optional peft adapter.

* Chat conversations go through the tokenizer's chat template
  (``apply_chat_template``); a model without one (Flan-T5) gets the turns as plain
  text.
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
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from isqaflow.models.base import (
    Generation,
    GenerationParams,
    LanguageModel,
    Request,
    flatten_messages,
)
from isqaflow.models.identity import adapter_fingerprint, model_fingerprint

log = logging.getLogger(__name__)


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


class HFModel(LanguageModel):
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
        self.device = resolve_device(device)
        self.torch_dtype = resolve_dtype(dtype, self.device)
        started = time.monotonic()
        config = AutoConfig.from_pretrained(model, revision=revision, trust_remote_code=trust_remote_code)
        self.is_seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        self.tokenizer = AutoTokenizer.from_pretrained(model, revision=revision, trust_remote_code=trust_remote_code)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "right" if self.is_seq2seq else "left"
        auto = AutoModelForSeq2SeqLM if self.is_seq2seq else AutoModelForCausalLM
        net = auto.from_pretrained(
            model, revision=revision, dtype=self.torch_dtype, trust_remote_code=trust_remote_code
        )
        if adapter:
            from peft import PeftModel

            # Merged into the weights: inference then costs what the base model costs.
            net = PeftModel.from_pretrained(net, adapter).merge_and_unload()
        self.net = net.to(self.device).eval()
        self.has_chat_template = bool(getattr(self.tokenizer, "chat_template", None))
        self._identity = {
            "backend": self.backend,
            "model": model if not Path(model).exists() else Path(model).name,
            "revision": revision,
            "weights": model_fingerprint(model) if Path(model).exists() else None,
            "adapter": adapter_fingerprint(adapter) if adapter else None,
            "dtype": str(self.torch_dtype).removeprefix("torch."),
        }
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

    # ------------------------------------------------------------------ text in
    def render(self, request: Request, add_generation_prompt: bool = True) -> tuple[str, bool]:
        """The exact text the model reads for a request, and whether a chat template made it."""
        if isinstance(request, str):
            return request, False
        if self.has_chat_template:
            text = self.tokenizer.apply_chat_template(
                list(request), tokenize=False, add_generation_prompt=add_generation_prompt
            )
            return text, True
        return flatten_messages(request), False

    def _encode(self, text: str, templated: bool) -> list[int]:
        # A chat template already writes the special tokens; plain prompts get the
        # tokenizer's own (BOS for Llama, </s> for T5).
        return self.tokenizer(text, add_special_tokens=not templated)["input_ids"]

    def encode_request(self, request: Request) -> list[int]:
        return self._encode(*self.render(request))

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def truncate_text(self, text: str, max_tokens: int) -> tuple[str, int]:
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = enc["input_ids"]
        if len(ids) <= max_tokens:
            return text, 0
        if max_tokens <= 0:
            return "", len(ids)
        end = enc["offset_mapping"][max_tokens - 1][1]
        return text[:end], len(ids) - max_tokens

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
        order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))
        results: list[Generation | None] = [None] * len(encoded)
        n_batches = math.ceil(len(order) / self.batch_size) if order else 0
        started, new_tokens = time.monotonic(), 0
        for b in range(n_batches):
            idx = order[b * self.batch_size : (b + 1) * self.batch_size]
            batch = [encoded[i] for i in idx]
            if params.do_sample:
                torch.manual_seed(params.seed + b)
            outs = self._generate_batch(batch, params)
            for i, out in zip(idx, outs, strict=True):
                out.truncated_tokens = truncated[i]
                results[i] = out
                new_tokens += out.n_new_tokens
            elapsed = time.monotonic() - started
            done = sum(len(order[k * self.batch_size : (k + 1) * self.batch_size]) for k in range(b + 1))
            eta = elapsed / done * (len(order) - done)
            log.info(
                "%s generate: batch %d/%d, %d/%d requests, %.1f new tok/s, ETA %.0fs",
                self.name, b + 1, n_batches, done, len(order), new_tokens / max(elapsed, 1e-9), eta,
            )
        return results  # type: ignore[return-value]

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
            output_scores=params.return_logprobs,
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
                sequences, out.scores, getattr(out, "beam_indices", None), normalize_logits=True
            )
            gen_part = new[:, -scores.shape[1] :] if not self.is_seq2seq else new[:, 1:]
            valid = gen_part != pad
            logprobs = [float(s[v].sum()) for s, v in zip(scores.float().cpu(), valid.cpu(), strict=True)]
        results = []
        eos = set(self._eos_ids())
        for row, ids in enumerate(new.tolist()):
            tokens = [t for t in ids if t != pad]
            if self.is_seq2seq and tokens and tokens[0] == self.net.config.decoder_start_token_id:
                tokens = tokens[1:]
            finish = "stop" if any(t in eos for t in tokens) else "length"
            text = self.tokenizer.decode(tokens, skip_special_tokens=True)
            for stop in params.stop:
                cut = text.find(stop)
                if cut >= 0:
                    text, finish = text[:cut], "stop"
            results.append(
                Generation(
                    text=text.strip(),
                    n_input_tokens=len(batch[row]),
                    n_new_tokens=len([t for t in tokens if t not in eos]),
                    logprob=logprobs[row],
                    finish_reason=finish,
                )
            )
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
            if all(len(ids) == 1 for ids in cand_ids):
                sequences.append((prompt_ids, len(prompt_ids)))
                plan.append([(len(sequences) - 1, ids) for ids in cand_ids])
            else:
                row = []
                for ids in cand_ids:
                    sequences.append((prompt_ids + ids[:-1], len(prompt_ids)))
                    row.append((len(sequences) - 1, ids))
                plan.append(row)
        # logits at positions start-1 .. end-1 predict the candidate tokens
        logps: list[Any] = [None] * len(sequences)
        order = sorted(range(len(sequences)), key=lambda i: -len(sequences[i][0]))
        pad = self.tokenizer.pad_token_id
        pos = 0
        while pos < len(order):
            width = len(sequences[order[pos]][0])
            take = max(1, min(len(order) - pos, self.score_batch_tokens // max(width, 1)))
            idx = order[pos : pos + take]
            pos += take
            ids = [sequences[i][0] + [pad] * (width - len(sequences[i][0])) for i in idx]
            mask = [[1] * len(sequences[i][0]) + [0] * (width - len(sequences[i][0])) for i in idx]
            with torch.inference_mode():
                logits = self.net(
                    input_ids=torch.tensor(ids, device=self.device),
                    attention_mask=torch.tensor(mask, device=self.device),
                ).logits.float()
            lp = torch.log_softmax(logits, dim=-1)
            for row, i in enumerate(idx):
                start = sequences[i][1]
                logps[i] = lp[row, start - 1 : len(sequences[i][0])].cpu()
        results = []
        for row in plan:
            scores = []
            for seq_index, cand in row:
                table = logps[seq_index]
                scores.append(float(sum(table[k, tok] for k, tok in enumerate(cand))))
            results.append(scores)
        return results

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
