"""A judge that reuses another judge's calls (``reuse_calls``): the calls that are really the same
are read from the other judge's call cache; a judge whose calls differ never gets its answers."""

from __future__ import annotations

import pytest
from test_arena_judge import FakeJudge, make_pairs, shown_answers

from isqaflow.arena.judging.judge import judge_with_model
from isqaflow.models.cache import CachedModel, CallCache, copy_calls
from isqaflow.runtime import call_cache_of


def _judge_text(monkeypatch, cache_path, inner, generation=None, prompt_files=()):
    cache = CallCache(cache_path)
    monkeypatch.setattr(
        "isqaflow.models.registry.load_model", lambda *a, **k: CachedModel(inner, cache)
    )
    records = judge_with_model(
        make_pairs(4),
        {"backend": "fake", "model": "x"},
        "j",
        "text",
        "both",
        0,
        generation,
        cache_path,
        prompt_files=prompt_files,
    )
    return records, cache


def always(label):
    return lambda request: f"<rating>{label}</rating>"


def test_a_judge_whose_calls_differ_never_gets_the_other_judges_answers(monkeypatch, tmp_path):
    """Judge A always says 1; judge B (same fake model, other decoding) always says 2.  With A's
    calls copied into B's cache, B still makes every call itself and reports its own verdicts."""
    first, _ = _judge_text(monkeypatch, tmp_path / "a.sqlite", FakeJudge(always(1)))
    assert {r["verdict_ab"] for r in first} == {"a"}
    assert copy_calls([tmp_path / "a.sqlite"], tmp_path / "b.sqlite") == 8  # 4 pairs x 2 orders
    other = FakeJudge(always(2))
    second, cache = _judge_text(
        monkeypatch, tmp_path / "b.sqlite", other, generation={"max_new_tokens": 100}
    )
    assert sum(len(call) for call in other.calls) == 8  # none of A's answers served
    assert {r["verdict_ab"] for r in second} == {"b"} and {r["verdict_ba"] for r in second} == {"a"}
    assert len(cache) == 16  # A's 8 rows and B's own 8


def test_the_same_calls_are_read_back_not_made_again(monkeypatch, tmp_path):
    """The same model, prompt and decoding: B makes no call and gets exactly A's replies."""
    first, _ = _judge_text(
        monkeypatch,
        tmp_path / "a.sqlite",
        FakeJudge(
            lambda request: f"<rating>{1 if 'GOOD' in shown_answers(request)[0] else 2}</rating>"
        ),
    )
    copy_calls([tmp_path / "a.sqlite"], tmp_path / "b.sqlite")
    second, _ = _judge_text(
        monkeypatch,
        tmp_path / "b.sqlite",
        FakeJudge(lambda request: pytest.fail("a call of judge A was made again")),
    )
    assert second == first


def test_a_logprob_judge_with_the_other_rule_reuses_every_call(tiny_causal, tmp_path, monkeypatch):
    """The real backend: the calibrated judge's calls copied, the raw judge scores nothing itself and
    its verdicts are those the raw rule reads from the same log-probabilities."""
    from isqaflow.models import registry

    spec = {"backend": "hf", "model": str(tiny_causal)}
    calibrated = judge_with_model(
        make_pairs(3),
        spec,
        "local",
        "logprob",
        "both",
        0,
        None,
        tmp_path / "a.sqlite",
        threads=1,
        rule="calibrated",
        tie_band=0.01,
    )
    copy_calls([tmp_path / "a.sqlite"], tmp_path / "b.sqlite")
    loaded = []
    real_load = registry.load_model

    def spy(*args, **kwargs):
        loaded.append(real_load(*args, **kwargs))
        return loaded[-1]

    monkeypatch.setattr(registry, "load_model", spy)
    raw = judge_with_model(
        make_pairs(3),
        spec,
        "local-raw",
        "logprob",
        "both",
        0,
        None,
        tmp_path / "b.sqlite",
        threads=1,
        rule="raw",
    )
    assert (
        loaded[0].cache.misses == 0 and loaded[0].cache.hits == 6
    )  # 3 pairs x 2 orders, all reused
    assert [r["verdict"] for r in raw] == [r["verdict_raw"] for r in calibrated]
    assert [r["logprobs_ab"] for r in raw] == [r["logprobs_ab"] for r in calibrated]
    # repeated judgments are calls of their own (the repetition enters the key): none reused
    loaded.clear()
    copy_calls([tmp_path / "a.sqlite"], tmp_path / "c.sqlite")
    judge_with_model(
        make_pairs(3),
        spec,
        "repeated",
        "logprob",
        "both",
        0,
        None,
        tmp_path / "c.sqlite",
        threads=1,
        rule="raw",
        repeats=2,
    )
    assert loaded[0].cache.hits == 0 and loaded[0].cache.misses == 12


def test_copy_calls_skips_a_missing_cache_and_keeps_its_own_rows(tmp_path):
    assert copy_calls([], tmp_path / "none.sqlite") == 0 and not (tmp_path / "none.sqlite").exists()
    own = CallCache(tmp_path / "own.sqlite")
    own.put_many([("k1", "score", {"m": 1}, "r", {}, [1.0])])
    own.close()
    other = CallCache(tmp_path / "other.sqlite")
    other.put_many(
        [("k1", "score", {"m": 1}, "r", {}, [9.0]), ("k2", "score", {"m": 1}, "s", {}, [2.0])]
    )
    other.close()
    assert (
        copy_calls(
            [tmp_path / "missing.sqlite", tmp_path / "other.sqlite"], tmp_path / "own.sqlite"
        )
        == 1
    )
    assert CallCache(tmp_path / "own.sqlite").get_many(["k1", "k2"]) == {"k1": [1.0], "k2": [2.0]}


def test_the_call_cache_of_a_job_is_beside_its_first_output():
    assert (
        str(call_cache_of("results/arena/judgments/bm25-k5/local.jsonl"))
        == "results/arena/judgments/bm25-k5/local.jsonl.calls.sqlite"
    )
