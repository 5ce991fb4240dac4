"""Known-answer controls of an Arena-Hard judge, in the project's control-record contract
(:mod:`isqaflow.report.validity`), judged in the same two games as every answer.

* ``self`` -- the baseline's answer against itself.  Both games are then the same request, so
  a deterministic judge gives both the same label, and game 2's swap turns it into the other
  side: the two battles cancel (or both tie).  Expected: no net preference.  Its chance level
  is 1.0 -- a consistency check of how the games are combined, which cannot show separation.
* ``empty`` -- an empty answer against the baseline's: the baseline must win both games.  A
  judge drawing one of the five labels at random wins a game for the baseline with
  probability 2/5, both with 4/25 (the chance level); a judge that always writes the same
  label splits the two games and is never correct.

A game without a valid label makes the item's ``correct`` null: counted as invalid, never a
tie.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from isqaflow.data.peers import game_winner
from isqaflow.suites.arena_hard import JUDGE

__all__ = ["CONTROLS", "INSTRUMENT", "control_items", "control_records"]

INSTRUMENT = JUDGE  # the suite descriptor's name of the instrument
CONTROLS = ("self", "empty")
_CHANCE = {"self": 1.0, "empty": (2 / 5) ** 2}
# the battle sides in the controls' terms (model_a of a battle is the baseline)
_SIDE = {"model_a": "baseline", "model_b": "other", "tie": "tie"}


def control_items(
    questions: Sequence[Mapping[str, Any]], baseline: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The control items of the questions (``question_id``, ``prompt``): each control's
    ``answer`` against the baseline's answer (``baseline``: question id -> answer text); an
    item's ``model`` is its control's name, so its judgment line says which control it is."""
    items = []
    for control in CONTROLS:
        for question in questions:
            qid = question["question_id"]
            items.append(
                {
                    "question_id": qid,
                    "model": control,
                    "question": question["prompt"],
                    "answer": baseline[qid] if control == "self" else "",
                    "baseline_answer": baseline[qid],
                }
            )
    return items


def _winners(games: Sequence[Mapping[str, Any]]) -> list[str | None]:
    """Each game's winner in the battle's terms (baseline / other / tie; None: no valid label)."""
    out = []
    for number, game in enumerate(games, start=1):
        winner = game_winner(game.get("score"), number)
        out.append(None if winner is None else _SIDE[winner])
    return out


def control_records(judged: Sequence[Mapping[str, Any]], judge: str, scope: str) -> list[dict]:
    """One control record per judged control item (:func:`control_items`, judged by
    :func:`isqaflow.arena_hard.judge.judge_games`)."""
    records = []
    for line in judged:
        control = line["model"]
        if control not in CONTROLS:
            raise ValueError(f"not a control item: model {control!r} (expected one of {CONTROLS})")
        winners = _winners(line["games"])
        if None in winners:
            outcome, correct = "invalid", None
        elif control == "self":
            net = sorted(w for w in winners if w != "tie")
            outcome = "tie" if net in ([], ["baseline", "other"]) else net[0]
            correct = outcome == "tie"
        else:
            outcome = winners[0] if winners[0] == winners[1] else "split"
            correct = outcome == "baseline"
        records.append(
            {
                "instrument": INSTRUMENT,
                "name": judge,
                "scope": scope,
                "control": control,
                "rule": "raw",
                "item": line["question_id"],
                "expected": "tie" if control == "self" else "baseline",
                "outcome": outcome,
                "correct": correct,
                "chance": _CHANCE[control],
                "baseline_correct": None,
                "detail": {"labels": [game.get("score") for game in line["games"]]},
            }
        )
    return records
