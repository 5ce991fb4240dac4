"""The Arena-Hard-Auto judgment browser (rule arena_hard_browser): every judged answer on one
static page (:mod:`isqaflow.report.browser`).

Items, one per (judge, question, answerer): the question, the baseline's answer and the
answerer's, and the judge's two games -- game 1 with the baseline as A, game 2 swapped, as
``gen_judgment.py`` plays them -- each with its label, the judge's reply (text-mode judges;
log-prob judges write none) and, for log-prob judges, the five labels' log-probabilities.  The
verdict is the answerer's side of the two games (:func:`verdict`); ``flip`` marks games that
disagree, ``length_diff`` the answerer's answer minus the baseline's in characters.  A game
without a valid label is "invalid": never a tie.

The known-answer controls (kind "control", ``results/validity/arena_hard/``: the baseline
against itself, an empty answer against the baseline) are items of their own with what was
expected, their two labels and whether the judge got them right.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from isqaflow.arena_hard.answers import read_questions
from isqaflow.data.peers import game_winner, read_arena_hard_answers
from isqaflow.io import read_jsonl
from isqaflow.report.browser import write_browser

__all__ = ["answer_items", "control_items", "run_arena_hard_browser", "verdict"]

TALLY_KEYS = ("games", "answerer", "tie", "baseline", "invalid")
NOTES = (
    "One item per judged answer: the question, the baseline's answer and the answerer's, and "
    "the judge's two games (game 1: the baseline is A; game 2: swapped). The verdict is the "
    "answerer's side of both games; a game without a valid label is invalid, never a tie; "
    "the tallies count games.",
    "Log-prob judges write no reply: the five labels' log-probabilities decide, listed per game.",
    "Known-answer controls (yellow): the baseline against itself (no net preference expected) "
    "and an empty answer against the baseline (the baseline must win both games).",
)
_SIDE = {"model_a": "baseline", "model_b": "answerer", "tie": "tie"}


def _sides(games: Sequence[Mapping[str, Any] | None]) -> list[str]:
    """Each game's winner: baseline, answerer, tie or invalid (no valid label)."""
    out = []
    for number, game in enumerate(games, start=1):
        winner = game_winner((game or {}).get("score"), number)
        out.append("invalid" if winner is None else _SIDE[winner])
    return out


def verdict(sides: Sequence[str]) -> str:
    """The item's verdict from its games' sides: "answerer better" or "baseline better" when
    both games agree, "tie" when both tie, "invalid" when a game has no valid label, else
    "split"."""
    if "invalid" in sides:
        return "invalid"
    if len(set(sides)) == 1:
        return {"answerer": "answerer better", "baseline": "baseline better"}.get(sides[0], "tie")
    return "split"


def _replies(games: Sequence[Mapping[str, Any] | None]) -> list[list[Any]]:
    replies = []
    for number, game in enumerate(games, start=1):
        game = game or {}
        order = "baseline = A" if number == 1 else "baseline = B"
        replies.append(
            [
                f"game {number} ({order}): {game.get('score') or 'no valid label'}",
                game.get("judgment") or "",
                game.get("logprobs") or None,
            ]
        )
    return replies


def _tally(sides: Sequence[str]) -> dict[str, int]:
    return {"games": len(sides), **{key: sides.count(key) for key in TALLY_KEYS[1:]}}


def _item(
    item_id: str,
    judge: str,
    title: str,
    system: str,
    texts: tuple[str, str, str],
    games: Sequence[Mapping[str, Any] | None],
    *,
    raw: str,
    flip: bool | None,
    control: tuple[str, str, bool] | None = None,
) -> dict[str, Any]:
    """One browser item: the question, the baseline's answer and ``system``'s (a model, or
    ``control:<name>``), the judge's games in both orders; ``control`` is (name, expected
    verdict, whether the judge gave it) for a known-answer control."""
    question, base, answer = texts
    sides = _sides(games)
    name, expected, correct = control or (None, None, None)
    answerer = system if name is None else f"control {name}"
    return {
        "id": item_id,
        "kind": "answer" if control is None else "control",
        "judge": judge,
        "setting": "arena-hard",
        "title": title,
        "systems": [system],
        "texts": [["question", question], ["baseline", base], [f"answer: {answerer}", answer]],
        "replies": _replies(games),
        "verdict": verdict(sides),
        "verdicts": {"raw": raw},
        "flip": flip,
        "length_diff": len(answer) - len(base),
        "human": None,
        "human_agrees": None,
        "control": name,
        "expected": expected,
        "correct": correct,
        "tally": _tally(sides),
    }


def answer_items(
    judgments: Sequence[Mapping[str, Any]],
    questions: Mapping[str, str],
    baseline: Mapping[str, str],
    answers: Mapping[tuple[str, str], str],
    where: str = "",
) -> list[dict[str, Any]]:
    """Items of one judge's judgment lines; the question, the baseline's answer and the
    answerer's joined (a line whose question or answer no file holds is a named error)."""
    items = []
    for line in judgments:
        qid, model, judge = line["question_id"], line["model"], line.get("judge", "")
        if qid not in questions or qid not in baseline:
            raise ValueError(f"{where}: judge {judge!r} judged question {qid!r}, not in the files")
        if (model, qid) not in answers:
            raise ValueError(
                f"{where}: judge {judge!r} judged an answer of {model!r} to {qid!r} that no "
                "answer file holds"
            )
        games = list(line.get("games") or [])
        sides = _sides(games)
        answer = answers[(model, qid)]
        items.append(
            _item(
                f"{qid}|{model}",
                judge,
                f"{qid}  {model} vs the baseline",
                model,
                (questions[qid], baseline[qid], answer),
                games,
                raw=" / ".join(sides),
                flip=len(set(sides)) > 1 and "invalid" not in sides,
            )
        )
    return items


def control_items(
    records: Sequence[Mapping[str, Any]],
    questions: Mapping[str, str],
    baseline: Mapping[str, str],
) -> list[dict[str, Any]]:
    """Items of one judge's control records (:func:`isqaflow.arena_hard.controls.
    control_records`): the control's answer is the baseline's (``self``) or empty."""
    items = []
    for record in records:
        qid, control = record["item"], record["control"]
        labels = list((record.get("detail") or {}).get("labels") or [])
        games = [{"score": label} for label in labels]
        other = baseline[qid] if control == "self" else ""
        items.append(
            _item(
                f"{qid}|{control}",
                record["name"],
                f"{qid}  control {control}: expected {record['expected']}",
                f"control:{control}",
                (questions[qid], baseline[qid], other),
                games,
                raw=record["outcome"],
                flip=None,
                control=(control, record["expected"], record["correct"]),
            )
        )
    return items


def run_arena_hard_browser(
    out_path: str | Path,
    questions_path: str | Path,
    baseline_path: str | Path,
    answer_paths: Sequence[str | Path],
    judgment_paths: Sequence[str | Path],
    control_paths: Sequence[str | Path],
) -> int:
    """Entry point of rule arena_hard_browser: write the page; returns the number of items."""
    questions = {
        row["question_id"]: row["prompt"]
        for row in read_questions(questions_path).to_dict("records")
    }
    base = read_arena_hard_answers(baseline_path).table
    baseline = dict(zip(base["question_id"], base["answer"], strict=True))
    answers: dict[tuple[str, str], str] = {}
    for path in answer_paths:
        table = read_arena_hard_answers(path).table
        answers.update(
            zip(
                zip(table["model"], table["question_id"], strict=True), table["answer"], strict=True
            )
        )
    items = []
    for path in judgment_paths:
        items += answer_items(
            [obj for _, obj in read_jsonl(path)], questions, baseline, answers, str(path)
        )
    for path in control_paths:
        items += control_items([obj for _, obj in read_jsonl(path)], questions, baseline)
    return write_browser(out_path, "Arena-Hard-Auto: every judgment", items, NOTES, TALLY_KEYS)
