"""Tests for InFoBench's multi-turn YES/NO judge: turns, reply parsing, batching, logprob mode."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import pytest

from isqaflow.drfr.aggregate import drfr_summary
from isqaflow.drfr.judge import (
    CONTENT_FREE_RESPONSE,
    RULES,
    calibrated_log_odds,
    conversation,
    first_turn,
    invalid_count,
    judge,
    judge_items,
    parse_answer,
    verdict,
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
        ("i1", 0),
        ("i2", 0),
        ("i2", 1),
        ("i2", 2),
        ("i3", 0),
        ("i3", 1),
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
        return [
            [-0.5, -2.0] if RESPONSE in context[0]["content"] else [-3.0, -0.25]
            for context, _ in items
        ]


def test_logprob_mode_keeps_the_chosen_word_as_the_assistant_turn():
    sea, land = item("sea", 2), {**item("land", 3), "response": "Mountains stand still."}
    model = ScriptedScorer()
    records = judge(model, [sea, land], mode="logprob")
    assert [(r["instruction_id"], r["answer"], r["raw"]) for r in records] == [
        ("sea", "YES", ""),
        ("sea", "YES", ""),
        ("land", "NO", ""),
        ("land", "NO", ""),
        ("land", "NO", ""),
    ]
    assert [(r["logprob_yes"], r["logprob_no"]) for r in records[:3]] == [
        (-0.5, -2.0),
        (-0.5, -2.0),
        (-3.0, -0.25),
    ]
    # each turn: the two responses, then one content-free conversation: "sea" asks a
    # prefix of "land"'s questions with the same (empty) input, so it reads land's
    assert [len(call) for call in model.calls] == [3, 3, 2]
    assert [call[-1] for call in model.calls] == [
        conversation(CONTENT_FREE_RESPONSE, "", QUESTIONS, ["NO", "NO"][:turn]) for turn in range(3)
    ]
    assert model.calls[2][0] == conversation("Mountains stand still.", "", QUESTIONS, ["NO", "NO"])
    assert model.calls[1][0][1] == {"role": "assistant", "content": "YES"}


def test_logprob_mode_takes_the_likelier_word_on_the_tiny_model(tiny_causal):
    model = load_model({"backend": "hf", "model": str(tiny_causal)}, threads=1)
    items = [item("i1", 3, INPUT), item("i2", 2)]
    records = judge(model, items, mode="logprob")
    # the same requests to a freshly loaded model give exactly the same records (a second
    # call to the same model may reuse stored keys and values: equal to ~1e-6 only)
    assert records == judge(
        load_model({"backend": "hf", "model": str(tiny_causal)}, threads=1), items, mode="logprob"
    )
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


# ------------------------------------------------------------------- contextual calibration
def test_calibrated_log_odds_subtract_the_content_free_log_odds():
    # response: log-odds -0.5 - (-1.0) = 0.5; content-free: -0.4 - (-1.4) = 1.0
    assert calibrated_log_odds(-0.5, -1.0, -0.4, -1.4) == pytest.approx(-0.5)
    assert calibrated_log_odds(-0.1, -2.6, -0.4, -1.4) == pytest.approx(1.5)
    # a response judged exactly like the content-free one carries no evidence either way
    assert calibrated_log_odds(-0.7, -0.9, -0.7, -0.9) == 0.0
    # adding a constant to both of one conversation's log-probabilities changes nothing
    assert calibrated_log_odds(-0.5 - 3, -1.0 - 3, -0.4, -1.4) == pytest.approx(-0.5)


def test_verdict_threshold_is_zero_and_strict():
    assert verdict(1e-9) == "YES"
    assert verdict(0.0) == "NO"
    assert verdict(-2.0) == "NO"


GOOD = "A four-line poem about the sea, written for children."


class YesBiasedScorer(ScriptedJudge):
    """A judge that leans to YES: YES is likelier for any text, most of all for GOOD.

    Log-odds (YES minus NO): content-free "N/A" +1.0, RESPONSE +0.5, GOOD +2.5; an
    empty response +0.8.  Raw says YES to all of them; calibrated only to GOOD.
    """

    LOGPROBS = {
        CONTENT_FREE_RESPONSE: (-0.4, -1.4),
        RESPONSE: (-0.5, -1.0),
        GOOD: (-0.1, -2.6),
        "": (-0.5, -1.3),
    }

    def score_batch(self, items):
        self.calls.append([context for context, _ in items])
        out = []
        for context, _ in items:
            shown = (
                context[0]["content"].split("Generated Text:\n", 1)[1].split("\n\nQuestion:", 1)[0]
            )
            out.append(list(self.LOGPROBS[shown]))
        return out


def test_calibrated_rule_answers_from_the_content_free_log_odds():
    items = [item("i1", 2), {**item("i1", 2), "model": "responder-y", "response": GOOD}]
    model = YesBiasedScorer()
    records = judge(model, items, mode="logprob", rule="calibrated")
    assert [
        (r["model"], r["answer_raw"], r["answer_calibrated"], r["answer"]) for r in records
    ] == [
        ("responder-x", "YES", "NO", "NO"),
        ("responder-x", "YES", "NO", "NO"),
        ("responder-y", "YES", "YES", "YES"),
        ("responder-y", "YES", "YES", "YES"),
    ]
    first = records[0]
    assert first["rule"] == "calibrated"
    assert (first["logprob_yes"], first["logprob_no"]) == (-0.5, -1.0)
    assert first["log_odds"] == pytest.approx(0.5)
    assert (first["content_free_logprob_yes"], first["content_free_logprob_no"]) == (-0.4, -1.4)
    assert first["content_free_log_odds"] == pytest.approx(1.0)
    assert first["calibrated_log_odds"] == pytest.approx(-0.5)
    assert records[2]["calibrated_log_odds"] == pytest.approx(1.5)
    # one content-free conversation for the instruction, whichever responders are judged;
    # its earlier turns are its own raw answers, as the responses' are theirs
    free = [
        [chat for chat in call if CONTENT_FREE_RESPONSE in chat[0]["content"]]
        for call in model.calls
    ]
    assert free == [
        [conversation(CONTENT_FREE_RESPONSE, "", QUESTIONS[:2], [])],
        [conversation(CONTENT_FREE_RESPONSE, "", QUESTIONS[:2], ["YES"])],
    ]
    assert model.calls[1][0] == conversation(RESPONSE, "", QUESTIONS[:2], ["YES"])


def test_raw_rule_stores_the_calibrated_verdict_from_the_same_calls():
    items = [item("i1", 2), {**item("i1", 2), "model": "responder-y", "response": GOOD}]
    raw_model, calibrated_model = YesBiasedScorer(), YesBiasedScorer()
    raw = judge(raw_model, items, mode="logprob", rule="raw")
    calibrated = judge(calibrated_model, items, mode="logprob", rule="calibrated")
    assert raw_model.calls == calibrated_model.calls  # the rule changes no model call
    assert [r["answer"] for r in raw] == ["YES"] * 4
    assert [r["answer_calibrated"] for r in raw] == [r["answer"] for r in calibrated]
    drop = {"rule", "answer"}
    assert [{k: v for k, v in r.items() if k not in drop} for r in raw] == [
        {k: v for k, v in r.items() if k not in drop} for r in calibrated
    ]


def test_content_free_conversation_is_keyed_by_input_and_questions():
    items = [item("i1", 2, INPUT), {**item("i1", 2, INPUT), "model": "responder-y"}, item("i2", 2)]
    model = YesBiasedScorer()
    per_item = judge_items(model, items, mode="logprob")
    assert [len(records) for records in per_item] == [2, 2, 2]
    first_turn_free = [
        chat for chat in model.calls[0] if CONTENT_FREE_RESPONSE in chat[0]["content"]
    ]
    assert sorted(first_turn_free, key=str) == sorted(
        [
            conversation(CONTENT_FREE_RESPONSE, INPUT, QUESTIONS[:2], []),
            conversation(CONTENT_FREE_RESPONSE, "", QUESTIONS[:2], []),
        ],
        key=str,
    )


def test_text_mode_has_no_calibrated_verdict_and_refuses_the_calibrated_rule():
    records = judge(ScriptedJudge(reply="No."), [item("i1", 2)], mode="text")
    assert [(r["rule"], r["answer"], r["answer_raw"]) for r in records] == [("raw", "NO", "NO")] * 2
    for key in ("log_odds", "content_free_log_odds", "calibrated_log_odds", "answer_calibrated"):
        assert all(r[key] is None for r in records)
    model = ScriptedJudge()
    with pytest.raises(ValueError, match="rule 'calibrated' .* needs mode 'logprob'"):
        judge(model, [item("i1", 1)], mode="text", rule="calibrated")
    assert model.calls == []  # refused before any call
    with pytest.raises(ValueError, match="rule must be one of"):
        judge(model, [item("i1", 1)], mode="logprob", rule="balanced")


def test_an_item_asking_a_prefix_of_the_questions_reads_the_longer_content_free_conversation():
    short, full = item("i1", 2), {**item("i1", 3), "model": "responder-y", "response": GOOD}
    other_input = {**item("i2", 2, INPUT), "response": ""}
    model = YesBiasedScorer()
    per_item = judge_items(model, [short, full, other_input], mode="logprob", rule="calibrated")
    free = [
        [chat for chat in call if CONTENT_FREE_RESPONSE in chat[0]["content"]]
        for call in model.calls
    ]
    assert [len(chats) for chats in free] == [
        2,
        2,
        1,
    ]  # (no input, 3 questions) and (INPUT, 2 questions)
    assert free[0][0] == conversation(CONTENT_FREE_RESPONSE, "", QUESTIONS, [])
    assert [r["content_free_log_odds"] for r in per_item[0]] == pytest.approx([1.0, 1.0])
    assert [r["answer"] for r in per_item[2]] == ["NO", "NO"]  # empty: +0.8 against +1.0
