"""Arena-Hard's judge: the label read as arena-hard's get_score, both games, both prompts, both
modes, the judgment lines read back by the released judgments' reader."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from isqaflow.arena_hard.judge import (
    LEVELS,
    PUBLISHED_SYSTEM,
    game_request,
    judge_games,
    parse_label,
)
from isqaflow.data.peers import read_arena_hard_judgments
from isqaflow.io import write_jsonl
from isqaflow.models.base import Generation, GenerationParams, LanguageModel


class LabelJudge(LanguageModel):
    """Prefers the answer that says "good": text replies with a label, or log-probs."""

    backend = "fake"

    def __init__(self):
        self.requests = []

    def identity(self) -> dict:
        return {"backend": self.backend}

    def _label(self, request) -> str:
        user = request[-1]["content"]
        start = "<answer A>" if "<answer A>" in user else "Assistant A's Answer|>"
        end = "<answer B>" if "<answer B>" in user else "Assistant B's Answer|>"
        first_good = "good" in user.split(start)[1].split(end)[0]
        return "A>>B" if first_good else "B>A"

    def generate(self, requests: Sequence, params: GenerationParams) -> list[Generation]:
        self.requests += list(requests)
        return [
            Generation(text=f"Reasons.\nMy final verdict: [[{self._label(r)}]]") for r in requests
        ]

    def score_batch(self, items, on_batch=None):
        out = []
        for request, candidates in items:
            assert list(candidates) == [f"[[{level}]]" for level in LEVELS]
            label = self._label(request)
            out.append([0.0 if level == label else -5.0 for level in LEVELS])
        return out


ITEMS = [
    {
        "question_id": "q1",
        "model": "m",
        "question": "Q1?",
        "answer": "a good one",
        "baseline_answer": "weak",
    },
    {
        "question_id": "q2",
        "model": "m",
        "question": "Q2?",
        "answer": "weak",
        "baseline_answer": "a good one",
    },
]


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("verdict: [[A>B]]", "A>B"),
        ("[[B>>A]] and again [[B>>A]]", "B>>A"),  # one distinct label
        ("[[A>B]] then [[B>A]]", None),  # several different ones
        ("no label at all", None),
        ("[[A<B]]", "A<B"),  # outside the five: returned, the reader counts it
        ("[[]]", None),
    ],
)
def test_the_label_is_read_as_arena_hard_reads_it(text, label):
    assert parse_label(text) == label


def test_game_requests_show_the_answers_in_the_published_template():
    chat = game_request("Q?", "first", "second", prompts="published")
    assert chat[0] == {"role": "system", "content": PUBLISHED_SYSTEM}
    assert chat[1]["content"] == (
        "<|User Prompt|>\nQ?\n\n<|The Start of Assistant A's Answer|>\nfirst\n"
        "<|The End of Assistant A's Answer|>\n\n<|The Start of Assistant B's Answer|>\nsecond\n"
        "<|The End of Assistant B's Answer|>"
    )
    assert game_request("Q?", "x", "y", "ours", label_only=True)[1]["content"].endswith(
        "Write only your verdict label."
    )
    with pytest.raises(ValueError, match="prompts must be"):
        game_request("Q?", "x", "y", prompts="mine")


@pytest.mark.parametrize(("mode", "prompts"), [("text", "published"), ("logprob", "ours")])
def test_both_games_are_judged_and_read_back_as_battles(tmp_path, mode, prompts):
    lines = judge_games(LabelJudge(), ITEMS, "j", mode=mode, prompts=prompts)
    assert [line["question_id"] for line in lines] == ["q1", "q2"]
    # q1: the answer is good -- B in game 1 (B>A), A in game 2 (A>>B)
    assert [g["score"] for g in lines[0]["games"]] == ["B>A", "A>>B"]
    assert [g["score"] for g in lines[1]["games"]] == ["A>>B", "B>A"]
    assert ("logprobs" in lines[0]["games"][0]) == (mode == "logprob")
    path = tmp_path / "judgments.jsonl"
    write_jsonl(path, lines)
    battles = read_arena_hard_judgments(path, strong_weight=3, baseline="base").table
    by_question = battles.groupby("question_id")["winner"].apply(list).to_dict()
    assert by_question == {"q1": ["model_b"] + ["model_b"] * 3, "q2": ["model_a"] * 3 + ["model_a"]}


def test_a_judgment_without_a_label_is_left_out_and_counted(tmp_path):
    class Mumbler(LabelJudge):
        def generate(self, requests, params):
            return [Generation(text="I cannot decide.") for _ in requests]

    lines = judge_games(Mumbler(), ITEMS[:1], "j", mode="text")
    assert [g["score"] for g in lines[0]["games"]] == [None, None]
    write_jsonl(tmp_path / "j.jsonl", lines)
    read = read_arena_hard_judgments(tmp_path / "j.jsonl", baseline="base")
    assert read.table.empty and read.n_skipped == 2


def test_no_items_no_call():
    judge = LabelJudge()
    assert judge_games(judge, [], "j") == [] and judge.requests == []
    with pytest.raises(ValueError, match="mode must be"):
        judge_games(judge, ITEMS, "j", mode="both")
