"""Judge noise: a judge repeats every judgment k times under distinct call-cache keys; k = 1 keeps
today's keys and records."""

from __future__ import annotations

import hashlib
import json

import pytest
from test_arena_judge import FakeJudge, make_pairs, shown_answers

from isqaflow.arena.judging.judge import REPEATED_KEYS, judge_with_model
from isqaflow.models.cache import CachedModel, CallCache, call_key


def test_the_repetition_enters_the_key_only_when_given():
    identity, request, params = (
        {"backend": "x"},
        [{"role": "user", "content": "q"}],
        {"max_new_tokens": 4},
    )
    before = hashlib.sha256(
        json.dumps(
            {"kind": "generate", "model": identity, "request": request, "params": params},
            sort_keys=True,
            ensure_ascii=False,
        ).encode()
    ).hexdigest()
    assert (
        call_key("generate", identity, request, params) == before
    )  # the keys of every existing cache
    assert call_key("generate", identity, request, params, None) == before
    keys = {call_key("generate", identity, request, params, r) for r in range(3)}
    assert len(keys) == 3 and before not in keys


class Wavering(FakeJudge):
    """Prefers the GOOD answer, except that every second call it sees, for pair 0, it says tie."""

    def __init__(self):
        self.seen = 0
        super().__init__(self.answer)

    def answer(self, request):
        first, second = shown_answers(request)
        if "answer 0." in first + second:
            self.seen += 1
            if self.seen % 4 in (3, 0):  # the second repetition's both orders
                return "<rating>0</rating>"
        return f"<rating>{1 if 'GOOD' in first else 2}</rating>"


def _judge(monkeypatch, tmp_path, inner, repeats):
    cache = CallCache(tmp_path / "calls.sqlite")
    monkeypatch.setattr(
        "isqaflow.models.registry.load_model", lambda *a, **k: CachedModel(inner, cache)
    )
    records = judge_with_model(
        make_pairs(3),
        {"backend": "fake", "model": "x"},
        "j",
        "text",
        "both",
        0,
        None,
        tmp_path / "calls.sqlite",
        repeats=repeats,
    )
    return records, cache


def test_repeats_judge_each_pair_k_times_with_their_own_keys(monkeypatch, tmp_path):
    judge = Wavering()
    records, cache = _judge(monkeypatch, tmp_path, judge, repeats=3)
    assert sum(len(call) for call in judge.calls) == 3 * 3 * 2  # 3 repetitions x 3 pairs x 2 orders
    assert len(cache) == 18  # none of the repetitions was read from another's cache entry
    first = records[0]
    assert [r["verdict"] for r in first["repetitions"]] == ["1", "tie", "1"]
    assert first["verdict"] == "1"  # the record's verdict: the first repetition's
    assert set(first["repetitions"][0]) == set(REPEATED_KEYS)
    assert all(
        [r["verdict"] for r in rec["repetitions"]] == [rec["verdict"]] * 3 for rec in records[1:]
    )
    # a rerun reads all of them back from the cache: the same records, no call
    again = FakeJudge(lambda request: pytest.fail("a cached repetition was computed again"))
    rerun, _ = _judge(monkeypatch, tmp_path, again, repeats=3)
    assert rerun == records


def test_one_repetition_keeps_the_keys_and_the_records(monkeypatch, tmp_path):
    records, cache = _judge(monkeypatch, tmp_path, Wavering(), repeats=1)
    assert all("repetitions" not in record for record in records)
    keys = [row[0] for row in cache.conn.execute("SELECT key FROM calls")]
    request = cache.conn.execute("SELECT kind, model, request, params FROM calls").fetchall()
    assert sorted(keys) == sorted(
        call_key(kind, json.loads(model), json.loads(req), json.loads(params))
        for kind, model, req, params in request
    )
    with pytest.raises(ValueError, match="repeats must be at least 1"):
        _judge(monkeypatch, tmp_path, Wavering(), repeats=0)


def test_a_local_logprob_judge_repeats_to_the_same_verdicts(tiny_causal, tmp_path):
    """The real backend and call cache: k = 2 stores both repetitions; a deterministic log-prob
    judge gives the same verdicts each time (flip rate 0), at twice the scoring."""
    from isqaflow.arena.judging.judge_audit import flip_rates

    spec = {"backend": "hf", "model": str(tiny_causal)}
    once = judge_with_model(
        make_pairs(3), spec, "j", "logprob", "both", 0, None, tmp_path / "once.sqlite", threads=1
    )
    twice = judge_with_model(
        make_pairs(3),
        spec,
        "j",
        "logprob",
        "both",
        0,
        None,
        tmp_path / "twice.sqlite",
        threads=1,
        repeats=2,
    )
    assert (
        len(CallCache(tmp_path / "once.sqlite")) == 6
        and len(CallCache(tmp_path / "twice.sqlite")) == 12
    )
    assert [r["verdict"] for r in once] == [r["verdict"] for r in twice]
    assert flip_rates(twice)["flip_rate"] == 0.0 and flip_rates(twice)["repeats"] == 2
