"""The Arena-Hard-Auto judgment browser: one item per judged answer with the question, both
answers and both games; the verdict is the answerer's side of the games (an unlabelled game is
invalid, never a tie); the controls are items of their own; the page's tallies are the score
table's battles, in a real headless Chromium (as tests/engines/test_browser.py's pages)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_browser import dump_dom, shown_count

from isqaflow.arena_hard.browse import answer_items, run_arena_hard_browser, verdict
from isqaflow.data.peers import read_arena_hard_judgments
from isqaflow.io import read_jsonl, write_jsonl

REPO = Path(__file__).resolve().parents[2]
EMBEDDED = REPO / "data/embedded/arena_hard"
BASELINE = EMBEDDED / "model_answer/handwritten-baseline.jsonl"
QUESTIONS = EMBEDDED / "question.jsonl"
# per question: game 1 (baseline = A), game 2 (swapped)
GAMES = [["B>A", "A>B"], ["A>>B", "B>>A"], ["A=B", "A=B"], ["B>A", None]]


def arena_hard_files(tmp_path: Path) -> dict[str, Path]:
    qids = [obj["uid"] for _, obj in read_jsonl(BASELINE)]
    answers = tmp_path / "m.jsonl"
    write_jsonl(
        answers,
        [
            {
                "uid": q,
                "ans_id": f"m:{q}",
                "model": "m",
                "messages": [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": {"answer": f"answer {i} " * (i + 1)}},
                ],
            }
            for i, q in enumerate(qids)
        ],
    )
    judgments = tmp_path / "judgments.jsonl"
    write_jsonl(
        judgments,
        [
            {
                "question_id": q,
                "model": "m",
                "judge": "j",
                "games": [
                    {"user_prompt": "p", "judgment": f"reply {n}", "score": s}
                    for n, s in enumerate(games, start=1)
                ],
            }
            for q, games in zip(qids, GAMES, strict=True)
        ],
    )
    controls = tmp_path / "controls.jsonl"
    write_jsonl(
        controls,
        [
            {
                "instrument": "Arena-Hard judge",
                "name": "j",
                "scope": "arena-hard",
                "control": "empty",
                "rule": "raw",
                "item": qids[0],
                "expected": "baseline",
                "outcome": "baseline",
                "correct": True,
                "chance": 0.16,
                "baseline_correct": None,
                "detail": {"labels": ["A>B", "B>A"]},
            }
        ],
    )
    return {"answers": answers, "judgments": judgments, "controls": controls}


def _items(page: Path) -> list[dict]:
    text = page.read_text()
    data = re.search(r'<script type="application/json" id="items">(.*?)</script>', text, re.S)
    return json.loads(data.group(1))["items"]


def test_each_judged_answer_is_an_item_with_both_answers_and_both_games(tmp_path):
    files = arena_hard_files(tmp_path)
    page = tmp_path / "arena_hard.html"
    n = run_arena_hard_browser(
        page, QUESTIONS, BASELINE, [files["answers"]], [files["judgments"]], [files["controls"]]
    )
    items = _items(page)
    assert n == len(items) == len(GAMES) + 1
    answers = [i for i in items if i["kind"] == "answer"]
    assert [i["verdict"] for i in answers] == [
        "answerer better",
        "baseline better",
        "tie",
        "invalid",  # game 2 without a label: never a tie
    ]
    first = answers[0]
    assert [label for label, _ in first["texts"]] == ["question", "baseline", "answer: m"]
    assert first["replies"][0][:2] == ["game 1 (baseline = A): B>A", "reply 1"]
    assert first["replies"][1][0] == "game 2 (baseline = B): A>B"
    assert first["tally"] == {"games": 2, "answerer": 2, "tie": 0, "baseline": 0, "invalid": 0}
    assert answers[3]["tally"]["invalid"] == 1 and answers[3]["flip"] is False
    assert answers[3]["replies"][1][0] == "game 2 (baseline = B): no valid label"
    control = next(i for i in items if i["kind"] == "control")
    assert control["control"] == "empty" and control["correct"] is True
    assert control["texts"][2] == ["answer: control empty", ""]
    assert control["verdict"] == "baseline better"


def test_verdicts_from_the_two_games():
    assert verdict(["answerer", "answerer"]) == "answerer better"
    assert verdict(["baseline", "baseline"]) == "baseline better"
    assert verdict(["tie", "tie"]) == "tie"
    assert verdict(["answerer", "tie"]) == "split"
    assert verdict(["invalid", "tie"]) == "invalid"


def test_a_judgment_of_an_answer_no_file_holds_is_named(tmp_path):
    files = arena_hard_files(tmp_path)
    lines = [obj for _, obj in read_jsonl(files["judgments"])]
    lines[0]["model"] = "ghost"
    with pytest.raises(ValueError, match=r"where: judge 'j' judged an answer of 'ghost'"):
        answer_items(
            lines, {lines[0]["question_id"]: "q"}, {lines[0]["question_id"]: "b"}, {}, "where"
        )


@pytest.mark.slow
def test_arena_hard_page_filters_to_the_score_tables_battles_in_chromium(tmp_path):
    files = arena_hard_files(tmp_path)
    page = tmp_path / "arena_hard.html"
    run_arena_hard_browser(
        page, QUESTIONS, BASELINE, [files["answers"]], [files["judgments"]], [files["controls"]]
    )
    battles = read_arena_hard_judgments(
        files["judgments"], strong_weight=1, baseline="handwritten-baseline"
    ).table
    dom = dump_dom(page, "kind=answer&system=m")
    assert shown_count(dom) == len(GAMES)
    tally = {
        key: int(re.search(rf'<span id="tally-{key}">(\d+)</span>', dom).group(1))
        for key in ("games", "answerer", "tie", "baseline", "invalid")
    }
    assert tally["answerer"] == (battles["winner"] == "model_b").sum()
    assert tally["baseline"] == (battles["winner"] == "model_a").sum()
    assert tally["tie"] == (battles["winner"] == "tie").sum()
    assert tally["games"] - tally["invalid"] == len(battles)
    assert shown_count(dump_dom(page, "kind=answer&verdict=invalid")) == 1
    assert shown_count(dump_dom(page, "kind=control")) == 1
