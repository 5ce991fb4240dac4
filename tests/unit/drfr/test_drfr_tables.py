"""DRFR tables: captions name each judge's verdict rule and its known-answer controls."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from isqaflow.drfr.tables import build_drfr_tables, rule_note

TABLES = ("drfr_table5", "drfr_by_constraint", "drfr_by_category", "drfr_summaries")


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def judgments(rule: str = "raw") -> list[dict]:
    rows = []
    for model in ("alpha", "beta"):
        for k, subset in enumerate(["Easy", "Easy", "Hard", "Hard"]):
            for q in range(2):
                rows.append(
                    {
                        "judge": "local",
                        "model": model,
                        "instruction_id": f"t{k}",
                        "subset": subset,
                        "category": "Writing",
                        "question_index": q,
                        "labels": ["Content"],
                        "answer": "YES" if (k + q) % 2 else "NO",
                        "rule": rule,
                    }
                )
    return rows


def summary_judgments(rule: str = "raw") -> list[dict]:
    return [
        {
            "judge": "local",
            "dataset": "qasper",
            "summarizer": "smollm2",
            "system": system,
            "paper_id": f"p{k}",
            "answer": "YES" if k % 2 else "NO",
            "rule": rule,
        }
        for system in ("baseline_2", "isqa")
        for k in range(4)
    ]


def controls(correct: bool) -> list[dict]:
    return [
        {
            "instrument": "DRFR judge",
            "name": "local",
            "scope": "infobench",
            "control": "empty_response",
            "rule": rule,
            "item": f"t{k}#1",
            "expected": "NO",
            "outcome": "NO" if correct else "YES",
            "correct": correct,
            "chance": 0.5,
            "baseline_correct": None,
            "detail": {},
        }
        for k in range(8)
        for rule in ("raw", "calibrated")
    ]


def build(tmp_path: Path, control_rows: list[dict], rule: str = "raw") -> dict[str, str]:
    out = tmp_path / "tables"
    out.mkdir()
    build_drfr_tables(
        [write_jsonl(tmp_path / "judgments.jsonl", judgments(rule))],
        [write_jsonl(tmp_path / "summaries.jsonl", summary_judgments(rule))],
        out,
        out,
        rounds=100,
        seed=0,
        control_paths=[write_jsonl(tmp_path / "controls.jsonl", control_rows)],
    )
    return {name: (out / f"{name}.md").read_text().split("\n\n", 1)[0] for name in TABLES}


def test_every_drfr_caption_names_the_rule_and_the_controls(tmp_path):
    captions = build(tmp_path, controls(correct=False))
    for name, caption in captions.items():
        assert "Verdict rule: local raw." in caption, name
        assert "DRFR judge local on infobench, raw: empty_response 0/8 correct" in caption, name
        assert caption.endswith("NO EVIDENCE THAT THIS JUDGE SEPARATES BETTER FROM WORSE."), name
    # the figure says it too, across its top (issue 40)
    svg = (tmp_path / "tables/drfr_constraints.svg").read_text()
    assert "The DRFR judge local cannot rank these systems" in svg


def test_every_drfr_caption_opens_with_the_cannot_rank_sentence(tmp_path):
    """Issue 40: the tables, like the figure, say first that a judge failing its known-answer
    controls cannot rank these systems."""
    captions = build(tmp_path, controls(correct=False))
    for name, caption in captions.items():
        assert caption.startswith(
            "The DRFR judge local cannot rank these systems: it did no better than chance on 2 of "
            "its 2 known-answer controls, so its numbers show what it said, not which system is "
            "better. "
        ), name


def test_caption_of_a_judge_that_passes_its_controls_has_no_warning(tmp_path):
    captions = build(tmp_path, controls(correct=True), rule="calibrated")
    assert "Verdict rule: local calibrated." in captions["drfr_table5"]
    assert (
        "empty_response 8/8 correct (100% [63, 100], chance 50%, binomial p = 0.004, Holm 0.008)"
        in captions["drfr_table5"]
    )
    assert "NO EVIDENCE" not in captions["drfr_table5"]
    assert not any("cannot rank" in caption for caption in captions.values())
    assert "cannot rank" not in (tmp_path / "tables/drfr_constraints.svg").read_text()


def test_caption_says_when_no_control_was_run(tmp_path):
    captions = build(tmp_path, [])
    assert captions["drfr_summaries"].endswith("Controls: none recorded for DRFR judge.")


def test_rule_note_refuses_judgments_without_a_rule_or_under_two_rules():
    assert rule_note(pd.DataFrame(judgments()), pd.DataFrame()) == "Verdict rule: local raw."
    old = pd.DataFrame(judgments()).drop(columns="rule")
    with pytest.raises(ValueError, match="lack the column 'rule'"):
        rule_note(old)
    with pytest.raises(
        ValueError, match=r"more than one verdict rule: \{'local': \['calibrated', 'raw'\]\}"
    ):
        rule_note(pd.DataFrame(judgments("raw")), pd.DataFrame(summary_judgments("calibrated")))


def test_every_drfr_cell_says_its_n_and_marks_small_n_intervals(tmp_path):
    """4 instructions (2 per subset), 4 papers: below 10, every interval carries the mark and the
    caption says why; the constraint table gives each label's question count."""
    build(tmp_path, controls(correct=True))
    out = tmp_path / "tables"
    table5 = (out / "drfr_table5.md").read_text()
    row = next(line for line in table5.splitlines() if "| alpha" in line)
    assert "]\u2021 (n=2)" in row and "]\u2021 (n=4)" in row
    assert "\u2021 interval from fewer than 10 instructions" in table5.split("\n\n")[0]
    summaries = (out / "drfr_summaries.md").read_text()
    assert "]\u2021 (n=4)" in summaries and "fewer than 10 papers" in summaries.split("\n\n")[0]
    constraint = pd.read_csv(out / "drfr_by_constraint.csv")
    assert list(constraint["Content n"]) == [8, 8]


def test_no_small_n_mark_from_ten_instructions():
    from isqaflow.drfr.tables import _cell

    assert _cell(0.5, 0.4, 0.6, 10) == "50.0 [40.0, 60.0] (n=10)"
    assert _cell(0.5, 0.4, 0.6, 9) == "50.0 [40.0, 60.0]\u2021 (n=9)"
