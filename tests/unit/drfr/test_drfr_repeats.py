"""DRFR judges repeat their judgments (``repeats: k``) like the arena judges: each repetition under its
own call-cache keys and, with sampling, its own seed; the controls once; k = 1 as before."""

from __future__ import annotations

import json

import pytest
from test_drfr_controls import INSTRUCTIONS, RESPONSES, write_inputs

from isqaflow.drfr import judge_responses
from isqaflow.models.base import Generation, GenerationParams, LanguageModel
from isqaflow.models.cache import CachedModel, CallCache


class SeedSays(LanguageModel):
    """A text judge that answers YES, except NO to beta's responses when sampling with seed 1."""

    backend = "fake"

    def __init__(self):
        self.requests = 0

    def identity(self):
        return {"backend": self.backend}

    def generate(self, requests, params):
        self.requests += len(requests)
        return [
            Generation(text="NO" if params.seed == 1 and "by beta." in r[0]["content"] else "YES")
            for r in requests
        ]


def _judge(tmp_path, monkeypatch, inner, repeats, generation):
    cache = CallCache(tmp_path / "calls.sqlite")
    monkeypatch.setattr(
        "isqaflow.models.registry.load_model", lambda *a, **k: CachedModel(inner, cache)
    )
    instructions, responses = write_inputs(tmp_path)
    judge_responses.run_judge(
        instructions,
        responses,
        tmp_path / "judgments.jsonl",
        tmp_path / "controls.jsonl",
        judge_spec={"backend": "fake"},
        judge_name="gpt",
        dataset="infobench",
        mode="text",
        generation=generation,
        cache_path=tmp_path / "calls.sqlite",
        controls=["empty_response"],
        control_instructions=2,
        seed=3,
        repeats=repeats,
    )
    judgments = [
        json.loads(line) for line in (tmp_path / "judgments.jsonl").read_text().splitlines()
    ]
    controls = (tmp_path / "controls.jsonl").read_text()
    return judgments, controls, cache


SAMPLING = {"do_sample": True, "seed": 0, "max_new_tokens": 4}


def test_a_drfr_judge_repeats_each_judgment_with_its_own_keys_and_seed(tmp_path, monkeypatch):
    assert any(
        "by beta." in r["response"] for r in RESPONSES
    )  # the fixture's responses name their model
    questions = sum(len(i.requirements) for i in INSTRUCTIONS) * 2  # two responders
    first = SeedSays()
    once, controls_once, _ = _judge(tmp_path / "once", monkeypatch, first, 1, SAMPLING)
    judge = SeedSays()
    twice, controls_twice, cache = _judge(tmp_path / "twice", monkeypatch, judge, 2, SAMPLING)
    assert all("repetitions" not in r for r in once) and len(once) == questions
    assert judge.requests == len(cache) == first.requests + questions  # the controls judged once
    assert [r["answer"] for r in twice] == [r["answer"] for r in once]  # the first repetition's
    assert controls_twice == controls_once
    changed = [r for r in twice if len({rep["answer"] for rep in r["repetitions"]}) > 1]
    assert changed and all(r["model"] == "beta" for r in changed)  # seed 1 said NO to beta only
    assert all([rep["answer"] for rep in r["repetitions"]] == ["YES", "NO"] for r in changed)
    assert set(twice[0]["repetitions"][0]) == set(judge_responses.REPEATED_KEYS)

    # a rerun reads every repetition back from the cache
    class Never(SeedSays):
        def generate(self, requests, params):
            pytest.fail("a cached repetition was computed again")

    again, _, _ = _judge(tmp_path / "twice", monkeypatch, Never(), 2, SAMPLING)
    assert again == twice


def test_greedy_repetitions_are_their_own_calls_with_the_same_seed(tmp_path, monkeypatch):
    judge = SeedSays()
    judgments, _, _ = _judge(tmp_path, monkeypatch, judge, 3, {"max_new_tokens": 4})
    assert all([rep["answer"] for rep in r["repetitions"]] == ["YES"] * 3 for r in judgments)
    with pytest.raises(ValueError, match="repeats must be at least 1"):
        _judge(tmp_path / "zero", monkeypatch, SeedSays(), 0, None)


def test_generation_params_of_a_repetition():
    greedy = GenerationParams(max_new_tokens=4)
    assert greedy.for_repetition(2) is greedy
    sampling = GenerationParams(do_sample=True, seed=7)
    assert sampling.for_repetition(0) is sampling and sampling.for_repetition(2).seed == 9
