"""Scoring of the hf backend: candidate log-probabilities, read as a prefix tree after each prompt."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from isqaflow.models.base import BatchCallback, Request
from isqaflow.models.inprocess.shared_prefixes import (
    MIN_SHARED_PREFIX,
    SharedPrefixes,
    length_batches,
)


class Scoring:
    """``score_batch`` of :class:`~.hf.HFModel` (causal: prefix tree; seq2seq: labels)."""

    # ------------------------------------------------------------------ score
    def score_batch(
        self, items: Sequence[tuple[Request, Sequence[str]]], on_batch: BatchCallback | None = None
    ) -> list[list[float]]:
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

    def _score_causal(
        self, items: Sequence[tuple[Request, Sequence[str]]], on_batch: BatchCallback | None = None
    ) -> list[list[float]]:
        # One sequence per item: its prompt, then its candidates as a prefix tree -- each
        # distinct candidate prefix is one token that attends to the prompt and its own
        # ancestors (a 4D attention mask), so shared starts ("<rating>" of "<rating>1" and
        # "<rating>2", "the" of two spans) are read once and no candidate copies the prompt.
        sequences: list[
            tuple[list[int], int, tuple[int, ...]]
        ] = []  # (ids, start, parent of each node)
        plan: list[
            list[tuple[int, list[int], list[int]]]
        ] = []  # per item: (sequence, candidate, read at)
        for context, candidates in items:
            text, templated = self.render(context)
            prompt_ids = self._encode(text, templated)
            if prompt_ids and prompt_ids[-1] == self.tokenizer.eos_token_id and not templated:
                prompt_ids = prompt_ids[
                    :-1
                ]  # a plain prompt's EOS would end the text before the candidate
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
            plan.append(
                [
                    (
                        len(sequences) - 1,
                        ids,
                        [0] + [1 + node_of[tuple(ids[:k])] for k in range(1, len(ids))],
                    )
                    for ids in cand_ids
                ]
            )
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
                    results[item] = [
                        float(sum(logps[i][at, tok] for at, tok in zip(read, cand, strict=True)))
                        for i, cand, read in plan[item]
                    ]
                    ready.append((item, results[item]))
            if ready and on_batch is not None:
                on_batch(ready)

        self._score_sequences(sequences, computed)
        return results  # type: ignore[return-value]

    def _score_sequences(
        self,
        sequences: list[tuple[list[int], int, tuple[int, ...]]],
        computed: Callable[[Sequence[int], list[Any]], None],
    ) -> None:
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
            prefixes = SharedPrefixes(
                self, [ids for ids, _, _ in sequences], [start - 1 for _, start, _ in sequences]
            )
            # rows of a group together (its prefix is freed after them), longest remainder first
            order = sorted(
                range(len(sequences)), key=lambda i: (prefixes.group_of[i], -prefixes.remainder(i))
            )
            remainder = [prefixes.remainder(i) for i in range(len(sequences))]
        else:
            prefixes = None
            order = sorted(range(len(sequences)), key=lambda i: -len(sequences[i][0]))
            remainder = [len(ids) for ids, _, _ in sequences]
        for idx in length_batches(order, remainder, max_tokens=self.score_batch_tokens):
            if prefixes is None:
                tables = self._score_rows(
                    [sequences[i] for i in idx], [0] * len(idx), [None] * len(idx)
                )
            else:
                tables = self._score_rows(
                    [sequences[i] for i in idx],
                    [prefixes.length[i] for i in idx],
                    prefixes.keys_values(idx),
                )
                prefixes.release(idx)
            computed(idx, tables)

    def _score_rows(
        self,
        rows: list[tuple[list[int], int, tuple[int, ...]]],
        prefix_lengths: list[int],
        prefixes: list[Any],
    ) -> list[Any]:
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
        for r, ((_full, start, parents), p, suffix) in enumerate(
            zip(rows, prefix_lengths, suffixes, strict=True)
        ):
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
        mask = (
            torch.zeros(allowed.shape, dtype=self.net.dtype)
            .masked_fill_(~allowed, torch.finfo(self.net.dtype).min)[:, None]
            .to(self.device)
        )
        pos = torch.tensor(positions, device=self.device)
        cache = self._batch_cache(prefixes, prefix_lengths) if p_max else None
        remember = self.store is not None
        with torch.inference_mode():
            out = self.net(
                input_ids=ids,
                attention_mask=mask,
                position_ids=pos,
                logits_to_keep=keep,
                cache=cache,
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
                self._remember(
                    full[:start],
                    [(k[row : row + 1, :, where], v[row : row + 1, :, where]) for k, v in layers],
                )
        return tables

    def _score_seq2seq(
        self, items: Sequence[tuple[Request, Sequence[str]]], on_batch: BatchCallback | None = None
    ) -> list[list[float]]:
        import torch

        results = []
        for item, (context, candidates) in enumerate(items):
            enc = self.encode_request(context)
            cands = [self.tokenizer(c, add_special_tokens=False)["input_ids"] for c in candidates]
            if any(not c for c in cands):
                raise ValueError("cannot score an empty candidate")
            width = max(len(c) for c in cands)
            # -100 marks padding: the model shifts the labels into decoder inputs itself
            labels = torch.tensor(
                [c + [-100] * (width - len(c)) for c in cands], device=self.device
            )
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
