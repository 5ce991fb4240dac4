"""Tests for the arena tables: verdict rules, position consistency under both rules, summaries."""

from __future__ import annotations

import pandas as pd
import pytest

from isqaflow.arena.tables import (
    position_consistency_table,
    summary_arena_table,
    verdict_rule,
    win_rate_table,
)


def judged_rows(setting: str, rule: str, margins: bool) -> list[dict]:
    """Three reference pairs: labels agree on the first, margins share the sign on the first two."""
    rows = []
    for i, (consistent, consistent_calibrated) in enumerate(
        [(True, True), (False, True), (False, False)]
    ):
        rows.append(
            {
                "setting": setting,
                "kind": "reference",
                "domain": "fiqa",
                "qid": f"q{i}",
                "system_a": "m",
                "system_b": "lfrqa",
                "verdict": "1",
                "rule": rule,
                "position_consistent": consistent,
                "position_consistent_calibrated": consistent_calibrated if margins else None,
                "margin": 0.5 if margins else None,
            }
        )
    return rows


def test_position_consistency_is_reported_under_both_rules():
    judged = pd.DataFrame(
        judged_rows("bm25-k5.local", "calibrated", margins=True)
        + judged_rows("bm25-k5.gpt4", "raw", margins=False)
    )
    table = position_consistency_table(judged)
    assert list(table.index) == [
        ("bm25-k5.gpt4", "raw"),
        ("bm25-k5.local", "raw"),
        ("bm25-k5.local", "calibrated"),
    ]
    assert table.loc[("bm25-k5.local", "raw"), "rate"] == pytest.approx(1 / 3)
    assert table.loc[("bm25-k5.local", "calibrated"), "rate"] == pytest.approx(2 / 3)
    assert table.loc[("bm25-k5.local", "calibrated"), "configured"]
    assert not table.loc[("bm25-k5.local", "raw"), "configured"]
    assert table.loc[("bm25-k5.gpt4", "raw"), "configured"]
    assert table["n_both_valid"].tolist() == [3, 3, 3]


def test_tables_name_the_verdict_rule():
    judged = pd.DataFrame(judged_rows("bm25-k5.local", "calibrated", margins=True))
    assert verdict_rule(judged) == "calibrated"
    assert verdict_rule(judged.drop(columns="rule")) == "raw"
    assert set(win_rate_table(judged, "lfrqa")["rule"]) == {"calibrated"}
    mixed = judged.assign(rule=["raw", "calibrated", "raw"])
    with pytest.raises(ValueError, match="mix verdict rules"):
        verdict_rule(mixed)


def test_summary_table_keeps_judges_apart():
    rows = [
        {
            "domain": "qasper",
            "summarizer": "s",
            "judge": judge,
            "rule": "raw",
            "kind": "reference",
            "system_a": "isqa",
            "system_b": "abstract",
            "verdict": verdict,
        }
        for judge, verdict in (("local", "1"), ("local", "1"), ("gpt4", "2"), ("gpt4", "tie"))
    ]
    table = summary_arena_table(pd.DataFrame(rows))
    assert table.loc[("qasper", "s", "local", "isqa vs abstract"), "win %"] == 100.0
    assert table.loc[("qasper", "s", "gpt4", "isqa vs abstract"), "win %"] == 0.0
    assert table.loc[("qasper", "s", "gpt4", "isqa vs abstract"), "win+tie %"] == 50.0
