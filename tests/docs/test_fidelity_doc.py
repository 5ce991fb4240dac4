"""docs/fidelity.md lists the known QAGS deviations, with the values the configs set."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def rows() -> dict[str, str]:
    table = {}
    for line in (REPO / "docs/fidelity.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and not line.startswith("| question"):
            table[line.split("|")[1].strip()] = line
    return table


def test_qags_deviations_are_in_the_fidelity_table():
    table = rows()
    for question in (
        "QAGS answer candidates",
        "QAGS answer-consistency filter",
        "QAGS question text",
        "QAGS below K questions",
        "QAGS question order",
    ):
        assert question in table, question
    assert "exact, unnormalized string equality" in table["QAGS answer-consistency filter"]
    assert 'cuts a generated question at its first "?"' in table["QAGS question text"]
    assert "entities first" in table["QAGS answer candidates"]


def test_the_quoted_thresholds_are_the_configs():
    def threshold(name: str) -> float:
        config = yaml.safe_load((REPO / "config" / name).read_text())
        return float(config["metrics"]["qags"]["candidate_min_f1"])

    line = rows()["QAGS answer-consistency filter"]
    assert threshold("config.yaml") == 0.5 and "0.5 in the embedded default" in line
    assert threshold("paper.yaml") == 1.0 and "1.0 in `paper.yaml`" in line


def test_lfrqa_conversion_choices_are_in_the_fidelity_table():
    table = rows()
    for question in (
        "LFRQA reference text",
        "LFRQA rows",
        "LFRQA gold document listed twice",
        "LFRQA citations the text cannot resolve",
    ):
        assert question in table, question
    assert "`faithful_answer_w_citation` without its citations" in table["LFRQA reference text"]
    assert "14,020 with citations" in table["LFRQA rows"]


def test_the_failed_judgments_rule_is_in_the_fidelity_table_with_the_schema_default():
    schema = yaml.safe_load((REPO / "config/schema.yaml").read_text())
    option = schema["properties"]["arena"]["properties"]["failed_judgments"]
    line = rows()["arena failed judgments"]
    assert f"`arena.failed_judgments: {option['default']}`" in line
    others = [value for value in option["enum"] if value != option["default"]]
    assert others and all(f"`{value}`" in line for value in others)
    assert "30/70%" in line and "37.5/62.5%" in line
