"""config arena.length_control: the arena's LC tables by AlpacaEval's leaderboard GLM
(``length_controlled_v1``) when asked, from judged records, equal to alpaca_eval 0.6.6's own
numbers on the committed fixture (tests/fixtures/make_lc_v1_reference.py); the default
(``noreg``) is the table it always was."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from isqaflow.arena.ratings.length import lc_table, preferences
from isqaflow.arena.tables import ArenaTablesSettings, length_control_tables, read_difficulty
from isqaflow.configcheck.peers import length_control_problems
from isqaflow.io import RecordError

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "lc_v1_alpaca_eval.json"


@pytest.fixture(scope="module")
def fixture():
    return json.loads(FIXTURE.read_text())


def _judged(data) -> pd.DataFrame:
    """The fixture's preferences as the judged records of one setting (soft verdicts, answers of
    the fixture's lengths)."""
    prefs = pd.DataFrame(data["preferences"])
    return pd.DataFrame(
        {
            "setting": "s",
            "kind": "reference",
            "domain": "d",
            "qid": prefs["query"].astype(str),
            "system_a": prefs["system"],
            "system_b": "baseline",
            "answer_a": ["x" * int(n) for n in prefs["len_system"]],
            "answer_b": ["x" * int(n) for n in prefs["len_baseline"]],
            "verdict": 2.0 - prefs["preference"],  # system_a's preference p is verdict 2 - p
        }
    )


def test_length_controlled_v1_from_judged_records_is_alpaca_evals(fixture, tmp_path):
    difficulty = tmp_path / "difficulty.csv"
    gamma = fixture["difficulty"]  # per query 0, 1, ...
    pd.DataFrame({"query": [f"d:{q}" for q in range(len(gamma))], "difficulty": gamma}).to_csv(
        difficulty, index=False
    )
    control = {
        "glm": "length_controlled_v1",
        "gamed": fixture["gamed"],
        "difficulty": str(difficulty),
    }
    lc, _ = length_control_tables(_judged(fixture), pd.DataFrame(), 0, 0, control)
    lc = lc.reset_index().set_index("system")
    assert not set(fixture["gamed"]) & set(lc.index)  # the gamed systems: rows of the fit, not rows
    assert lc["glm"].eq("length_controlled_v1").all()
    assert lc["difficulty"].eq("given").all()
    identified = 0
    for system, expected in fixture["alpaca_eval"].items():
        if lc.loc[system, "LC status"] == "identified":
            identified += 1
            assert lc.loc[system, "LC win rate %"] == pytest.approx(
                expected["length_controlled_winrate"], abs=1e-9
            ), system
    assert identified >= 2
    # estimated difficulty: said so in the table
    estimated = length_control_tables(
        _judged(fixture), pd.DataFrame(), 0, 0, {**control, "difficulty": None}
    )[0]
    assert estimated["difficulty"].str.startswith("estimated from").all()


def test_the_default_is_the_table_it_was(fixture):
    judged = _judged(fixture)
    lc, _ = length_control_tables(judged, pd.DataFrame(), 0, 0)
    expected = lc_table(preferences(judged), 0, 0, key="s:reference")
    pd.testing.assert_frame_equal(
        lc.reset_index(drop=True), expected.reset_index(drop=True)[lc.columns]
    )
    assert "glm" not in lc.columns  # the default's columns unchanged
    assert ArenaTablesSettings(elo={}, rounds=1, seed=0).length_control == {
        "glm": "noreg",
        "gamed": [],
        "difficulty": None,
    }


def test_a_bad_difficulty_file_is_named(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("query,difficulty\nd:1,0.5\nd:2,high\n")
    with pytest.raises(RecordError, match=r"line 3.*d:2.*difficulty.*'high'"):
        read_difficulty(path)
    path.write_text("query,gamma\nd:1,0.5\n")
    with pytest.raises(RecordError, match=r"missing columns \['difficulty'\]"):
        read_difficulty(path)
    path.write_text("query,difficulty\nd:1,0.5\nd:1,0.2\n")
    with pytest.raises(RecordError, match="query twice"):
        read_difficulty(path)
    path.write_text("query,difficulty\nd:1,0.5\nd:2,-1.5\n")
    assert read_difficulty(path).to_dict() == {"d:1": 0.5, "d:2": -1.5}


def test_the_config_check_of_length_control(tmp_path):
    def problems(control):
        return {
            p.path: p.message
            for p in length_control_problems({"arena": {"length_control": control}}, tmp_path)
        }

    assert problems({"glm": "noreg", "gamed": [], "difficulty": None}) == {}
    assert problems({"glm": "noreg", "gamed": ["g"], "difficulty": None}) == {
        "arena.length_control.gamed": "read by glm: length_controlled_v1 only"
    }
    missing = problems({"glm": "length_controlled_v1", "gamed": [], "difficulty": "gone.csv"})
    assert "'gone.csv'" in missing["arena.length_control.difficulty"]
