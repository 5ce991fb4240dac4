"""The peers' released judgment files read as their authors' code writes and reads them
(isqaflow.data.peers), on the real files in full where ../shared/data/peers has them, and on
small files written here for every malformed case.  The real-file tests take about 5 s together
(AlpacaEval's 16 annotation files are most of it)."""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from pathlib import Path

import pytest
from conftest import SHARED_DATA

from isqaflow.arena.ratings.bradley_terry import bradley_terry
from isqaflow.data.peers import (
    PeerRead,
    drfr,
    raw_win_rate,
    read_alpaca_eval_annotations,
    read_arena_hard_answers,
    read_arena_hard_battles,
    read_arena_hard_judgments,
    read_arena_hard_questions,
    read_infobench_eval,
    read_ragqa_eval_outputs,
)
from isqaflow.io import RecordError

FIXTURES = Path(__file__).parents[2] / "fixtures" / "peers"
ARENA_HARD = "arena-hard/data/arena-hard-v0.1"
PYTHIA = f"{ARENA_HARD}/model_judgment/gpt-4-1106-preview/Pythia-12B-DPO-UltraFeedback.jsonl"


@pytest.fixture
def peers() -> Path:
    path = SHARED_DATA / "peers"
    if not path.is_dir():
        pytest.skip(f"the peers' released files are not present ({path}); a fresh clone has none")
    return path


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def win_rate_vs(ratings, model: str, anchor: str) -> float:
    """arena-hard's score: the Bradley-Terry probability of beating the anchor, in percent."""
    return 100.0 / (1.0 + 10.0 ** ((ratings[anchor] - ratings[model]) / 400.0))


# --- arena-hard-auto ---------------------------------------------------------------------------


def test_bradley_terry_on_arena_hards_battles_gives_the_published_leaderboard(peers):
    battles = read_arena_hard_battles(peers / "arena-hard/data/arena_hard_battles.jsonl")
    assert len(battles.table) == 2658 and not battles.skipped
    published = {}
    with (peers / "arena-hard/leaderboard/arena_hard_leaderboard_20240731.csv").open() as handle:
        for row in csv.DictReader(handle):
            published[row["model"]] = float(row["score"])
    ratings = bradley_terry(battles.table, anchor="gpt-4-0314")
    for model in ("gpt-4-0613", "gpt-3.5-turbo-0125"):
        assert win_rate_vs(ratings, model, "gpt-4-0314") == pytest.approx(
            published[model], abs=0.01
        )


def test_arena_hard_judgments_become_show_results_battles(peers):
    path = peers / PYTHIA
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    labels = Counter(
        f"game {g + 1} {line['games'][g]['score']}" for line in lines for g in range(2)
    )
    strong = sum(n for key, n in labels.items() if ">>" in key)
    read = read_arena_hard_judgments(path)
    once = read_arena_hard_judgments(path, strong_weight=1)
    assert {k: v for k, v in read.counts.items() if k != "battles"} == dict(labels)
    assert len(once.table) == 2 * len(lines) == 24
    assert len(read.table) == read.counts["battles"] == 24 + 2 * strong
    # Counted by hand on the file: game 1 holds A>>B 8 times, A>B 3, A=B once; game 2 B>>A 9
    # times, B>A 3 -- the baseline (A in game 1, B in game 2) wins all but the tie.
    assert dict(labels) == {
        "game 1 A>>B": 8, "game 1 A>B": 3, "game 1 A=B": 1, "game 2 B>>A": 9, "game 2 B>A": 3
    }  # fmt: skip
    assert read.table["winner"].value_counts().to_dict() == {"model_a": 57, "tie": 1}
    assert set(read.table["model_a"]) == {"gpt-4-0314"}
    assert set(read.table["model_b"]) == {"Pythia-12B-DPO-UltraFeedback"}
    assert not read.skipped


def game(score):
    return {"user_prompt": "p", "judgment": "j", "score": score}


def judgment(qid, first, second, model="m"):
    return {"question_id": qid, "model": model, "judge": "gpt-4-1106-preview",
            "games": [first, second]}  # fmt: skip


def test_judgments_swap_game_two_and_weigh_strong_verdicts(tmp_path):
    path = write_jsonl(
        tmp_path / "m.jsonl",
        [judgment("q1", game("B>>A"), game("A>B")), judgment("q2", game("A=B"), game("B>>A"))],
    )
    read = read_arena_hard_judgments(path, strong_weight=2)
    winners = list(zip(read.table["question_id"], read.table["game"], read.table["winner"]))
    assert winners == [
        ("q1", 1, "model_b"), ("q1", 1, "model_b"), ("q1", 2, "model_b"),
        ("q2", 1, "tie"), ("q2", 2, "model_a"), ("q2", 2, "model_a"),
    ]  # fmt: skip


def test_unparsed_arena_hard_games_are_left_out_as_show_result_does_and_counted(tmp_path):
    path = write_jsonl(
        tmp_path / "m.jsonl",
        [
            judgment("q1", game(None), game("A>B")),
            judgment("q2", None, game("A<B")),
            judgment("q3", game("A>B"), game("B>A")),
        ],
    )
    read = read_arena_hard_judgments(path)
    assert len(read.table) == 3  # q1 game 2, q3 both games
    assert read.n_skipped == 3
    assert read.skipped == {
        "game 1 score null (arena-hard: weight 0, not a battle)": 1,
        "game 1 null (arena-hard: weight 0, not a battle)": 1,
        "game 2 label 'A<B' outside the five levels (arena-hard: weight 0, not a battle)": 1,
    }
    assert "left out" in read.report()


@pytest.mark.parametrize(
    ("row", "message", "field"),
    [
        (judgment("q1", game("A>B"), None) | {"games": [game("A>B")]}, "expected 2 games", "games"),
        (
            judgment("q1", game(3), game("A>B")),
            "expected a verdict label or null",
            "games[0].score",
        ),
        (judgment("q1", {"judgment": "j"}, game("A>B")), "missing field", "games[0].score"),
        ({"model": "m", "games": []}, "missing field", "question_id"),
    ],
)
def test_malformed_judgments_name_file_line_and_field(tmp_path, row, message, field):
    path = write_jsonl(tmp_path / "m.jsonl", [judgment("q0", game("A>B"), game("B>A")), row])
    with pytest.raises(RecordError, match=message) as err:
        read_arena_hard_judgments(path)
    assert (err.value.file, err.value.line, err.value.field) == (str(path), 2, field)


def test_a_question_judged_twice_and_a_bad_weight_are_errors(tmp_path):
    row = judgment("q1", game("A>B"), game("B>A"))
    with pytest.raises(RecordError, match="occurs twice"):
        read_arena_hard_judgments(write_jsonl(tmp_path / "m.jsonl", [row, row]))
    with pytest.raises(ValueError, match="positive integer"):
        read_arena_hard_judgments(write_jsonl(tmp_path / "n.jsonl", [row]), strong_weight=0)


def test_battles_file_checks_its_winners(tmp_path):
    good = {"question_id": "q", "model_a": "a", "model_b": "b", "winner": "tie"}
    path = write_jsonl(tmp_path / "b.jsonl", [good, good | {"winner": "1"}])
    with pytest.raises(RecordError, match="winner must be one of") as err:
        read_arena_hard_battles(path)
    assert (err.value.line, err.value.field) == (2, "winner")


def test_battles_against_a_baseline_put_it_first_and_name_a_battle_without_it(tmp_path):
    """With ``baseline`` (arena_hard_scores): each battle turned so that the baseline is
    model_a, its winner swapped with it; a battle of two other models is an error naming its
    line and field."""
    rows = [
        {"question_id": "q1", "model_a": "base", "model_b": "m", "winner": "model_a"},
        {"question_id": "q2", "model_a": "m", "model_b": "base", "winner": "model_a"},
        {"question_id": "q3", "model_a": "m", "model_b": "base", "winner": "tie"},
    ]
    path = write_jsonl(tmp_path / "b.jsonl", rows)
    table = read_arena_hard_battles(path, baseline="base").table
    assert list(zip(table["model_a"], table["model_b"], table["winner"], strict=True)) == [
        ("base", "m", "model_a"),
        ("base", "m", "model_b"),  # m won, as model_a of the file
        ("base", "m", "tie"),
    ]
    assert list(read_arena_hard_battles(path).table["model_a"]) == ["base", "m", "m"]  # as is
    other = {"question_id": "q4", "model_a": "m", "model_b": "n", "winner": "tie"}
    with pytest.raises(RecordError, match="neither is the baseline 'base'") as err:
        read_arena_hard_battles(write_jsonl(tmp_path / "c.jsonl", [*rows, other]), baseline="base")
    assert (err.value.line, err.value.field, err.value.record) == (4, "model_a", "q4")


def test_answers_and_questions_in_full(peers):
    questions = read_arena_hard_questions(peers / ARENA_HARD / "question.jsonl")
    assert len(questions.table) == 500 and questions.table["question_id"].is_unique
    for model in ("gpt-4-0314", "gpt-4-0613", "gpt-3.5-turbo-0125"):
        answers = read_arena_hard_answers(peers / ARENA_HARD / "model_answer" / f"{model}.jsonl")
        assert set(answers.table["model"]) == {model}
        assert set(answers.table["question_id"]) == set(questions.table["question_id"])
        assert (answers.table["answer"].str.len() > 0).all()


def test_answers_in_arena_hards_v01_layout_and_a_second_answer_is_an_error(tmp_path):
    old = {"question_id": "q1", "answer_id": "x", "model_id": "m", "tstamp": 1.0,
           "choices": [{"index": 0, "turns": [{"content": "Hi.", "token_len": 2}]}]}  # fmt: skip
    read = read_arena_hard_answers(write_jsonl(tmp_path / "m.jsonl", [old]))
    assert read.table.to_dict("records") == [
        {"question_id": "q1", "model": "m", "answer_id": "x", "answer": "Hi."}
    ]
    with pytest.raises(RecordError, match="occurs twice") as err:
        read_arena_hard_answers(write_jsonl(tmp_path / "n.jsonl", [old, old]))
    assert err.value.line == 2
    new = {"uid": "q1", "ans_id": "x", "model": "m",
           "messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": {}}]}  # fmt: skip
    with pytest.raises(RecordError, match="missing field") as err:
        read_arena_hard_answers(write_jsonl(tmp_path / "o.jsonl", [new]))
    assert err.value.field == "messages[1].content.answer"


# --- AlpacaEval --------------------------------------------------------------------------------


def test_alpaca_eval_raw_win_rates_equal_the_leaderboard(peers):
    with (peers / "alpaca_eval/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv").open() as handle:
        published = {row[""]: float(row["win_rate"]) for row in csv.DictReader(handle)}
    files = sorted((peers / "alpaca_eval/annotations").glob("*.json"))
    assert len(files) == 16
    for path in files:
        read = read_alpaca_eval_annotations(path)
        assert read.table["generator_2"].nunique() == 1  # NullModel's file names it "example"
        assert set(read.table["generator_1"]) == {"gpt4_1106_preview"}
        assert read.table["preference"].between(1, 2).all()
        assert raw_win_rate(read) == pytest.approx(published[path.stem], abs=1e-9), path.stem


def annotation(preference, **extra):
    return {"instruction": "i", "output_1": "o1", "generator_1": "base", "output_2": "o2",
            "generator_2": "m", "preference": preference} | extra  # fmt: skip


def test_missing_preferences_are_counted_and_left_out_as_alpaca_eval_does(tmp_path):
    path = tmp_path / "a.json"
    path.write_text(json.dumps([annotation(1.25), annotation(None), annotation(0), annotation(2)]))
    path.write_text(path.read_text()[:-1] + ", " + json.dumps(annotation(1.0))[:-4] + "NaN}]")
    read = read_alpaca_eval_annotations(path)
    assert list(read.table["preference"]) == [1.25, 1.5, 2.0]
    assert list(read.table["index"]) == [0, 2, 3]
    assert read.skipped == {"preference null or NaN (alpaca_eval drops it from the win rate)": 2}
    assert read.counts["preference 0 read as a draw (1.5), as alpaca_eval does"] == 1
    assert raw_win_rate(read) == pytest.approx(100 * (0.25 + 0.5 + 1.0) / 3)


@pytest.mark.parametrize(
    ("bad", "message", "field"),
    [
        (annotation(2.5), "outside \\[1, 2\\]", "preference"),
        (annotation(0.5), "outside \\[1, 2\\]", "preference"),
        (annotation(True), "expected a number", "preference"),
        (annotation("2"), "expected a number", "preference"),
        ({k: v for k, v in annotation(1).items() if k != "output_2"}, "missing field", "output_2"),
        (annotation(1, generator_2="base"), "the baseline is the judged model", "generator_2"),
    ],
)
def test_malformed_annotations_name_file_record_and_field(tmp_path, bad, message, field):
    path = tmp_path / "a.json"
    path.write_text(json.dumps([annotation(1.5), bad]))
    with pytest.raises(RecordError, match=message) as err:
        read_alpaca_eval_annotations(path)
    assert (err.value.file, err.value.record, err.value.field) == (str(path), "#1", field)


# --- InFoBench ---------------------------------------------------------------------------------


def test_infobench_drfr_of_the_gpt4_evaluation_file(peers):
    read = read_infobench_eval(peers / "infobench/GPT4_DecomposeEval.jsonl")
    assert read.counts["instructions"] == 500
    assert len(read.table) == 2250 and not read.skipped
    assert drfr(read, none="no") == drfr(read, none="exclude") == pytest.approx(0.876, abs=1e-12)


def test_infobench_none_and_early_stop_are_counted_not_made_a_no(tmp_path):
    rows = [
        {"id": "a", "decomposed_questions": ["q1", "q2", "q3"], "eval": [True, None]},
        {"id": "b", "decomposed_questions": ["q1", "q2"], "eval": [False, True]},
    ]
    read = read_infobench_eval(write_jsonl(tmp_path / "e.jsonl", rows))
    assert list(read.table["eval"]) == [True, None, False, True]
    assert read.counts["eval None"] == 1
    assert sum(read.skipped.values()) == 1  # a's third question was never asked
    assert drfr(read, none="no") == pytest.approx(2 / 4)  # InFoBench's bool_ratio
    assert drfr(read, none="exclude") == pytest.approx(2 / 3)
    with pytest.raises(TypeError):
        drfr(read)  # the rule for a None has no default: every caller says it


@pytest.mark.parametrize(
    ("row", "message", "field"),
    [
        ({"id": "b", "decomposed_questions": ["q"], "eval": [True, True]}, "2 verdicts", "eval"),
        ({"id": "b", "decomposed_questions": ["q"], "eval": ["Yes"]}, "expected true", "eval[0]"),
        ({"id": "b", "decomposed_questions": ["q"], "eval": None}, "not evaluated", "eval"),
        ({"id": "a", "decomposed_questions": ["q"], "eval": [True]}, "occurs twice", "id"),
    ],
)
def test_malformed_infobench_evaluations_name_line_and_field(tmp_path, row, message, field):
    good = {"id": "a", "decomposed_questions": ["q"], "eval": [True]}
    path = write_jsonl(tmp_path / "e.jsonl", [good, row])
    with pytest.raises(RecordError, match=message) as err:
        read_infobench_eval(path)
    assert (err.value.line, err.value.field) == (2, field)


# --- RAG-QA Arena ------------------------------------------------------------------------------


def test_ragqa_eval_outputs_in_their_layout():
    read = read_ragqa_eval_outputs(
        FIXTURES / "ragqa/lifestyle_gpt-4o_eval_by_gpt-4-0125-preview.json"
    )
    assert isinstance(read, PeerRead)
    # Position 1 holds gpt-4o when the query has an even number of words (their parity rule).
    table = read.table
    assert list(zip(table["model_a"], table["winner"], strict=True)) == [
        ("LFRQA", "model_a"),
        ("gpt-4o", "tie"),
        ("LFRQA", "model_b"),
        ("gpt-4o", "model_b"),
        ("LFRQA", None),
        ("gpt-4o", None),
        ("gpt-4o", None),
        ("gpt-4o", None),
    ]
    assert read.counts == {
        "failed: judge call failed ('FAIL TO GENERATE ANS.')": 1,
        "failed: no <rating> tag": 1,
        "failed: no pred": 1,
        "failed: rating tag without exactly one of 0, 1, 2": 1,
        "judgments": 8,
    }
    assert not read.skipped and list(table["pair_id"]) == list(range(8))


@pytest.mark.parametrize(
    ("mutate", "message", "field"),
    [
        (lambda row: row.pop("order"), "missing field", "order"),
        (lambda row: row["order"].pop("2"), "missing field", "order.2"),
        (lambda row: row.update(pred=7), "expected a string", "pred"),
        (lambda row: row.update(query=" "), "empty query", "query"),
    ],
)
def test_malformed_ragqa_outputs_name_record_and_field(tmp_path, mutate, message, field):
    rows = json.loads(
        (FIXTURES / "ragqa/lifestyle_gpt-4o_eval_by_gpt-4-0125-preview.json").read_text()
    )
    mutate(rows[3])
    path = tmp_path / "x.json"
    path.write_text(json.dumps(rows, indent=2))
    with pytest.raises(RecordError, match=message) as err:
        read_ragqa_eval_outputs(path)
    assert (err.value.record, err.value.field) == ("#3", field)


def test_a_query_judged_twice_is_an_error(tmp_path):
    rows = json.loads(
        (FIXTURES / "ragqa/lifestyle_gpt-4o_eval_by_gpt-4-0125-preview.json").read_text()
    )
    path = tmp_path / "x.json"
    path.write_text(json.dumps([*rows, rows[0]]))
    with pytest.raises(RecordError, match="judged twice"):
        read_ragqa_eval_outputs(path)


def test_nan_is_a_missing_number_only_in_float_form():
    from isqaflow.data.peers.common import is_missing_number

    assert is_missing_number(math.nan) and is_missing_number(None)
    assert not is_missing_number(0.0)
