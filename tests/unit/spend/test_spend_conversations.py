"""The DRFR judge's conversations counted turn by turn (isqaflow.spend.stages.conversation_calls)
equal every turn's whole request built and counted, deduplicated as the call cache does."""

from __future__ import annotations

import importlib.util
import json
import random

import pytest

from isqaflow.drfr.judge import conversation
from isqaflow.spend import stages, tokens


def _every_request(items, count) -> tuple[int, int]:
    """Each turn's whole request, keyed by its JSON (what the call cache compares)."""
    seen, total = set(), 0
    for item in items:
        questions = [r["question"] for r in item["requirements"]]
        answers: list[str] = []
        for _ in questions:
            request = conversation(item["response"], item.get("input") or "", questions, answers)
            key = json.dumps(request, sort_keys=True)
            if key not in seen:
                seen.add(key)
                total += count(request)
            answers.append("YES")
    return len(seen), total


def _items(seed: int) -> list[dict]:
    """Conversations that share prefixes, repeat, differ only late, or have no question; an input
    of spaces is no input (the same request as an empty one)."""
    rng = random.Random(seed)
    return [
        {
            "response": rng.choice(["a", "b", "a b", "Generated Text:\nc"]),
            "input": rng.choice(["", "  ", "x", None]),
            "requirements": [
                {"question": rng.choice(["q1", "q2", "q3"])} for _ in range(rng.randint(0, 6))
            ],
        }
        for _ in range(300)
    ]


counters = [tokens.ESTIMATE]
if importlib.util.find_spec("bpe_openai") is not None:
    counters.append(tokens._encoded("cl100k_base"))


@pytest.mark.parametrize("count", counters, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", [0, 1])
def test_turn_by_turn_equals_every_whole_request(count, seed):
    items = _items(seed)
    calls, total = stages.conversation_calls(items, count)
    assert (calls, total) == _every_request(items, count)
    assert 0 < calls < sum(len(i["requirements"]) for i in items)  # some turns were shared


@pytest.mark.parametrize("count", counters, ids=lambda c: c.name)
def test_a_request_is_base_plus_its_messages(count):
    messages = conversation("text", "input", ["q1", "q2"], ["YES"])
    assert count(messages) == count.base + sum(count.message(m) for m in messages)
