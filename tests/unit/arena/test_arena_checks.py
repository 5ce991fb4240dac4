"""Tests for the arena judge's checks: known-answer controls and the human-labelled pairs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from isqaflow.arena.judging.controls import (
    JudgeChecksJob,
    CONTROLS,
    build_controls,
    control_chance,
    control_records,
    run_judge_checks,
)
from isqaflow.arena.judging.judge import judge_pairs
from isqaflow.arena.judging.settings import ArenaJudge
from isqaflow.arena.no_answer import NO_ANSWER
from isqaflow.data.schema import RagQuery
from isqaflow.models.base import Generation, LanguageModel

REPO = Path(__file__).resolve().parents[3]
HUMAN_CSV = REPO / "data/embedded/lfrqa/human_pairwise.csv"
DOMAINS = ("fiqa", "science", "technology")
CONTRACT_KEYS = {
    "instrument",
    "name",
    "scope",
    "control",
    "rule",
    "item",
    "expected",
    "outcome",
    "correct",
    "chance",
    "baseline_correct",
    "detail",
}


def make_queries(per_domain: int = 6) -> list[RagQuery]:
    return [
        RagQuery(
            id=f"q{i}",
            domain=d,
            question=f"{d} question {i}?",
            reference=f"The {d} answer {i}.\nA second claim about {d} {i}.",
            reference_with_citation=f"The {d} answer {i} [1].",
            citations=[[1]],
            gold_doc_ids=[f"{d}-{i}"],
        )
        for d in DOMAINS
        for i in range(per_domain)
    ]


REFERENCES = {q.question: q.reference.replace("\n", " ") for q in make_queries()}


# ------------------------------------------------------------------- building
def test_controls_are_built_deterministically():
    queries = make_queries()
    first = build_controls(queries, CONTROLS, per_domain=2, seed=7)
    assert first == build_controls(list(reversed(queries)), CONTROLS, per_domain=2, seed=7)
    assert first != build_controls(queries, CONTROLS, per_domain=2, seed=8)
    # a control's items do not depend on which other controls run
    alone = build_controls(queries, ["no_answer"], per_domain=2, seed=7)
    assert alone == [p for p in first if p["control"] == "no_answer"]
    assert len(first) == len(CONTROLS) * len(DOMAINS) * 2
    assert len({p["pair_id"] for p in first}) == len(first)


def test_control_pairs_hold_what_they_claim():
    queries = {(q.domain, q.id): q for q in make_queries()}
    pairs = build_controls(list(queries.values()), CONTROLS, per_domain=6, seed=1)
    for pair in pairs:
        query = queries[(pair["domain"], pair["qid"])]
        reference = query.reference.replace("\n", " ")
        side, other = pair["reference_side"], "b" if pair["reference_side"] == "a" else "a"
        assert pair["query"] == query.question and pair["kind"] == "control"
        assert pair[f"answer_{side}"] == reference and pair[f"system_{side}"] == "reference"
        if pair["control"] == "other_reference":
            other_query = queries[(pair["domain"], pair["other_qid"])]
            assert pair["other_qid"] != pair["qid"]
            assert pair[f"answer_{other}"] == other_query.reference.replace("\n", " ")
            assert pair["expected"] == side
        elif pair["control"] == "no_answer":
            assert pair[f"answer_{other}"] == NO_ANSWER and pair["expected"] == side
        else:
            assert pair[f"answer_{other}"] == reference and pair["expected"] == "tie"
    # the reference is shown on both sides, seeded
    sides = [p["reference_side"] for p in pairs]
    assert 0.3 < sides.count("a") / len(sides) < 0.7


def test_controls_validate_their_settings_and_skip_a_single_query_domain(caplog):
    with pytest.raises(ValueError, match="unknown arena control"):
        build_controls(make_queries(), ["other_abstract"], per_domain=1, seed=0)
    lonely = [q for q in make_queries(per_domain=1)]
    pairs = build_controls(lonely, CONTROLS, per_domain=3, seed=0)
    assert {p["control"] for p in pairs} == {"no_answer", "self"}
    assert "single query" in caplog.text
    assert build_controls(make_queries(), CONTROLS, per_domain=0, seed=0) == []


def test_chance_levels():
    assert control_chance("other_reference", "both") == control_chance("no_answer", "random") == 0.5
    assert control_chance("self", "both") == 1.0
    assert control_chance("self", "random") == pytest.approx(1 / 3)


# ------------------------------------------------------------------- fake judges
class TextJudge(LanguageModel):
    backend = "fake"

    def __init__(self, reply):
        self.reply = reply

    def identity(self):
        return {"backend": self.backend}

    def generate(self, requests, params):
        return [Generation(text=self.reply(request)) for request in requests]


class LogprobJudge(LanguageModel):
    backend = "fake"

    def __init__(self, logprobs):
        self.logprobs = logprobs

    def identity(self):
        return {"backend": self.backend}

    def generate(self, requests, params):
        raise AssertionError("logprob mode must not generate")

    def score_batch(self, items):
        return [list(self.logprobs(request)) for request, _ in items]


ANSWER_TAGS = re.compile(
    r"<answer 1>\n(.*?)\n</answer 1>\n\n<answer 2>\n(.*?)\n</answer 2>", re.DOTALL
)


def shown_answers(request) -> tuple[str, str]:
    """(answer 1, answer 2) of the pair a request asks about (its last user turn)."""
    return ANSWER_TAGS.search(request[-1]["content"]).groups()


def query_of(request) -> str:
    return request[-1]["content"].split("<query>\n", 1)[1].split("\n</query>", 1)[0]


def perfect_label(request) -> str:
    """Knows each query's reference: prefers it, ties identical answers."""
    first, second = shown_answers(request)
    reference = REFERENCES[query_of(request)]
    if first == second:
        return "0"
    return "1" if first == reference else "2" if second == reference else "0"


def perfect_logprobs(request):
    label = perfect_label(request)
    return {"1": (-0.1, -3.0, -4.0), "2": (-3.0, -0.1, -4.0), "0": (-2.0, -2.0, -0.2)}[label]


def score(pairs, model, mode, orders, rule="raw"):
    judged = judge_pairs(model, pairs, mode=mode, orders=orders, rule=rule)
    return control_records(judged, "fake", "fiqa+science+technology", orders)


def share_correct(records, control, rule):
    chosen = [r for r in records if r["control"] == control and r["rule"] == rule]
    assert chosen
    return sum(r["correct"] is True for r in chosen) / len(chosen)


@pytest.mark.parametrize(
    ("mode", "orders", "rules"),
    [
        ("text", "both", ["raw"]),
        ("text", "random", ["raw"]),
        ("logprob", "both", ["raw", "calibrated"]),
    ],
)
def test_a_perfect_judge_gets_every_control_right(mode, orders, rules):
    pairs = build_controls(make_queries(), CONTROLS, per_domain=4, seed=3)
    model = (
        TextJudge(lambda r: f"<rating>{perfect_label(r)}</rating>")
        if mode == "text"
        else LogprobJudge(perfect_logprobs)
    )
    records = score(pairs, model, mode, orders, rule=rules[-1])
    assert {r["rule"] for r in records} == set(rules)
    assert len(records) == len(pairs) * len(rules)
    assert all(r["correct"] is True for r in records)


def test_a_judge_that_always_picks_position_1_is_at_chance_or_below():
    pairs = build_controls(make_queries(), CONTROLS, per_domain=6, seed=3)
    # both orders: its verdict is always a tie, so it never makes a reference win
    for mode, model in (
        ("text", TextJudge(lambda r: "<rating>1</rating>")),
        ("logprob", LogprobJudge(lambda r: (-0.2, -2.5, -3.0))),
    ):
        records = score(
            pairs, model, mode, "both", rule="calibrated" if mode == "logprob" else "raw"
        )
        for rule in {r["rule"] for r in records}:
            for control in ("other_reference", "no_answer"):
                assert share_correct(records, control, rule) == 0.0
            assert share_correct(records, "self", rule) == 1.0  # chance 1.0 with both orders
    # one random order: right exactly when the reference happens to be shown first
    records = score(pairs, TextJudge(lambda r: "<rating>1</rating>"), "text", "random")
    for control in ("other_reference", "no_answer"):
        chosen = [r for r in records if r["control"] == control]
        shown_first = [
            (r["detail"]["reference_side"] == "a") == (r["detail"]["order"] == "ab") for r in chosen
        ]
        assert [r["correct"] for r in chosen] == shown_first
        assert 0.25 <= sum(shown_first) / len(chosen) <= 0.75
        assert all(r["chance"] == 0.5 for r in chosen)


def test_unparseable_control_replies_are_counted_not_dropped():
    pairs = build_controls(make_queries(), CONTROLS, per_domain=1, seed=0)
    records = score(pairs, TextJudge(lambda r: "Answer 1 is better, clearly."), "text", "both")
    assert len(records) == len(pairs)
    assert all(r["correct"] is None and r["outcome"] == "invalid" for r in records)
    assert all(r["detail"]["raw_ab"] == "Answer 1 is better, clearly." for r in records)


def test_records_follow_the_shared_contract():
    pairs = build_controls(make_queries(), ["no_answer"], per_domain=1, seed=0)
    records = score(pairs, LogprobJudge(perfect_logprobs), "logprob", "both", rule="calibrated")
    for record in records:
        assert set(record) == CONTRACT_KEYS
        assert record["instrument"] == "arena judge" and record["name"] == "fake"
        assert record["item"] == f"{record['detail']['domain']}:{record['detail']['qid']}"
        assert record["baseline_correct"] is None and record["chance"] == 0.5
        assert record["expected"] in ("a", "b") and record["outcome"] == record["expected"]
    calibrated = [r for r in records if r["rule"] == "calibrated"]
    assert len(calibrated) == len(pairs)
    assert all(abs(r["detail"]["margin"]) == pytest.approx(2.9) for r in calibrated)
    assert all(
        {"logprobs_ab", "logprobs_ba", "margin_ab", "margin_ba"} <= set(r["detail"])
        for r in calibrated
    )


# ------------------------------------------------------------------- the job
def write_queries(tmp_path) -> list[Path]:
    paths = []
    for domain in DOMAINS:
        path = tmp_path / f"{domain}.jsonl"
        path.write_text(
            "".join(q.model_dump_json() + "\n" for q in make_queries() if q.domain == domain)
        )
        paths.append(path)
    return paths


class CountingLoads:
    def __init__(self, model):
        self.model, self.loads = model, 0

    def __call__(self, *args, **kwargs):
        self.loads += 1
        return self.model


def checks_job(judge_name: str, controls, per_domain: int) -> JudgeChecksJob:
    judge = ArenaJudge(
        name=judge_name,
        spec={},
        mode="text",
        orders="both",
        seed=0,
        generation=None,
        rule="raw",
        tie_band=0.0,
    )
    return JudgeChecksJob(judge, controls=tuple(controls), per_domain=per_domain)


def test_one_job_judges_human_pairs_and_controls_with_one_model_load(tmp_path, monkeypatch):
    def reply(request):
        if query_of(request) in REFERENCES:
            return f"<rating>{perfect_label(request)}</rating>"
        return "<rating>1</rating>"  # a human-labelled pair

    loads = CountingLoads(TextJudge(reply))
    monkeypatch.setattr("isqaflow.models.registry.load_model", loads)
    validity, agreement = tmp_path / "validity.jsonl", tmp_path / "agreement.jsonl"
    summary = run_judge_checks(
        write_queries(tmp_path),
        HUMAN_CSV,
        validity,
        agreement,
        checks_job("local", CONTROLS, per_domain=2),
        cache_path=None,
    )
    assert loads.loads == 1
    human = [json.loads(line) for line in agreement.read_text().splitlines()]
    assert len(human) == 12 and {h["kind"] for h in human} == {"human"}
    assert all(h["verdict"] == "tie" and h["judge"] == "local" for h in human)
    records = [json.loads(line) for line in validity.read_text().splitlines()]
    assert len(records) == len(CONTROLS) * len(DOMAINS) * 2
    assert {r["scope"] for r in records} == {"fiqa+science+technology"}
    assert summary == {(c, "raw"): {"n": 6, "n_correct": 6, "n_invalid": 0} for c in CONTROLS}


def test_the_job_without_human_labels_or_controls(tmp_path, monkeypatch):
    loads = CountingLoads(TextJudge(lambda r: "<rating>0</rating>"))
    monkeypatch.setattr("isqaflow.models.registry.load_model", loads)
    validity = tmp_path / "validity.jsonl"
    run_judge_checks(
        write_queries(tmp_path),
        None,
        validity,
        None,
        checks_job("gpt4", [], per_domain=50),
        cache_path=None,
    )
    assert validity.read_text() == "" and loads.loads == 0
    with pytest.raises(ValueError, match="give both or neither"):
        run_judge_checks(
            write_queries(tmp_path),
            HUMAN_CSV,
            validity,
            None,
            checks_job("gpt4", [], per_domain=1),
            cache_path=None,
        )
