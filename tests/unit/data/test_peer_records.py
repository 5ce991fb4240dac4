"""The peers' released judgments as the workflow's judged records (isqaflow.data.peers.records,
rule peer_judgments), on small files written here in each publisher's format; the config's
checks of ``peers:`` (isqaflow.configcheck.peers); and the table code's handling of what the
records bring that the workflow's own judges never write (soft verdicts, no answer texts, no
judged summaries)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from isqaflow.arena.tables import is_soft_verdict, length_control_tables, ratings_table
from isqaflow.configcheck.peers import peer_problems
from isqaflow.data.peers import drfr, read_infobench_eval
from isqaflow.data.peers.records import (
    PeerEntry,
    convert_peer_judgments,
    question_digest,
)
from isqaflow.drfr.aggregate import SUMMARY_COLUMNS, drfr_summary, summary_drfr
from isqaflow.io import RecordError, read_jsonl

ELO = {"k": 4, "base": 10, "scale": 400, "initial": 1000}


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _records(path):
    return [obj for _, obj in read_jsonl(path)]


def test_battles_put_the_baseline_second_and_keep_each_repeated_battle(tmp_path):
    battles = _jsonl(
        tmp_path / "battles.jsonl",
        [
            {"question_id": "q1", "model_a": "base", "model_b": "m", "winner": "model_a"},
            {"question_id": "q1", "model_a": "base", "model_b": "m", "winner": "model_a"},
            {"question_id": "q2", "model_a": "base", "model_b": "m", "winner": "model_b"},
            {"question_id": "q2", "model_a": "m", "model_b": "n", "winner": "tie"},
        ],
    )
    entry = PeerEntry("bench", "arena_hard_battles", (battles,), "judge-x", baseline="base")
    out = tmp_path / "judged.jsonl"
    lines = convert_peer_judgments(entry, out)
    records = _records(out)
    assert [(r["system_a"], r["system_b"], r["verdict"], r["kind"]) for r in records] == [
        ("m", "base", "2", "reference"),  # the baseline won: system_a (the model) lost
        ("m", "base", "2", "reference"),
        ("m", "base", "1", "reference"),
        ("m", "n", "tie", "all_pairs"),  # two other models
    ]
    assert len({r["pair_id"] for r in records}) == 4  # a repeated battle is its own record
    assert {r["domain"] for r in records} == {"bench"} and records[0]["qid"] == "q1"
    assert {r["rule"] for r in records} == {"released"}
    assert {r["judge"] for r in records} == {"judge-x"}
    assert records[0]["answer_a"] is None  # no answers files: no text, said in the log
    assert any("no answers files" in line for line in lines)
    assert lines[-1] == "peers.bench: 4 judged records written (arena)"


def _answers(path, model, answers):
    return _jsonl(
        path,
        [
            {
                "uid": q,
                "ans_id": f"a{q}",
                "model": model,
                "messages": [
                    {"role": "user", "content": "?"},
                    {"role": "assistant", "content": {"answer": text}},
                ],
            }
            for q, text in answers.items()
        ],
    )


def test_battles_take_their_texts_from_the_answers_files_and_name_a_missing_one(tmp_path):
    battles = _jsonl(
        tmp_path / "battles.jsonl",
        [
            {"question_id": "q1", "model_a": "base", "model_b": "m", "winner": "model_b"},
            {"question_id": "q2", "model_a": "base", "model_b": "m", "winner": "model_b"},
        ],
    )
    answers = (
        _answers(tmp_path / "base.jsonl", "base", {"q1": "long baseline answer", "q2": "b"}),
        _answers(tmp_path / "m.jsonl", "m", {"q1": "short"}),
    )
    entry = PeerEntry("bench", "arena_hard_battles", (battles,), "j", "base", answers=answers)
    with pytest.raises(RecordError, match=r"q2.*no answer of 'm' to this question"):
        convert_peer_judgments(entry, tmp_path / "out.jsonl")
    answers = (answers[0], _answers(tmp_path / "m.jsonl", "m", {"q1": "short", "q2": "mm"}))
    entry = PeerEntry("bench", "arena_hard_battles", (battles,), "j", "base", answers=answers)
    convert_peer_judgments(entry, tmp_path / "out.jsonl")
    first = _records(tmp_path / "out.jsonl")[0]
    assert (first["answer_a"], first["answer_b"]) == ("short", "long baseline answer")


def test_judgments_count_a_strong_verdict_three_times_as_arena_hard(tmp_path):
    def game(score):
        return {"user_prompt": "...", "judgment": f"[[{score}]]", "score": score}

    judgments = _jsonl(
        tmp_path / "m.jsonl",
        [
            # game 1: A (the baseline) much better; game 2 (swapped): A (the model) better
            {
                "question_id": "q1",
                "model": "m",
                "judge": "gpt-j",
                "games": [game("A>>B"), game("A>B")],
            },
            {"question_id": "q2", "model": "m", "judge": "gpt-j", "games": [game("A=B"), None]},
        ],
    )
    entry = PeerEntry("bench", "arena_hard_judgments", (judgments,), "fallback", "base")
    lines = convert_peer_judgments(entry, tmp_path / "out.jsonl")
    verdicts = [r["verdict"] for r in _records(tmp_path / "out.jsonl")]
    assert verdicts == ["2", "2", "2", "1", "tie"]
    assert "game 2 null (arena-hard: weight 0, not a battle): 1" in lines[0]  # counted, named
    assert {r["judge"] for r in _records(tmp_path / "out.jsonl")} == {"gpt-j"}
    one = PeerEntry("bench", "arena_hard_judgments", (judgments,), "j", "base", strong_weight=1)
    convert_peer_judgments(one, tmp_path / "one.jsonl")
    assert len(_records(tmp_path / "one.jsonl")) == 3


def _annotations(path, generator, preferences, baseline="base"):
    path.write_text(
        json.dumps(
            [
                {
                    "instruction": f"instruction {i}",
                    "generator_1": baseline,
                    "output_1": "baseline output",
                    "generator_2": generator,
                    "output_2": "out" * (i + 1),
                    "preference": p,
                }
                for i, p in enumerate(preferences)
            ]
        ),
        encoding="utf-8",
    )
    return str(path)


def test_annotations_become_soft_verdicts_with_the_model_first(tmp_path):
    files = (
        _annotations(tmp_path / "m.json", "m", [2.0, 1.0, 1.25, None]),
        _annotations(tmp_path / "n.json", "n", [1.5, 1.5, 1.5, 1.5]),
    )
    entry = PeerEntry("alpaca", "alpaca_eval_annotations", files, "ann", baseline="base")
    lines = convert_peer_judgments(entry, tmp_path / "out.jsonl")
    records = _records(tmp_path / "out.jsonl")
    mine = [r for r in records if r["system_a"] == "m"]
    assert [r["verdict"] for r in mine] == [1.0, 2.0, 1.75]  # 3 - preference; the null left out
    assert "left out -- preference null or NaN" in lines[0]
    assert {r["system_b"] for r in records} == {"base"}
    # one query id per instruction, the same in every file (the length control's difficulty)
    assert mine[0]["qid"] == question_digest("instruction  0 ") == records[3]["qid"]
    prefs = length_control_tables(pd.DataFrame(records).assign(setting="s"), pd.DataFrame(), 5, 0)[
        0
    ]
    raw = prefs.loc[("s", "reference", "m", "base"), "win rate (ties half) %"]
    assert raw == pytest.approx(100 * np.mean([1.0, 0.0, 0.25]))  # alpaca_eval's mean(p - 1)
    wrong = PeerEntry("alpaca", "alpaca_eval_annotations", files, "ann", baseline="other")
    with pytest.raises(RecordError, match=r"#0.*generator_1.*not peers.alpaca.baseline 'other'"):
        convert_peer_judgments(wrong, tmp_path / "wrong.jsonl")


def _infobench(path, evals, subset="Easy_set"):
    return _jsonl(
        path,
        [
            {
                "id": f"task_{i}",
                "instruction": "Do it.",
                "input": "",
                "output": "done",
                "category": "cat",
                "subset": subset,
                "decomposed_questions": [f"Q{j}?" for j in range(len(e))],
                "question_label": [["Content"], ["Format", "Style"], ["Number"]][: len(e)],
                "eval": e,
            }
            for i, e in enumerate(evals)
        ],
    )


def test_infobench_evaluations_become_drfr_judgments_with_none_as_invalid(tmp_path):
    path = _infobench(tmp_path / "eval.jsonl", [[True, False, None], [True, True]])
    entry = PeerEntry("infobench", "infobench_eval", (path,), "gpt-4", system="gpt-4")
    convert_peer_judgments(entry, tmp_path / "out.jsonl")
    records = pd.DataFrame(_records(tmp_path / "out.jsonl"))
    assert records["answer"].tolist() == ["YES", "NO", "INVALID", "YES", "YES"]
    assert records.loc[1, "labels"] == ["Format", "Style"]
    assert set(records["subset"]) == {"Easy"} and set(records["model"]) == {"gpt-4"}
    # the DRFR tables count INVALID as NO: InFoBench's own bool_ratio
    ours = drfr_summary(records).loc["gpt-4", "drfr"]
    assert ours == pytest.approx(drfr(read_infobench_eval(path), none="no")) == 3 / 5
    bad = _infobench(tmp_path / "bad.jsonl", [[True]], subset="Medium_set")
    entry = PeerEntry("infobench", "infobench_eval", (bad,), "gpt-4", system="gpt-4")
    with pytest.raises(RecordError, match=r"line 1.*task_0.*subset.*'Medium_set'"):
        convert_peer_judgments(entry, tmp_path / "bad_out.jsonl")
    with pytest.raises(ValueError, match="peers.infobench.system"):
        PeerEntry("infobench", "infobench_eval", (path,), "gpt-4")


def test_a_record_in_two_files_is_an_error(tmp_path):
    battles = _jsonl(
        tmp_path / "b.jsonl",
        [{"question_id": "q1", "model_a": "base", "model_b": "m", "winner": "tie"}],
    )
    path = _infobench(tmp_path / "eval.jsonl", [[True]])
    twice = PeerEntry("ib", "infobench_eval", (path, path), "gpt-4", system="gpt-4")
    with pytest.raises(ValueError, match="in two of its files"):
        convert_peer_judgments(twice, tmp_path / "out.jsonl")
    # a battles file twice: its battles counted twice, refused too (one file's repeated
    # battles -- a strong verdict's -- are its own records, numbered)
    with pytest.raises(ValueError, match=r"'b:q1:m\|base#1' is in two of its files"):
        convert_peer_judgments(
            PeerEntry("b", "arena_hard_battles", (battles, battles), "j", "base"),
            tmp_path / "b2.jsonl",
        )


def test_the_config_check_names_missing_files_and_keys_a_format_does_not_read(tmp_path):
    (tmp_path / "there.jsonl").write_text("{}\n")
    config = {
        "peers": {
            "ah": {
                "format": "arena_hard_battles",
                "files": ["there.jsonl", "gone.jsonl"],
                "judge": "j",
                "system": "x",
            },
            "ib": {"format": "infobench_eval", "files": ["there.jsonl"], "judge": "j"},
            "ae": {"format": "alpaca_eval_annotations", "files": ["*.json"], "judge": "j"},
        }
    }
    problems = {p.path: p.message for p in peer_problems(config, tmp_path)}
    assert set(problems) == {
        "peers.ah.system",
        "peers.ah.files[1]",
        "peers.ib.system",
        "peers.ae.files[0]",
    }
    assert "does not read it; it reads: answers, baseline" in problems["peers.ah.system"]
    assert (
        "'gone.jsonl'" in problems["peers.ah.files[1]"]
        and "does not exist" in problems["peers.ah.files[1]"]
    )
    assert "not a folder or a glob" in problems["peers.ae.files[0]"]
    assert peer_problems({"peers": {}}, tmp_path) == []


def test_the_ratings_leave_soft_verdicts_out_and_count_labels_as_before():
    assert [is_soft_verdict(v) for v in ("1", "tie", None, float("nan"), 1.25, 2, True)] == [
        False,
        False,
        False,
        False,
        True,
        True,
        False,
    ]
    pairs = pd.DataFrame(
        {
            "kind": "reference",
            "domain": "d",
            "qid": [f"q{i}" for i in range(6)],
            "system_a": ["m"] * 3 + ["n"] * 3,
            "system_b": "base",
            "verdict": ["1", "2", "tie", 1.2, 1.7, 1.5],
        }
    )
    table, _ = ratings_table(pairs, ELO, rounds=5, seed=0, kinds=["reference"])
    assert set(table.index) == {"m", "base"}  # n had soft verdicts only: no battle
    assert table[("votes", "")].to_dict() == {"m": 3, "base": 3}
    assert table[("invalid excluded", "")].iloc[0] == 0  # a soft verdict is not an invalid one


def test_records_without_answer_texts_stay_out_of_the_length_tables():
    judged = pd.DataFrame(
        {
            "setting": "s",
            "kind": "reference",
            "domain": "d",
            "qid": ["q1", "q2"],
            "system_a": ["m", "n"],
            "system_b": "base",
            "answer_a": ["text", None],
            "answer_b": ["base text", None],
            "verdict": ["1", "2"],
        }
    )
    lc, _ = length_control_tables(judged, pd.DataFrame(), 5, 0)
    assert set(lc.index.get_level_values("system")) == {"m"}


def test_no_judged_summary_gives_an_empty_table_with_its_columns():
    table = summary_drfr(pd.DataFrame())
    assert table.empty and list(table.columns) == list(SUMMARY_COLUMNS)


def test_the_leaderboards_origins_come_from_the_format_registry():
    """config/peers.yaml's entries, each keyed as each suite's tables key its cells (the arena's
    setting label, DRFR's and Arena-Hard's judge), with its benchmark as section and its
    publisher as source; arena-hard's shown by its own suite's columns and read by the arena's
    tables beside (``shown`` False there); every format has its registry entry (the one place
    the leaderboard reads what the records are)."""
    from pathlib import Path

    import yaml

    from isqaflow.data.peers.records import FORMATS, PEER_FORMATS, leaderboard_origins

    assert set(PEER_FORMATS) == set(FORMATS)
    peers = yaml.safe_load((Path(__file__).resolve().parents[3] / "config/peers.yaml").read_text())[
        "peers"
    ]
    origins = leaderboard_origins(peers)
    arena_hard = (
        "Arena-Hard-Auto (released judgments)",
        "released judgments (lmarena/arena-hard-auto)",
        "gpt-4-0314",
    )
    assert {
        key: (o["section"], o["source"], o["baseline"], o["shown"]) for key, o in origins.items()
    } == {
        # both arena-hard entries: one judge, one block of arena_hard_scores
        "arena_hard:gpt-4-1106-preview": (*arena_hard, True),
        "arena:peers.arena-hard-v0.1": (*arena_hard, False),
        "arena:peers.arena-hard-pythia": (*arena_hard, False),
        "arena:peers.alpaca_eval_2": (
            "AlpacaEval 2.0 (released judgments)",
            "released judgments (tatsu-lab/alpaca_eval)",
            "gpt4_1106_preview",
            True,
        ),
        "drfr:gpt-4": (
            "InFoBench (released judgments)",
            "released judgments (qinyiwei/InFoBench)",
            None,
            True,
        ),
    }
    assert origins["arena:peers.alpaca_eval_2"]["verdicts"] == "soft preferences"
    assert origins["arena_hard:gpt-4-1106-preview"]["baseline_ranked"]
    assert not origins["arena:peers.alpaca_eval_2"]["baseline_ranked"]


ARENA_HARD_PEERS = {
    "v01": {
        "format": "arena_hard_battles",
        "judge": "gpt-4-1106-preview",
        "files": ["battles.jsonl"],
        "answers": ["base.jsonl", "m.jsonl"],
    },
    "one": {
        "format": "arena_hard_judgments",
        "judge": "gpt-4-1106-preview",
        "baseline": "gpt-4-0314",
        "strong_weight": 1,
        "files": ["m1.jsonl", "m2.jsonl"],
        "answers": ["m.jsonl", "m1.jsonl"],
    },
    "other": {"format": "arena_hard_judgments", "judge": "judge-2", "files": ["n.jsonl"]},
    "alpaca": {"format": "alpaca_eval_annotations", "judge": "a", "files": ["a.json"]},
}


def test_arena_hards_released_files_are_read_as_released_by_its_suite():
    """Arena-Hard's formats: shown by the Arena-Hard suite, whose table code reads the released
    files themselves (one block per judge, a judgments file's strong weight, none for a battles
    file, the one baseline, each answers file once); the arena's tables read their judged
    records beside; AlpacaEval's and InFoBench's only as judged records."""
    from isqaflow.data.peers.records import (
        JUDGED_BY,
        READ_BY,
        RELEASED_TO,
        SUITES,
        released_files,
    )

    assert SUITES["arena_hard_battles"] == SUITES["arena_hard_judgments"] == "arena_hard"
    assert JUDGED_BY["arena_hard_battles"] == ("arena",) == JUDGED_BY["alpaca_eval_annotations"]
    assert READ_BY["arena_hard_judgments"] == ("arena_hard", "arena")
    assert RELEASED_TO == {
        "arena_hard_battles": "arena_hard",
        "arena_hard_judgments": "arena_hard",
        "alpaca_eval_annotations": None,
        "infobench_eval": None,
    }
    files = released_files(ARENA_HARD_PEERS, "arena_hard")
    assert files.paths == ("battles.jsonl", "m1.jsonl", "m2.jsonl", "n.jsonl")
    assert files.judges == ("gpt-4-1106-preview",) * 3 + ("judge-2",)
    assert files.formats == ("arena_hard_battles",) + ("arena_hard_judgments",) * 3
    assert files.strong_weights == (None, 1, 1, 3)  # the entry's, or arena-hard's 3
    assert files.baseline == "gpt-4-0314"  # named, or arena-hard's
    assert files.answers == ("base.jsonl", "m.jsonl", "m1.jsonl")
    assert files.about == (
        "Released judgments of Arena-Hard-Auto (lmarena/arena-hard-auto) (config peers: v01, "
        "one, other), read as released: nothing was judged here."
    )
    assert released_files(ARENA_HARD_PEERS, "arena").paths == ()
    assert released_files({}, "arena_hard").baseline is None


def test_arena_hards_entries_of_two_baselines_are_an_error():
    from isqaflow.data.peers.records import released_files

    peers = {**ARENA_HARD_PEERS, "v2": {**ARENA_HARD_PEERS["other"], "baseline": "o3-mini"}}
    with pytest.raises(ValueError, match=r"peers.v2.baseline 'o3-mini'.*one baseline"):
        released_files(peers, "arena_hard")


def test_two_entries_of_one_block_but_two_baselines_are_an_error():
    from isqaflow.data.peers.records import leaderboard_origins

    peers = {
        "v01": ARENA_HARD_PEERS["v01"],
        "v2": {**ARENA_HARD_PEERS["v01"], "baseline": "o3-mini"},
    }
    with pytest.raises(ValueError, match=r"peers.v2 and peers.v01: one block 'arena_hard:gpt-4"):
        leaderboard_origins(peers)
