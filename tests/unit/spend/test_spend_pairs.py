"""The arena judge's pairs counted by the spend plan (isqaflow.spend.stages.pair_calls) equal every
request built whole and counted: the leading messages counted once for all pairs, identical bounded
pairs once times their number."""

from __future__ import annotations

import importlib.util
import random

import pytest

from isqaflow.arena.judging.judge import pair_request
from isqaflow.spend import stages, tokens

counters = [tokens.ESTIMATE]
if importlib.util.find_spec("bpe_openai") is not None:
    counters.append(tokens._encoded("cl100k_base"))


def _pairs(seed: int) -> list[tuple[str, str, str]]:
    """Pairs that repeat, answers that are the same text, placeholders at a bound."""
    rng = random.Random(seed)
    texts = ["q", "An answer.", "Another answer.", tokens.filler(400), tokens.filler(400, "b:")]
    return [tuple(rng.choice(texts) for _ in range(3)) for _ in range(200)]


@pytest.mark.parametrize("count", counters, ids=lambda c: c.name)
@pytest.mark.parametrize("orders", [1, 2])
def test_pair_calls_equal_every_whole_request_counted(count, orders):
    pairs = _pairs(orders)
    bounded = (len(pairs) * orders, orders * sum(count(pair_request(*p)) for p in pairs))
    assert stages.pair_calls(pairs, orders, True, count) == bounded
    requests = set(pairs) | ({(q, b, a) for q, a, b in pairs} if orders == 2 else set())
    distinct = (len(requests), sum(count(pair_request(*r)) for r in requests))
    assert stages.pair_calls(pairs, orders, False, count) == distinct
    assert 0 < distinct[0] < len(pairs) * orders  # some requests were the same
