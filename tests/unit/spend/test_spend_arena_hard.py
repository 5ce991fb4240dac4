"""The spend plan of Arena-Hard-Auto's API jobs: calls from the suite's own request builders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from isqaflow import grid
from isqaflow.spend import PLANNERS
from isqaflow.spend.stages import Inputs, NoFormula

REPO = Path(__file__).resolve().parents[3]


def config(**judge):
    return {
        "downloads": {},
        "arena_hard": {
            "questions": "data/embedded/arena_hard/question.jsonl",
            "baseline": "data/embedded/arena_hard/model_answer/handwritten-baseline.jsonl",
            "limit": None,
            "answerers": {"m": {"model": "m"}},
            "generation": {"max_new_tokens": 10},
            "judges": {"j": {"model": "gpt", "mode": "text", "prompts": "published", **judge}},
            "control_questions": None,
        },
    }


def plan(cfg, rule, root=REPO):
    job = next(j for j in grid.jobs(cfg) if j.rule == rule)
    return PLANNERS[rule](job, Inputs(cfg, root), cfg)


def test_the_answers_are_one_call_per_question():
    calls, tokens, out, basis = plan(config(), "arena_hard_answers")
    assert (calls, out, basis) == (4, 40, "data") and tokens > 0


def test_the_judge_counts_both_games_and_the_controls_with_identical_requests_once(tmp_path):
    cfg = config(generation={"max_new_tokens": 100})
    calls, _, out, basis = plan(cfg, "arena_hard_judge")
    # 4 questions x 2 games + self: 1 request per question (both games the same) + empty: 2
    assert (calls, out, basis) == (8 + 4 + 8, 2000, "data+bound")
    # the answers written: the texts are known; an answer equal to the baseline's is one call
    root = tmp_path
    for name in ("question.jsonl", "model_answer/handwritten-baseline.jsonl"):
        (root / "data/embedded/arena_hard" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "data/embedded/arena_hard" / name).write_bytes(
            (REPO / "data/embedded/arena_hard" / name).read_bytes()
        )
    baseline = root / "data/embedded/arena_hard/model_answer/handwritten-baseline.jsonl"
    rows = [dict(json.loads(line), model="m") for line in baseline.read_text().splitlines()]
    answers = root / grid.PATTERNS["arena_hard_answers"][0].format(answerer="m")
    answers.parent.mkdir(parents=True)
    answers.write_text("".join(json.dumps(row) + "\n" for row in rows))
    calls, _, _, basis = plan(cfg, "arena_hard_judge", root)
    # both games of each answer are the self control's one request: 4, + empty's 8
    assert (calls, basis) == (4 + 8, "data")


def test_no_formula_without_the_questions_or_for_a_logprob_judge(tmp_path):
    with pytest.raises(NoFormula, match="not there yet"):
        plan(config(), "arena_hard_answers", tmp_path)
    with pytest.raises(NoFormula, match="logprob"):
        plan(config(mode="logprob"), "arena_hard_judge")
