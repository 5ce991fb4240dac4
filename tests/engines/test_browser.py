"""The judgment browsers (isqaflow.report.browser, isqaflow.arena.browse, isqaflow.drfr.browse).

The judged records are written by the real writers (judge_pairs, the arena and DRFR control
writers, the DRFR judge) with fake judges; the slow test opens the pages in a real headless
Chromium (Debian's package) and checks that the filtered counts are the tables' counts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from isqaflow.arena.browse import arena_items, pair_item, run_arena_browser
from isqaflow.arena.judging.controls import build_controls, control_records
from isqaflow.arena.judging.judge import judge_pairs
from isqaflow.arena.ratings.bootstrap import win_rates
from isqaflow.arena.tables import outcomes_vs
from isqaflow.arena.judging.verdicts import position_consistency
from isqaflow.data.schema import RagQuery
from isqaflow.io import write_jsonl
from isqaflow.models.base import LanguageModel
from isqaflow.report.browser import check_items, render_page

ANSWER_TAGS = re.compile(
    r"<answer 1>\n(.*?)\n</answer 1>.*<answer 2>\n(.*?)\n</answer 2>", re.DOTALL
)


class PositionalScorer(LanguageModel):
    """A fake log-prob judge: the GOOD answer's label likeliest, by a margin that the first
    position inflates (so weak preferences flip with the order); no GOOD: a tie."""

    backend = "fake"

    def identity(self) -> dict:
        return {"backend": self.backend}

    def generate(self, requests, params):
        raise AssertionError("logprob mode must not generate")

    def score_batch(self, items):
        rows = []
        for request, _ in items:
            first, second = ANSWER_TAGS.search(request[-1]["content"]).groups()
            strength = 0.2 if "weak" in first + second else 2.0
            if "GOOD" in first:
                rows.append([-1.0, -1.0 - strength, -4.0])
            elif "GOOD" in second:
                rows.append([-1.0 - strength + 0.5, -1.0, -4.0])  # position 1 favoured by 0.5
            else:
                rows.append([-3.0, -3.0, -0.5])
        return rows


def queries() -> list[RagQuery]:
    return [
        RagQuery(
            id=f"q{i}",
            domain="science",
            question=f"question {i}?",
            reference=f"Reference {i}.\nLine 2.",
            reference_with_citation="",
            citations=[],
            gold_doc_ids=[],
        )
        for i in range(4)
    ]


def reference_pairs() -> list[dict]:
    """Two systems against the reference on four queries: GOOD, weak-GOOD and poor answers."""
    answers = {
        "smollm2": ["GOOD a.", "GOOD weak b.", "poor c.", "GOOD d."],
        "handwritten": ["poor a.", "weak poor b.", "GOOD c.", "poor </script><b>d</b>."],
    }
    pairs = []
    for system, texts in answers.items():
        for i, text in enumerate(texts):
            pairs.append(
                {
                    "pair_id": f"science:q{i}:{system}|lfrqa",
                    "kind": "reference",
                    "domain": "science",
                    "qid": f"q{i}",
                    "query": f"question {i}?",
                    "system_a": system,
                    "answer_a": text,
                    "system_b": "lfrqa",
                    "answer_b": f"Reference {i}. Line 2.",
                }
            )
    return pairs


def judged_records() -> list[dict]:
    records = judge_pairs(
        PositionalScorer(),
        reference_pairs(),
        mode="logprob",
        orders="both",
        rule="calibrated",
        tie_band=0.1,
    )
    for record in records:
        record["judge"] = "local"
    return records


@pytest.fixture
def arena_files(tmp_path):
    """Judged pairs, judged human pairs with their preference file, and control records."""
    judged = tmp_path / "judgments.jsonl"
    write_jsonl(judged, judged_records())
    human_pairs = [
        {
            "pair_id": "h1",
            "kind": "human",
            "domain": "science",
            "qid": "q1",
            "query": "question 1?",
            "system_a": "x",
            "answer_a": "GOOD x.",
            "system_b": "y",
            "answer_b": "poor y.",
        },
        {
            "pair_id": "h2",
            "kind": "human",
            "domain": "science",
            "qid": "q2",
            "query": "question 2?",
            "system_a": "x",
            "answer_a": "poor x.",
            "system_b": "y",
            "answer_b": "GOOD y.",
        },
    ]
    judged_human = judge_pairs(
        PositionalScorer(),
        human_pairs,
        mode="logprob",
        orders="both",
        rule="calibrated",
        tie_band=0.1,
    )
    for record in judged_human:
        record["judge"] = "local"
    human = tmp_path / "agreement.jsonl"
    write_jsonl(human, judged_human)
    rows = []
    for pair, ratings in (
        ("h1", ["better", "better", "tie"]),
        ("h2", ["better", "slightly better", "tie"]),
    ):
        source = next(p for p in human_pairs if p["pair_id"] == pair)
        for n, rating in enumerate(ratings):
            rows.append(
                {
                    "pair_id": pair,
                    "domain": "science",
                    "qid": source["qid"],
                    "query": source["query"],
                    "system_1": "x",
                    "answer_1": source["answer_a"],
                    "system_2": "y",
                    "answer_2": source["answer_b"],
                    "annotator": f"a{n}",
                    "rating": rating,
                }
            )
    human_csv = tmp_path / "human.csv"
    pd.DataFrame(rows).to_csv(human_csv, index=False)
    controls = build_controls(queries(), ["other_reference", "no_answer", "self"], 2, 7)
    judged_controls = judge_pairs(
        PositionalScorer(), controls, mode="logprob", orders="both", rule="calibrated", tie_band=0.1
    )
    validity = tmp_path / "validity.jsonl"
    write_jsonl(validity, control_records(judged_controls, "local", "arena", "both"))
    query_file = tmp_path / "queries.jsonl"
    write_jsonl(query_file, queries())
    return {
        "judged": {"bm25-k5.local": str(judged)},
        "human_paths": [str(human)],
        "human_csv": str(human_csv),
        "control_paths": [str(validity)],
        "query_paths": [str(query_file)],
        "controls": ["other_reference", "no_answer", "self"],
        "per_domain": 2,
        "seed": 7,
        "rules": {"local": "calibrated"},
        "n_controls": len(controls),
    }


def items_of(files) -> list[dict]:
    return arena_items(
        files["judged"],
        files["human_paths"],
        files["human_csv"],
        files["control_paths"],
        queries(),
        files["controls"],
        files["per_domain"],
        files["seed"],
        files["rules"],
    )


def test_arena_items_carry_texts_replies_flips_humans_and_controls(arena_files):
    items = items_of(arena_files)
    check_items(items)
    kinds = pd.Series([item["kind"] for item in items]).value_counts().to_dict()
    assert kinds == {"reference": 8, "control": arena_files["n_controls"], "human": 2}
    first = next(item for item in items if item["id"] == "science:q0:smollm2|lfrqa")
    assert first["setting"] == "bm25-k5" and first["judge"] == "local"
    assert [label for label, _ in first["texts"]] == [
        "query",
        "answer a: smollm2",
        "answer b: lfrqa",
    ]
    assert first["texts"][1][1] == "GOOD a." and first["length_diff"] == len("GOOD a.") - len(
        "Reference 0. Line 2."
    )
    # a log-prob judge: no reply text, the three label log-probs and the margin per order instead
    assert [reply[0].split(":")[0] for reply in first["replies"]] == [
        "order ab (answer a shown first)",
        "order ba (answer b shown first)",
    ]
    assert all(reply[1] == "" for reply in first["replies"])
    assert first["replies"][0][2] == {
        "logP <rating>1": -1.0,
        "logP <rating>2": -3.0,
        "logP <rating>0": -4.0,
        "margin of a": 2.0,
    }
    assert first["verdict"] == "1" and set(first["verdicts"]) == {
        "raw",
        "calibrated",
        "mean margin of a",
    }
    # the weak preference flips with the order (margins 0.2 and -0.3): counted as a flip
    weak = next(item for item in items if item["id"] == "science:q1:smollm2|lfrqa")
    assert weak["flip"] is True and first["flip"] is False
    records = judged_records()
    assert sum(item["flip"] is True for item in items if item["kind"] == "reference") == sum(
        r["position_consistent_calibrated"] is False for r in records
    )
    # controls: marked, texts rebuilt and joined, expected side given
    controls = [item for item in items if item["kind"] == "control"]
    assert all(item["control"] in ("other_reference", "no_answer", "self") for item in controls)
    no_answer = next(item for item in controls if item["control"] == "no_answer")
    assert "I couldn't find an answer." in [text for _, text in no_answer["texts"]]
    assert all(
        item["expected"] in ("1", "2", "tie") and item["correct"] in (True, False)
        for item in controls
    )
    # humans: h1 majority "better" (1), the judge says 1; h2 majority "better" (1), the judge says 2
    human = {item["id"]: item for item in items if item["kind"] == "human"}
    assert (human["h1"]["human"], human["h1"]["verdict"], human["h1"]["human_agrees"]) == (
        "1",
        "1",
        True,
    )
    assert (human["h2"]["human"], human["h2"]["verdict"], human["h2"]["human_agrees"]) == (
        "1",
        "2",
        False,
    )


def test_control_records_from_other_settings_fail_clearly(arena_files):
    with pytest.raises(ValueError, match="not among the rebuilt control pairs"):
        arena_items(
            arena_files["judged"],
            control_paths=arena_files["control_paths"],
            queries=queries(),
            controls=["no_answer"],
            per_domain=2,
            seed=7,
        )


def test_page_embeds_items_safely_and_checks_them():
    items = items_of_simple()
    page = render_page("t", items)
    assert "</script><b>" not in page  # an answer's markup cannot close the data element
    data = re.search(
        r'<script type="application/json" id="items">(.*?)</script>', page, re.DOTALL
    ).group(1)
    assert json.loads(data)["items"][0]["texts"][1][1] == "poor </script><b>d</b>."
    assert "http" not in page.split("<script>")[0].lower().replace(
        "http-equiv", ""
    )  # nothing external
    with pytest.raises(ValueError, match="lacks"):
        check_items([{"id": "x"}])
    with pytest.raises(ValueError, match="repeated"):
        check_items(items + items)


def items_of_simple() -> list[dict]:
    from isqaflow.arena.browse import pair_item

    record = next(r for r in judged_records() if "</script>" in r["answer_a"])
    return [pair_item(record, "s", "local")]


# ------------------------------------------------------------------ a real headless browser
def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def dump_dom(page: Path, fragment: str) -> str:
    binary = chromium()
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (.ci/run installs Debian's chromium package)")
        pytest.skip(
            "chromium is not installed: apt-get install chromium (Debian) to run the browser tests"
        )
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    result = subprocess.run(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--virtual-time-budget=5000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return result.stdout


def shown_count(dom: str) -> int:
    return int(re.search(r'<span id="count">(\d+)</span>', dom).group(1))


@pytest.mark.slow
def test_arena_page_filters_to_the_tables_counts_in_chromium(arena_files, tmp_path):
    page = tmp_path / "arena.html"
    run_arena_browser(
        page,
        arena_files["judged"],
        arena_files["query_paths"],
        arena_files["human_paths"],
        arena_files["human_csv"],
        arena_files["control_paths"],
        arena_files["controls"],
        arena_files["per_domain"],
        arena_files["seed"],
        arena_files["rules"],
    )
    records = pd.DataFrame(judged_records())
    rates = win_rates(outcomes_vs(records[records["kind"] == "reference"], "lfrqa")).set_index(
        "model"
    )
    n_items = len(items_of(arena_files))
    assert shown_count(dump_dom(page, "")) == n_items
    for system in ("smollm2", "handwritten"):
        for verdict, column in (("1", "n_win"), ("tie", "n_tie"), ("2", "n_loss")):
            dom = dump_dom(page, f"system={system}&kind=reference&verdict={verdict}")
            assert shown_count(dom) == rates.loc[system, column], (system, verdict)
    consistency = position_consistency(records.to_dict("records"), "position_consistent_calibrated")
    dom = dump_dom(page, "kind=reference&flip=yes")
    assert shown_count(dom) == consistency["n_both_valid"] - consistency["n_consistent"] > 0
    dom = dump_dom(page, "human=disagree")
    assert shown_count(dom) == 1 and 'data-id="h2"' in dom and 'data-id="h1"' not in dom
    dom = dump_dom(page, "kind=control")
    assert (
        shown_count(dom) == arena_files["n_controls"] and "known-answer control: no_answer" in dom
    )


# ------------------------------------------------------------------ DRFR
@pytest.fixture
def drfr_files(tmp_path, monkeypatch):
    """Instructions, responses, and the judgments and control records of rule drfr_judge's entry
    point (isqaflow.drfr.judge_responses.run_judge) with a fake log-prob judge."""
    from test_drfr_controls import INSTRUCTIONS, TopicJudge

    from isqaflow.drfr import judge_responses

    monkeypatch.setattr("isqaflow.models.registry.load_model", lambda spec, **kwargs: TopicJudge())
    instructions = tmp_path / "instructions.jsonl"
    write_jsonl(instructions, INSTRUCTIONS)
    responses = []
    for model in ("alpha", "beta"):  # beta names the topic of odd instructions only: some NO
        path = tmp_path / f"{model}.jsonl"
        write_jsonl(
            path,
            [
                {
                    "instruction_id": i.id,
                    "model": model,
                    "response": f"A text on {i.id if model == 'alpha' or int(i.id[1:]) % 2 else 'it'}.",
                }
                for i in INSTRUCTIONS
            ],
        )
        responses.append(str(path))
    judge_responses.run_judge(
        instructions,
        responses,
        tmp_path / "judgments.jsonl",
        tmp_path / "controls.jsonl",
        judge_spec={"backend": "fake"},
        judge_name="local",
        dataset="infobench",
        mode="logprob",
        rule="calibrated",
        generation=None,
        cache_path=tmp_path / "calls.sqlite",
        controls=["empty_response", "other_response"],
        control_instructions=3,
        seed=11,
    )
    return {
        "infobench": {
            "instructions": str(instructions),
            "responses": responses,
            "judgments": [str(tmp_path / "judgments.jsonl")],
            "controls": [str(tmp_path / "controls.jsonl")],
        }
    }


def drfr_judgments(files) -> pd.DataFrame:
    from isqaflow.io import read_jsonl

    return pd.DataFrame([r for _, r in read_jsonl(files["infobench"]["judgments"][0])])


def test_drfr_items_join_the_responses_and_mark_the_controls(drfr_files):
    from isqaflow.drfr.browse import drfr_items

    items = drfr_items(drfr_files, {"local": "calibrated"})
    check_items(items)
    responses = [item for item in items if item["kind"] == "response"]
    assert len(responses) == 2 * 9
    beta2 = next(item for item in responses if item["id"] == "t2|beta")
    assert beta2["texts"] == [
        ["instruction", "Write about t2."],
        ["response: beta", "A text on it."],
    ]
    with_input = next(item for item in responses if item["id"] == "t3|alpha")
    assert with_input["texts"][1] == ["input", "Notes on t3."]
    assert beta2["verdict"] == "some NO" and beta2["tally"]["questions"] == 5
    assert beta2["replies"][0][0].startswith("Q1: Is the generated text polite (t2)? -> ")
    assert beta2["replies"][0][1] == "" and {"logprob_yes", "calibrated_log_odds"} <= set(
        beta2["replies"][0][2]
    )
    judged = drfr_judgments(drfr_files)
    assert sum(item["tally"]["YES"] for item in responses) == (judged["answer"] == "YES").sum()
    controls = [item for item in items if item["kind"] == "control"]
    assert {item["control"] for item in controls} == {"empty_response", "other_response"}
    other = next(item for item in controls if item["control"] == "other_response")
    assert other["texts"][-1][1].startswith(
        "A text on "
    )  # the other instruction's response, joined
    empty = next(item for item in controls if item["control"] == "empty_response")
    assert empty["texts"][-1][1] == "" and empty["correct"] is True


def test_drfr_judgments_of_an_unknown_response_fail_naming_the_file(drfr_files, tmp_path):
    from isqaflow.drfr.browse import drfr_items

    files = {
        "infobench": {
            **drfr_files["infobench"],
            "responses": drfr_files["infobench"]["responses"][:1],
        }
    }
    with pytest.raises(
        ValueError, match=r"judgments.jsonl: judge 'local' judged a response of 'beta'"
    ):
        drfr_items(files)


@pytest.mark.slow
def test_drfr_page_filters_to_the_tables_counts_in_chromium(drfr_files, tmp_path):
    from isqaflow.drfr.aggregate import drfr_summary
    from isqaflow.drfr.browse import run_drfr_browser

    page = tmp_path / "drfr.html"
    run_drfr_browser(page, drfr_files, {"local": "calibrated"})
    summary = drfr_summary(drfr_judgments(drfr_files))
    for model in ("alpha", "beta"):
        dom = dump_dom(page, f"kind=response&system={model}")
        tally = {
            key: int(re.search(rf'<span id="tally-{key}">(\d+)</span>', dom).group(1))
            for key in ("questions", "YES")
        }
        assert tally["questions"] == summary.loc[model, "n_questions"]
        assert tally["YES"] == summary.loc[model, "n_yes"]
        assert tally["YES"] / tally["questions"] == pytest.approx(summary.loc[model, "drfr"])
        all_yes = shown_count(dump_dom(page, f"kind=response&system={model}&verdict=all YES"))
        assert all_yes == round(
            summary.loc[model, "strict_rate"] * summary.loc[model, "n_instructions"]
        )
    dom = dump_dom(page, "kind=control")
    assert shown_count(dom) > 0 and "known-answer control: empty_response" in dom


def test_judged_summaries_are_items_of_their_own_kind(tmp_path):
    """Rule arena_summaries' records (judge_pairs with the summaries' keys) as browser items."""
    pairs = [
        {
            "pair_id": f"p1:{system}|abstract",
            "kind": "reference",
            "domain": "qasper",
            "qid": "p1",
            "query": 'Summarize the scientific paper "T".',
            "summarizer": "smollm2",
            "system_a": system,
            "answer_a": text,
            "system_b": "abstract",
            "answer_b": "GOOD abstract.",
        }
        for system, text in (("baseline", "poor summary."), ("isqa-x-human", "GOOD summary."))
    ]
    pairs.append(
        {
            **pairs[1],
            "pair_id": "p1:isqa-x-human|baseline",
            "kind": "head_to_head",
            "system_b": "baseline",
            "answer_b": "poor summary.",
        }
    )
    records = judge_pairs(
        PositionalScorer(), pairs, mode="logprob", orders="both", rule="calibrated", tie_band=0.1
    )
    for record in records:
        record["judge"] = "local"
    path = tmp_path / "summaries.jsonl"
    write_jsonl(path, records)
    items = arena_items({}, summary_paths=[str(path)])
    check_items(items)
    assert [(i["kind"], i["setting"], i["verdict"]) for i in items] == [
        ("summary reference", "summaries qasper/smollm2", "2"),
        ("summary reference", "summaries qasper/smollm2", "tie"),
        ("summary head_to_head", "summaries qasper/smollm2", "1"),
    ]
    assert items[2]["texts"][1] == ["answer a: isqa-x-human", "GOOD summary."]


class PositionOneWriter(LanguageModel):
    """A fake text judge that always rates the answer shown first."""

    backend = "fake"

    def identity(self) -> dict:
        return {"backend": self.backend}

    def generate(self, requests, params):
        from isqaflow.models.base import Generation

        return [
            Generation(text="<thinking>The first is fine.</thinking>\n<rating>1") for _ in requests
        ]


def test_a_text_judges_replies_are_shown_verbatim_and_its_position_bias_as_flips():
    records = judge_pairs(PositionOneWriter(), reference_pairs()[:2], mode="text", orders="both")
    for record in records:
        record["judge"] = "gpt"
    items = [pair_item(record, "bm25-k5", "gpt") for record in records]
    check_items(items)
    assert all(item["flip"] is True and item["verdict"] == "tie" for item in items)
    assert [reply[1] for reply in items[0]["replies"]] == [
        "<thinking>The first is fine.</thinking>\n<rating>1"
    ] * 2
    assert all(reply[2] is None for reply in items[0]["replies"]) and set(items[0]["verdicts"]) == {
        "raw"
    }


class GoodReader(LanguageModel):
    """A fake log-prob YES/NO judge: YES exactly when the judged text says GOOD."""

    backend = "fake"

    def identity(self) -> dict:
        return {"backend": self.backend}

    def generate(self, requests, params):
        raise AssertionError("logprob mode only")

    def score_batch(self, items):
        texts = [context[0]["content"].split("Generated Text:\n", 1)[1] for context, _ in items]
        return [
            [-0.2, -2.0] if "GOOD" in text.split("\n\nQuestion:", 1)[0] else [-2.0, -0.2]
            for text in texts
        ]


def test_summary_judgments_join_their_summaries_and_papers(tmp_path, monkeypatch):
    """Rule drfr_summaries' entry point (a paper's QA pairs as requirements), then the browser."""
    from isqaflow.data.schema import Answer, Paper, QAPair, Section
    from isqaflow.drfr.browse import drfr_items
    from isqaflow.drfr.summaries import SummaryJudgeJob, run_summary_judge

    monkeypatch.setattr("isqaflow.models.registry.load_model", lambda spec, **kwargs: GoodReader())
    paper = Paper(
        id="p1",
        dataset="qasper",
        title="A paper",
        abstract="It studies things.",
        sections=[Section(name="S", paragraphs=["Text."])],
        qas=[
            QAPair(
                id=f"q{i}",
                question=f"What is {i}?",
                answers=[Answer(text=f"{i}", type="abstractive")],
            )
            for i in range(2)
        ],
    )
    papers, summaries = tmp_path / "papers.jsonl", tmp_path / "baseline.jsonl"
    write_jsonl(papers, [paper])
    write_jsonl(
        summaries,
        [
            {
                "paper_id": "p1",
                "system": system,
                "summary": text,
                "final": True,
                "dataset": "qasper",
                "summarizer": "smollm2",
            }
            for system, text in (("baseline", "A GOOD summary."), ("generic", "A summary."))
        ],
    )
    judged = tmp_path / "judged.jsonl"
    job = SummaryJudgeJob(
        judge_name="local",
        judge_spec={"backend": "fake"},
        mode="logprob",
        rule="raw",
        generation=None,
        systems=("baseline", "generic"),
    )
    run_summary_judge(papers, [summaries], judged, job, tmp_path / "calls.sqlite")
    items = drfr_items(
        {},
        summary_sets=[
            {"judgments": str(judged), "papers": str(papers), "summaries": [str(summaries)]}
        ],
    )
    check_items(items)
    assert [
        (i["kind"], i["setting"], i["systems"], i["verdict"], i["tally"]["YES"]) for i in items
    ] == [
        ("summary", "summaries qasper/smollm2", ["baseline"], "all YES", 2),
        ("summary", "summaries qasper/smollm2", ["generic"], "some NO", 0),
    ]
    assert items[0]["texts"] == [
        ["paper (title and abstract)", "A paper\n\nIt studies things."],
        ["summary: baseline", "A GOOD summary."],
    ]
    assert items[0]["replies"][0][0].startswith(
        "Q1: Does the summary correctly state that the answer to: What is 0"
    )
    with pytest.raises(
        ValueError, match="judged a summary of 'generic' of paper 'p1' that no summaries"
    ):
        write_jsonl(
            summaries, [{"paper_id": "p1", "system": "baseline", "summary": "x", "final": True}]
        )
        drfr_items(
            {},
            summary_sets=[
                {"judgments": str(judged), "papers": str(papers), "summaries": [str(summaries)]}
            ],
        )
