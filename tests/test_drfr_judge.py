"""Tests for InFoBench's multi-turn YES/NO judge: turns, reply parsing, batching, logprob mode."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import pytest

from isqaflow.drfr.aggregate import drfr_summary
from isqaflow.drfr.judge import (
    RULES,
    conversation,
    first_turn,
    invalid_count,
    judge,
    parse_answer,
)
from isqaflow.models.base import Generation, GenerationParams, LanguageModel, Request
from isqaflow.models.registry import load_model

INSTRUCTION = "Write a three-line poem about the sea for a children's book."
RESPONSE = "Waves roll in,\nwaves roll out,\nthe sea is singing all about."
INPUT = "Audience: children aged five to seven."
QUESTIONS = [
    "Is the generated text a poem about the sea?",
    "Does the generated text have exactly three lines?",
    "Is the generated text suitable for young children?",
]


def item(instruction_id: str, n_questions: int, input_text: str = "") -> dict:
    return {
        "instruction_id": instruction_id,
        "model": "responder-x",
        "subset": "Hard",
        "category": "poetry",
        "instruction": INSTRUCTION,  # present in the data, never shown to the judge
        "input": input_text,
        "response": RESPONSE,
        "requirements": [
            {"question": QUESTIONS[k % 3], "labels": ["Content", "Format"][: 1 + k % 2]}
            for k in range(n_questions)
        ],
    }


class ScriptedJudge(LanguageModel):
    """A fake judge: replies from a script, one list per generate call; records every call."""

    backend = "fake"

    def __init__(self, script: Sequence[Sequence[str]] | None = None, reply: str = "YES"):
        self.script = list(script or [])
        self.reply = reply
        self.calls: list[list[Request]] = []

    def identity(self) -> dict:
        return {"backend": self.backend}

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        self.calls.append(list(requests))
        if self.script:
            replies = self.script[len(self.calls) - 1]
        else:
            replies = [self.reply] * len(requests)
        assert len(replies) == len(requests)
        return [Generation(text=text) for text in replies]


# ------------------------------------------------------------------- prompt structure
def test_conversation_with_input_after_two_answers():
    messages = conversation(RESPONSE, INPUT, QUESTIONS, ["YES", "No, it has four."])
    expected_first = "\n\n".join(
        [RULES, f"Input:\n{INPUT}", f"Generated Text:\n{RESPONSE}", f"Question:\n{QUESTIONS[0]}"]
    )
    assert messages == [
        {"role": "user", "content": expected_first},
        {"role": "assistant", "content": "YES"},
        {"role": "user", "content": QUESTIONS[1]},
        {"role": "assistant", "content": "No, it has four."},
        {"role": "user", "content": QUESTIONS[2]},
    ]
    assert first_turn(RESPONSE, INPUT, QUESTIONS[0]) == expected_first
    assert all(INSTRUCTION not in m["content"] for m in messages)


def test_conversation_without_input_leaves_the_input_block_out():
    messages = conversation(RESPONSE, "  \n", QUESTIONS, ["YES", "NO"])
    first = messages[0]["content"]
    assert first == "\n\n".join(
        [RULES, f"Generated Text:\n{RESPONSE}", f"Question:\n{QUESTIONS[0]}"]
    )
    assert "Input:" not in first
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in messages[1:]] == ["YES", QUESTIONS[1], "NO", QUESTIONS[2]]


def test_conversation_needs_a_question_left_to_ask():
    assert conversation(RESPONSE, "", QUESTIONS[:1], []) == [
        {"role": "user", "content": first_turn(RESPONSE, "", QUESTIONS[0])}
    ]
    with pytest.raises(ValueError, match="none of 2 questions"):
        conversation(RESPONSE, "", QUESTIONS[:2], ["YES", "NO"])


def test_rules_say_what_the_protocol_needs():
    text = RULES.lower()
    assert "yes" in text and "no" in text and "however small" in text


# ------------------------------------------------------------------- reply parsing
@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("Yes.", "YES"),
        ("YES, because the text has three lines.", "YES"),
        ("No", "NO"),
        ("NO.", "NO"),
        ("  no", "NO"),
        ("**Yes**", "YES"),
        ("- NO -", "NO"),
        ('"Yes"', "YES"),
        ("No, not fully.", "NO"),
        ("Yes - there are no errors.", "YES"),
        ("The answer is YES", "YES"),
        ("The text gives no title, so: NO", "NO"),
        ("Not fully", "INVALID"),
        ("NOTE: the text is cut off.", "INVALID"),
        ("", "INVALID"),
        ("maybe", "INVALID"),
        ("yes and no", "INVALID"),
        ("Yes/No", "INVALID"),
        ("It is hard to say YES or NO here.", "INVALID"),
        ("The answer is yes.", "INVALID"),  # lowercase is not the asked form: no guess
        ("Yesterday it was", "INVALID"),
        ("Nope", "INVALID"),
    ],
)
def test_parse_answer(reply, answer):
    assert parse_answer(reply) == answer


# ------------------------------------------------------------------- text mode
def test_text_mode_asks_every_question_after_an_invalid_answer():
    model = ScriptedJudge(script=[["Yes."], ["Not fully"], ["NO."]])
    records = judge(model, [item("i1", 3, INPUT)], mode="text")
    assert [r["answer"] for r in records] == ["YES", "INVALID", "NO"]
    assert [r["raw"] for r in records] == ["Yes.", "Not fully", "NO."]
    assert [r["question_index"] for r in records] == [0, 1, 2]
    assert [r["question"] for r in records] == QUESTIONS
    assert records[1]["labels"] == ["Content", "Format"]
    assert all(r["logprob_yes"] is None and r["logprob_no"] is None for r in records)
    assert {(r["instruction_id"], r["model"], r["subset"], r["category"]) for r in records} == {
        ("i1", "responder-x", "Hard", "poetry")
    }
    assert invalid_count(records) == 1
    third = model.calls[2][0]
    assert third == conversation(RESPONSE, INPUT, QUESTIONS, ["Yes.", "Not fully"])
    assert third[3] == {"role": "assistant", "content": "Not fully"}


def test_text_mode_batches_one_generate_call_per_turn():
    items = [item("i1", 1), item("i2", 3, INPUT), item("i3", 2)]
    model = ScriptedJudge(reply="YES")
    records = judge(model, items, mode="text")
    assert [len(call) for call in model.calls] == [3, 2, 1]
    # turn 1 holds the items that have a second question, each with its own history
    assert model.calls[1] == [
        conversation(RESPONSE, INPUT, QUESTIONS, ["YES"]),
        conversation(RESPONSE, "", QUESTIONS[:2], ["YES"]),
    ]
    assert [(r["instruction_id"], r["question_index"]) for r in records] == [
        ("i1", 0), ("i2", 0), ("i2", 1), ("i2", 2), ("i3", 0), ("i3", 1)
    ]
    shown = [m["content"] for call in model.calls for chat in call for m in chat]
    assert all(INSTRUCTION not in content for content in shown)


def test_records_feed_the_drfr_aggregation():
    model = ScriptedJudge(script=[["YES", "NO"], ["maybe"]])
    records = judge(model, [item("i1", 2), item("i2", 1)], mode="text")
    summary = drfr_summary(pd.DataFrame(records)).loc["responder-x"]
    assert summary["n_questions"] == 3
    assert summary["n_yes"] == 1
    assert summary["n_invalid"] == 1
    assert summary["drfr"] == pytest.approx(1 / 3)


def test_judge_rejects_unknown_mode_and_empty_requirements():
    with pytest.raises(ValueError, match="mode"):
        judge(ScriptedJudge(), [item("i1", 1)], mode="free")
    with pytest.raises(ValueError, match="no questions"):
        judge(ScriptedJudge(), [item("i1", 0)], mode="text")


# ------------------------------------------------------------------- logprob mode
class ScriptedScorer(ScriptedJudge):
    """A fake local judge: YES is likelier exactly when the conversation shows RESPONSE."""

    def score_batch(self, items):
        self.calls.append([context for context, _ in items])
        assert all(list(candidates) == ["YES", "NO"] for _, candidates in items)
        return [[-0.5, -2.0] if RESPONSE in context[0]["content"] else [-3.0, -0.25]
                for context, _ in items]


def test_logprob_mode_keeps_the_chosen_word_as_the_assistant_turn():
    sea, land = item("sea", 2), {**item("land", 3), "response": "Mountains stand still."}
    model = ScriptedScorer()
    records = judge(model, [sea, land], mode="logprob")
    assert [(r["instruction_id"], r["answer"], r["raw"]) for r in records] == [
        ("sea", "YES", ""), ("sea", "YES", ""),
        ("land", "NO", ""), ("land", "NO", ""), ("land", "NO", ""),
    ]
    assert [(r["logprob_yes"], r["logprob_no"]) for r in records[:3]] == [
        (-0.5, -2.0), (-0.5, -2.0), (-3.0, -0.25)
    ]
    assert [len(call) for call in model.calls] == [2, 2, 1]
    assert model.calls[2][0] == conversation(
        "Mountains stand still.", "", QUESTIONS, ["NO", "NO"]
    )
    assert model.calls[1][0][1] == {"role": "assistant", "content": "YES"}


def test_logprob_mode_takes_the_likelier_word_on_the_tiny_model(tiny_causal):
    model = load_model({"backend": "hf", "model": str(tiny_causal)}, threads=1)
    items = [item("i1", 3, INPUT), item("i2", 2)]
    records = judge(model, items, mode="logprob")
    # the same requests to a freshly loaded model give exactly the same records (a second
    # call to the same model may reuse stored keys and values: equal to ~1e-6 only)
    assert records == judge(load_model({"backend": "hf", "model": str(tiny_causal)}, threads=1), items,
                            mode="logprob")
    assert len(records) == 5
    for item_data in items:
        own = [r for r in records if r["instruction_id"] == item_data["instruction_id"]]
        questions = [q["question"] for q in item_data["requirements"]]
        for r in own:
            earlier = [prev["answer"] for prev in own[: r["question_index"]]]
            chat = conversation(RESPONSE, item_data["input"], questions, earlier)
            ((yes, no),) = model.score_batch([(chat, ["YES", "NO"])])
            assert r["logprob_yes"] == pytest.approx(yes, abs=1e-4)
            assert r["logprob_no"] == pytest.approx(no, abs=1e-4)
            assert r["answer"] == ("YES" if yes > no else "NO")
            assert r["raw"] == ""
    assert invalid_count(records) == 0
