"""Batches and shared prefixes of the hf backend: length-sorted batches, prefix groups, their keys and values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from isqaflow.models.inprocess.prefix_groups import common_prefix, prefix_groups

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


def length_batches(
    order: Sequence[int],
    lengths: Sequence[int],
    max_rows: int | None = None,
    max_tokens: int | None = None,
    max_waste: int | None = None,
) -> list[list[int]]:
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


class SharedPrefixes:
    """Which prefix each row of a call continues, and that prefix's keys and values.

    Rows are grouped by shared token prefix (:func:`~.prefix.prefix_groups`, each group's
    prefix computed once); a row whose longer start the model's prefix store holds (a
    conversation's earlier turn) continues from that instead.  ``limits[i]`` is the longest
    prefix row ``i`` may take: the positions after it must be computed (their logits are
    read).  A group's keys and values are computed when its first batch needs them and freed
    after its last row (:meth:`release`).
    """

    def __init__(
        self, model: PrefixKV, sequences: Sequence[Sequence[int]], limits: Sequence[int]
    ) -> None:
        self.model, self.sequences = model, sequences
        # a group costs one extra forward pass over its prefix (~16 tokens of overhead)
        self.groups, _ = prefix_groups(
            sequences,
            MIN_SHARED_PREFIX,
            group_cost=16,
            keep_last=[len(s) - limit for s, limit in zip(sequences, limits, strict=True)],
        )
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
        self.remaining = [
            sum(self.group_of[i] == g for i in members)
            for g, (_, members) in enumerate(self.groups)
        ]
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


class PrefixKV:
    """Keys and values of token prefixes for :class:`~.hf.HFModel`: computed, reused from its
    prefix store (``self.store``), and joined into one cache for a batch."""

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
        cache = (
            DynamicCache([(k[:, :, :n], v[:, :, :n]) for k, v in stored], config=self.net.config)
            if n
            else None
        )
        with torch.inference_mode():
            out = self.net(
                input_ids=torch.tensor([tokens[n:]], device=self.device),
                position_ids=torch.arange(n, len(tokens), device=self.device)[None],
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            )
        layers = self._layers(out.cache)
        self._remember(tokens, layers)
        return layers

    def _remember(self, tokens: list[int], layers: list[tuple[Any, Any]]) -> None:
        if self.store is not None and len(tokens) >= MIN_SHARED_PREFIX:
            nbytes = sum(
                k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in layers
            )
            self.store.put(tokens, layers, nbytes)

    def _stored_prefix(
        self, tokens: list[int], limit: int
    ) -> tuple[int, list[tuple[Any, Any]] | None]:
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
