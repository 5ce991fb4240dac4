"""Group token sequences by shared prefixes, so a prefix is run through the model once.

Many calls of a stage share a long beginning: every question about one source window
(QAGS, QuestEval), every pair judged after the same instructions and few-shot
examples (RAG-QA Arena).  :func:`prefix_groups` finds groups whose shared prefix is
worth computing once (its keys and values are then reused for every member); the
rest are returned as singles for ordinary batching.

The grouping sorts the sequences, so sequences with a common prefix are neighbours,
and splits the sorted run recursively where the neighbour prefixes are shortest,
keeping a split only when it saves tokens: a group with prefix P costs
``group_cost + P + sum(len_i - P)`` tokens, a single costs ``len_i``.

:class:`PrefixStore` keeps the keys and values of sequences a model has already read, so
that later requests reuse them (automatic prefix caching, as vLLM and SGLang do): each turn
of a multi-turn conversation starts with the turn before it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

BLOCK = 256  # sequences planned together (neighbours in sorted order)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def prefix_groups(
    sequences: Sequence[Sequence[int]],
    min_prefix: int = 16,
    keep_last: Sequence[int] | None = None,
    group_cost: int = 0,
) -> tuple[list[tuple[int, list[int]]], list[int]]:
    """Split ``sequences`` into shared-prefix groups and singles.

    Returns ``(groups, singles)``: each group is ``(prefix_length, member indices)``
    with at least two members and a prefix of at least ``min_prefix`` tokens.
    ``keep_last[i]`` is how many final tokens of sequence ``i`` must stay outside the
    prefix (default 1: the last position's logits are always computed per member).
    ``group_cost`` is the extra cost of a group in tokens: a group is decoded on its
    own, so its decoding steps cannot be shared with other sequences' batches.
    """
    n = len(sequences)
    if n == 0:
        return [], []
    keep = list(keep_last) if keep_last is not None else [1] * n
    limit = [max(0, len(s) - k) for s, k in zip(sequences, keep, strict=True)]
    order = sorted(range(n), key=lambda i: tuple(sequences[i]))
    adjacent = [common_prefix(sequences[order[k]], sequences[order[k + 1]]) for k in range(n - 1)]

    def solve(lo: int, hi: int) -> tuple[int, list[tuple[int, list[int]]], list[int]]:
        """Cheapest plan for order[lo:hi]: (cost in tokens, groups, singles)."""
        members = order[lo:hi]
        if hi - lo == 1:
            i = members[0]
            return len(sequences[i]), [], [i]
        shared = min(min(adjacent[lo : hi - 1]), min(limit[i] for i in members))
        whole = None
        if shared >= min_prefix:
            cost = group_cost + shared + sum(len(sequences[i]) - shared for i in members)
            whole = (cost, [(shared, list(members))], [])
        # split where the neighbours share least
        low = min(adjacent[lo : hi - 1])
        cuts = [lo] + [k + 1 for k in range(lo, hi - 1) if adjacent[k] == low] + [hi]
        split_cost, split_groups, split_singles = 0, [], []
        for a, b in zip(cuts, cuts[1:], strict=False):
            cost, groups, singles = solve(a, b)
            split_cost += cost
            split_groups += groups
            split_singles += singles
        if whole is not None and whole[0] <= split_cost:
            return whole
        return split_cost, split_groups, split_singles

    groups: list[tuple[int, list[int]]] = []
    singles: list[int] = []
    for lo in range(0, n, BLOCK):  # bounded recursion depth and quadratic work
        _, g, s = solve(lo, min(n, lo + BLOCK))
        groups += g
        singles += s
    return groups, sorted(singles)


class PrefixStore:
    """Keys and values of token sequences the model has already read (automatic prefix caching).

    A later request that starts like a stored sequence reuses the stored keys and values
    for the part they share instead of computing it again -- the turns of one multi-turn
    conversation (each turn starts with the one before), a source window first answered and
    then scored.  Entries are kept least-recently-used within a byte budget; ``payload`` is
    opaque here (the backend's per-layer tensors), ``nbytes`` its size.
    """

    def __init__(self, budget_bytes: int) -> None:
        import numpy as np

        self._np = np
        self.budget = int(budget_bytes)
        self.entries: OrderedDict[int, tuple[Any, Any, int]] = OrderedDict()
        self.size = 0
        self._next = 0
        self.hits = 0  # tokens served from the store
        self.lookups = 0

    def lookup(self, tokens: Sequence[int], limit: int | None = None) -> tuple[int, Any]:
        """``(n, payload)``: the longest start (at most ``limit`` tokens) that ``tokens`` shares
        with a stored sequence, and that sequence's payload; ``(0, None)`` when none."""
        np = self._np
        arr = np.asarray(tokens if limit is None else tokens[:limit])
        self.lookups += 1
        best, best_key = 0, None
        for key, (stored, _, _) in self.entries.items():
            m = min(len(stored), len(arr))
            if m <= best:
                continue
            diff = np.flatnonzero(stored[:m] != arr[:m])
            n = int(diff[0]) if diff.size else m
            if n > best:
                best, best_key = n, key
        if best_key is None:
            return 0, None
        self.entries.move_to_end(best_key)
        self.hits += best
        return best, self.entries[best_key][1]

    def put(self, tokens: Sequence[int], payload: Any, nbytes: int) -> None:
        """Store ``tokens``; a stored sequence that ``tokens`` merely extends (the turn before
        of the same conversation) is dropped: everything it could serve, this serves."""
        if nbytes > self.budget:
            return
        np = self._np
        arr = np.asarray(tokens)
        for key in [
            k
            for k, (stored, _, _) in self.entries.items()
            if len(stored) <= len(arr) and np.array_equal(stored, arr[: len(stored)])
        ]:
            self.size -= self.entries.pop(key)[2]
        key, self._next = self._next, self._next + 1
        self.entries[key] = (arr, payload, nbytes)
        self.size += nbytes
        while self.size > self.budget:
            _, (_, _, size) = self.entries.popitem(last=False)
            self.size -= size
