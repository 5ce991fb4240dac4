"""Known-answer controls of the DRFR judge: the selecting rule, the seeded sample, the records,
the drfr_judge entry point (real items and controls in one pass) and its code hash."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from isqaflow.codehash import dependencies
from isqaflow.data.schema import Instruction
from isqaflow.drfr import judge_responses
from isqaflow.drfr.controls import (
    CHANCE,
    certain_no,
    control_items,
    control_records,
    other_response,
    sample_instructions,
)
from isqaflow.drfr.judge import CONTENT_FREE_RESPONSE, judge_items
from isqaflow.models.base import Generation, LanguageModel
from isqaflow.report.validity import read_control_records, validity_summary

REPO = Path(__file__).resolve().parents[3]


# ------------------------------------------------------------------- the selecting rule
@pytest.mark.parametrize(
    ("question", "labels"),
    [
        ("Does the generated text confirm attendance at the rescheduled meeting?", ["Content"]),
        ("Does the generated text mention the order number #4471?", ["Content"]),
        ("Is the generated text a poem about autumn rain?", ["Content"]),
        (
            "Does the generated text end with a question inviting the child to look at the sky?",
            ["Content", "Format"],
        ),
        ("Does the generated text mention the harbour at least once?", ["Content"]),
        (
            'Does the generated text correctly explain the meaning of the word "ephemeral"?',
            ["Content"],
        ),
        # words that only contain a listed word are not it: "notebook", "allow", "understand"
        (
            "Does the generated text list a notebook and explain how to allow for understanding?",
            ["Content"],
        ),
    ],
)
def test_certain_no_selects_content_the_text_must_state(question, labels):
    assert certain_no({"question": question, "labels": labels})


@pytest.mark.parametrize(
    ("question", "labels"),
    [
        # not Content-labelled
        ("Is the generated text a reply to the email in the given input?", ["Format"]),
        ("Is the generated text polite in tone?", ["Style"]),
        ("Does the generated text have exactly four lines?", ["Number", "Format"]),
        # prohibitions and negative constraints hold for an empty text
        ('Does the generated text avoid the word "leaves"?', ["Content"]),
        ("Does the generated text not mention the price?", ["Content"]),
        ("The generated text doesn't reveal the ending, does it?", ["Content"]),
        ("Is the summary written without personal opinions?", ["Content"]),
        ("Does the text use no technical terms?", ["Content"]),
        ("Does the response never recommend a brand?", ["Content"]),
        ("Does the list exclude meat dishes?", ["Content"]),
        ("Is the answer free of spoilers?", ["Content"]),
        # restrictions, universal quantifiers, upper bounds
        ("Does the generated text contain only the JSON?", ["Content", "Format"]),
        ("Can each snack in the generated text be prepared in under ten minutes?", ["Content"]),
        ("Are all facts in the generated text supported by the input?", ["Content"]),
        ("Does every paragraph mention a date?", ["Content"]),
        ("Does the text mention at most two products?", ["Content", "Number"]),
        ("Does the generated text keep the meaning of the original sentence?", ["Content"]),
        # qualities of whatever is there
        ("Is the information in the generated text accurate?", ["Content"]),
        ("Is the generated text consistent with the input?", ["Content"]),
        ("Is the content appropriate for children?", ["Content"]),
        ("AVOID: is the text on topic?", ["Content"]),  # any case
    ],
)
def test_certain_no_leaves_out_what_an_empty_text_can_satisfy(question, labels):
    assert not certain_no({"question": question, "labels": labels})


# ------------------------------------------------------------------- sample and items
def instruction(k: int, questions=None) -> Instruction:
    questions = questions or [
        (f"Is the generated text polite (t{k})?", ["Style"]),
        (f"Does the generated text mention the topic t{k}?", ["Content"]),
        (f"Does the generated text avoid jargon (t{k})?", ["Content"]),
        (f"Does the generated text explain the topic t{k}?", ["Content", "Format"]),
        (f"Is the tone of the generated text warm (t{k})?", ["Style"]),
    ]
    return Instruction(
        id=f"t{k}",
        subset="Easy" if k % 2 else "Hard",
        category="Writing",
        instruction=f"Write about t{k}.",
        input="" if k % 3 else f"Notes on t{k}.",
        requirements=[{"question": q, "labels": labels} for q, labels in questions],
    )


INSTRUCTIONS = [instruction(k) for k in range(1, 9)] + [
    instruction(
        9,
        [
            ("Does the generated text avoid slang (t9)?", ["Content"]),
            ("Is it short (t9)?", ["Style"]),
        ],
    )
]
RESPONSES = [
    {"instruction_id": i.id, "model": model, "response": f"A text on the topic {i.id} by {model}."}
    for i in INSTRUCTIONS
    for model in ("alpha", "beta")
]


def test_sample_is_seeded_stable_and_only_from_instructions_with_a_certain_no_question():
    sample = sample_instructions(INSTRUCTIONS, 3, seed=7)
    assert len(sample) == 3
    assert "t9" not in {i.id for i in sample}  # nothing certain to ask there
    assert [i.id for i in sample] == [i.id for i in sample_instructions(INSTRUCTIONS, 3, seed=7)]
    # adding an instruction changes the sample by that instruction at most
    grown = sample_instructions([*INSTRUCTIONS, instruction(10)], 3, seed=7)
    assert len(grown) == 3 and {i.id for i in grown} - {"t10"} <= {i.id for i in sample}
    assert [i.id for i in sample_instructions(INSTRUCTIONS, None, seed=7)] == [
        f"t{k}" for k in range(1, 9)
    ]
    seeds = {tuple(i.id for i in sample_instructions(INSTRUCTIONS, 3, seed=s)) for s in range(10)}
    assert len(seeds) > 1  # the seed matters


def test_other_response_is_a_seeded_pick_from_another_instruction():
    picks = {other_response("t1", RESPONSES, seed=s)["instruction_id"] for s in range(30)}
    assert "t1" not in picks and len(picks) > 3
    assert other_response("t1", RESPONSES, seed=3) == other_response(
        "t1", list(reversed(RESPONSES)), seed=3
    )
    empty_elsewhere = [r for r in RESPONSES if r["instruction_id"] == "t1"] + [
        {"instruction_id": "t2", "model": "alpha", "response": "  "}
    ]
    with pytest.raises(
        ValueError, match="other_response for instruction 't1': no non-empty response"
    ):
        other_response("t1", empty_elsewhere, seed=0)


def test_control_items_ask_the_questions_up_to_the_last_certain_no_one_and_score_those():
    items = control_items(INSTRUCTIONS, RESPONSES, ["empty_response", "other_response"], 2, seed=7)
    assert [item["control"] for item in items] == ["empty_response", "other_response"] * 2
    sampled = [i.id for i in sample_instructions(INSTRUCTIONS, 2, seed=7)]
    assert [item["instruction_id"] for item in items[::2]] == sampled
    for item in items:
        source = next(i for i in INSTRUCTIONS if i.id == item["instruction_id"])
        # the conversation a real response gets, cut after the last scored question
        assert [r["question"] for r in item["requirements"]] == [
            r.question for r in source.requirements[:4]
        ]
        assert item["scored"] == [1, 3]  # Content and positive; "avoid" and Style are left out
        assert item["input"] == source.input and item["model"] == item["control"]
    empty, other = items[0], items[1]
    assert empty["response"] == "" and empty["source"] is None
    assert other["source"]["instruction_id"] != other["instruction_id"]
    assert (
        other["response"] == f"A text on the topic {other['source']['instruction_id']} by "
        f"{other['source']['responder']}."
    )
    assert (
        control_items(INSTRUCTIONS, RESPONSES, ["empty_response", "other_response"], 2, seed=7)
        == items
    )
    with pytest.raises(ValueError, match="unknown DRFR controls"):
        control_items(INSTRUCTIONS, RESPONSES, ["self"], 2, seed=7)


# ------------------------------------------------------------------- records
class TopicJudge(LanguageModel):
    """A fake judge that reads: YES is likelier exactly when the text names the question's topic.

    Questions and responses carry a topic tag "t<k>"; the empty text, "N/A" and a
    response to another instruction do not carry the question's tag.
    """

    backend = "fake"

    def __init__(self, always_yes: bool = False):
        self.always_yes = always_yes
        self.calls: list[list] = []

    def identity(self) -> dict:
        return {"backend": self.backend}

    def generate(self, requests, params):
        raise AssertionError("logprob mode only")

    def score_batch(self, items):
        self.calls.append([context for context, _ in items])
        out = []
        for context, candidates in items:
            assert list(candidates) == ["YES", "NO"]
            text = (
                context[0]["content"].split("Generated Text:\n", 1)[1].split("\n\nQuestion:", 1)[0]
            )
            topic = re.search(r"\bt\d+\b", context[-1]["content"]).group(0)
            yes = self.always_yes or re.search(rf"\b{topic}\b", text) is not None
            out.append([-0.2, -2.0] if yes else [-2.0, -0.2])
        return out


def test_control_records_follow_the_contract_for_both_rules():
    items = control_items(INSTRUCTIONS, RESPONSES, ["empty_response", "other_response"], 2, seed=7)
    judged = judge_items(TopicJudge(), items, mode="logprob")
    records = control_records("local", "infobench", items, judged, mode="logprob")
    assert len(records) == 2 * 2 * 2 * 2  # instructions x controls x scored questions x rules
    assert [(r["control"], r["rule"]) for r in records[:4]] == [
        ("empty_response", "raw"),
        ("empty_response", "calibrated"),
    ] * 2
    first = records[0]
    assert {
        k: first[k]
        for k in (
            "instrument",
            "name",
            "scope",
            "expected",
            "outcome",
            "correct",
            "chance",
            "baseline_correct",
        )
    } == {
        "instrument": "DRFR judge",
        "name": "local",
        "scope": "infobench",
        "expected": "NO",
        "outcome": "NO",
        "correct": True,
        "chance": CHANCE,
        "baseline_correct": None,
    }
    assert first["item"] == f"{items[0]['instruction_id']}#1"
    assert first["detail"]["question"] == items[0]["requirements"][1]["question"]
    assert all(r["correct"] is True for r in records)  # the reading judge is right on every control
    assert {
        r["detail"]["source"]["instruction_id"] != r["item"].split("#")[0]
        for r in records
        if r["control"] == "other_response"
    } == {True}


def test_yes_always_judge_fails_every_control_and_invalid_replies_are_null():
    items = control_items(INSTRUCTIONS, RESPONSES, ["empty_response"], 2, seed=7)
    judged = judge_items(TopicJudge(always_yes=True), items, mode="logprob")
    records = control_records("local", "infobench", items, judged, mode="logprob")
    assert {(r["rule"], r["outcome"], r["correct"]) for r in records} == {
        ("raw", "YES", False),
        # a constant judge gives the content-free response the same log-odds: calibrated,
        # the difference is exactly 0, which is not above the threshold (an expected-NO
        # control cannot tell this judge from a good one; see the controls' docstring)
        ("calibrated", "NO", True),
    }

    class Mumbler(LanguageModel):
        backend = "fake"

        def identity(self):
            return {"backend": self.backend}

        def generate(self, requests, params):
            return [Generation(text="Hmm, hard to say.") for _ in requests]

    judged = judge_items(Mumbler(), items, mode="text")
    records = control_records("gpt4", "infobench", items, judged, mode="text")
    assert {(r["rule"], r["outcome"], r["correct"]) for r in records} == {("raw", "INVALID", None)}
    assert len(records) == 2 * 2  # text mode: raw only; nothing dropped
    assert records[0]["detail"]["raw"] == "Hmm, hard to say."


# ------------------------------------------------------------------- the drfr_judge entry point
def write_inputs(tmp_path: Path) -> tuple[Path, list[Path]]:
    instructions = tmp_path / "instructions.jsonl"
    instructions.write_text("".join(json.dumps(i.model_dump()) + "\n" for i in INSTRUCTIONS))
    paths = []
    for model in ("alpha", "beta"):
        path = tmp_path / f"{model}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in RESPONSES if r["model"] == model))
        paths.append(path)
    return instructions, paths


def run(tmp_path: Path, monkeypatch, model: LanguageModel, **options):
    loads = []

    def load_model(spec, **kwargs):
        loads.append(kwargs["name"])
        return model

    monkeypatch.setattr("isqaflow.models.registry.load_model", load_model)
    instructions, responses = write_inputs(tmp_path)
    settings = {
        "mode": "logprob",
        "rule": "raw",
        "controls": ["empty_response", "other_response"],
        "control_instructions": 3,
        "seed": 11,
        **options,
    }
    n = judge_responses.run_judge(
        instructions,
        responses,
        tmp_path / "judgments.jsonl",
        tmp_path / "controls.jsonl",
        judge_spec={"backend": "fake"},
        judge_name="local",
        dataset="infobench",
        generation=None,
        cache_path=tmp_path / "calls.sqlite",
        **settings,
    )
    judgments = [
        json.loads(line) for line in (tmp_path / "judgments.jsonl").read_text().splitlines()
    ]
    return n, judgments, read_control_records([tmp_path / "controls.jsonl"]), loads


def test_run_judge_judges_responses_and_controls_in_one_pass(tmp_path, monkeypatch):
    model = TopicJudge()
    n, judgments, controls, loads = run(tmp_path, monkeypatch, model)
    assert loads == ["local"]
    assert n == len(judgments) == sum(len(i.requirements) for i in INSTRUCTIONS) * 2
    assert {r["judge"] for r in judgments} == {"local"} and {r["model"] for r in judgments} == {
        "alpha",
        "beta",
    }
    assert all(r["answer"] == r["answer_raw"] and r["rule"] == "raw" for r in judgments)
    assert len(controls) == 3 * 2 * 2 * 2
    summary = validity_summary(controls)
    # the empty response cannot test the calibrated rule: shown, counted neither way
    assert {
        (g["control"], g["rule"], g["n"], g["correct"], g["no_evidence"], g["verdict"])
        for g in summary["groups"]
    } == {
        (c, r, 6, 1.0, None, "cannot test this rule")
        if (c, r) == ("empty_response", "calibrated")
        else (c, r, 6, 1.0, False, "separates")
        for c in ("empty_response", "other_response")
        for r in ("raw", "calibrated")
    }
    # one batched call per turn holds responses, controls and content-free conversations,
    # one content-free conversation per distinct (input, questions)
    turn_one = model.calls[0]
    assert len(turn_one) == len(RESPONSES) + 3 * 2 + len(INSTRUCTIONS)
    assert sum(CONTENT_FREE_RESPONSE in chat[0]["content"] for chat in turn_one) == len(
        INSTRUCTIONS
    )
    assert len(model.calls) == max(len(i.requirements) for i in INSTRUCTIONS)
    # the last turn comes after every control's last scored question; the controls read
    # the content-free conversations of their instructions
    shown = [
        chat[0]["content"].split("Generated Text:\n", 1)[1].split("\n\nQuestion:", 1)[0]
        for chat in model.calls[4]
    ]
    assert len(shown) == 2 * 8 + 8  # t1..t8 have a fifth question, t9 has two
    assert shown.count(CONTENT_FREE_RESPONSE) == 8 and "" not in shown
    assert all(
        text.startswith("A text on the topic ") for text in shown if text != CONTENT_FREE_RESPONSE
    )
    # the same seed gives the same controls
    (tmp_path / "again").mkdir()
    assert run(tmp_path / "again", monkeypatch, TopicJudge())[2] == controls


def test_run_judge_refuses_a_calibrated_text_judge_before_loading(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="needs mode 'logprob'"):
        run(tmp_path, monkeypatch, TopicJudge(), mode="text", rule="calibrated")
    assert not (tmp_path / "judgments.jsonl").exists()


def test_run_judge_names_the_file_of_a_bad_response_row(tmp_path, monkeypatch):
    instructions, responses = write_inputs(tmp_path)
    responses[1].write_text(
        json.dumps({"instruction_id": "t99", "model": "beta", "response": "x"}) + "\n"
    )
    with pytest.raises(
        ValueError, match=r"beta\.jsonl, line 1, field 'instruction_id': unknown instruction 't99'"
    ):
        judge_responses.run_judge(
            instructions,
            responses,
            tmp_path / "j.jsonl",
            tmp_path / "c.jsonl",
            judge_spec={},
            judge_name="local",
            dataset="infobench",
            mode="logprob",
            generation=None,
            cache_path=None,
        )


# ------------------------------------------------------------------- code hashes
def rule_code_modules(rule: str) -> list[str]:
    text = (REPO / "rules/drfr/drfr.smk").read_text()
    body = text.split(f"rule {rule}:", 1)[1].split("\nrule ", 1)[0]
    return re.findall(r'"(isqaflow\.[\w.]+)"', re.search(r"code=code\(([^)]*)\)", body).group(1))


def script_module(rule: str) -> str:
    text = (REPO / "rules/drfr/drfr.smk").read_text()
    body = text.split(f"rule {rule}:", 1)[1].split("\nrule ", 1)[0]
    script = re.search(r'"(?:\.\./)+(scripts/[\w.]+)"', body).group(1)
    return re.search(r"from (isqaflow\.[\w.]+) import", (REPO / script).read_text()).group(1)


@pytest.mark.parametrize("rule", ["drfr_responses", "drfr_judge", "drfr_summaries", "drfr_tables"])
def test_each_drfr_rule_hashes_the_module_its_script_runs(rule):
    assert script_module(rule) in rule_code_modules(rule)


def test_editing_the_judge_does_not_rerun_the_responses_and_back():
    responses = set(dependencies("isqaflow.drfr.responses"))
    judge = set(dependencies("isqaflow.drfr.judge_responses"))
    assert "isqaflow.drfr.judge" not in responses and "isqaflow.drfr.controls" not in responses
    assert "isqaflow.drfr.responses" not in judge
    assert {"isqaflow.drfr.judge", "isqaflow.drfr.controls"} <= judge
    tables = set(dependencies("isqaflow.drfr.tables"))
    assert not {"isqaflow.drfr.judge", "isqaflow.drfr.summaries", "isqaflow.drfr.controls"} & tables
