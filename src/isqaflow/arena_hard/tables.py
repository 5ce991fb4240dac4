"""Arena-Hard-Auto's score table: each answerer's win rate against the baseline, from
Bradley-Terry on the judges' battles, with bootstrap intervals (rule arena_hard_tables).

As v0.1's ``show_result.py``: the judgment files become battles
(:func:`isqaflow.data.peers.read_arena_hard_judgments`: both games, a strong verdict
``strong_weight`` times -- arena-hard's 3, or 1: one battle per game), Bradley-Terry is fitted
by maximum likelihood (:func:`isqaflow.arena.ratings.bradley_terry.bradley_terry`, anchored at
the baseline) and the score is the predicted win rate against the baseline in percent
(``predict_win_rate``: 100 / (1 + 10^((R_baseline - R) / 400)); the baseline scores 50).  The
interval: percentiles 2.5 and 97.5 of the score over ``rounds`` resamples of the battles
(:func:`isqaflow.arena.ratings.bootstrap.bootstrap_ratings`, as v0.1: battles, not questions,
are resampled).  One block of rows per judge; the caption quotes the judges' known-answer
controls.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from isqaflow.arena.ratings.bootstrap import bootstrap_ratings
from isqaflow.arena.ratings.bradley_terry import bradley_terry
from isqaflow.arena_hard.judge import LEVELS
from isqaflow.arena_hard.style import read_counts, style_scores
from isqaflow.data.peers import read_arena_hard_answers, read_arena_hard_judgments
from isqaflow.io import read_jsonl
from isqaflow.report.tables import write_table
from isqaflow.report.validity import read_control_records, validity_note, validity_summary
from isqaflow.suites.arena_hard import JUDGE as ARENA_HARD_JUDGE

log = logging.getLogger(__name__)

__all__ = ["COLUMNS", "score_table", "style_note", "win_rate_vs", "write_tables"]

COLUMNS = [
    "score",
    "lower",
    "upper",
    "questions",
    "battles",
    "games_left_out",
    "answer_chars",
    "baseline",
    "style score",
    "style lower",
    "style upper",
]
_INITIAL = 1000.0


def win_rate_vs(rating: float | np.ndarray, anchor: float) -> float | np.ndarray:
    """arena-hard's score (``predict_win_rate``): P(beat the baseline), in percent."""
    return 100.0 / (1.0 + 10.0 ** ((anchor - rating) / 400.0))


def score_table(
    judgment_paths: Sequence[str | Path],
    judges: Sequence[str],
    baseline: str,
    strong_weight: int,
    rounds: int,
    seed: int,
    answer_chars: dict[str, float] | None = None,
    style_counts: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Rows (judge, model): the score vs ``baseline`` with its interval, the questions judged,
    the battles, the games left out (no valid label), the answers' mean length, whether the
    row is the baseline's and, with ``style_counts`` (:func:`isqaflow.arena_hard.style.
    read_counts`), the style-controlled score with its interval (NaN without), sorted by score
    within each judge.  ``attrs["style_left_out"]``: judge -> the style features left out of its
    fit as constant over its battles; ``attrs["style_notes"]``: judge -> what its caption says
    of the fit beyond the method (:meth:`isqaflow.arena_hard.style.StyleFit.note`)."""
    if len(judgment_paths) != len(judges):
        raise ValueError(f"{len(judgment_paths)} judgment files for {len(judges)} judges")
    blocks, left_out_features, style_notes = [], {}, {}
    for path, judge in zip(judgment_paths, judges, strict=True):
        read = read_arena_hard_judgments(path, strong_weight=strong_weight, baseline=baseline)
        log.info("%s", read.report())
        battles = read.table
        if battles.empty:
            raise ValueError(f"{path}: judge {judge!r} left no battle (every game without a label)")
        point = bradley_terry(battles, anchor=baseline, initial=_INITIAL)
        boot = bootstrap_ratings(battles, "bt", rounds=rounds, seed=seed, anchor=baseline)
        left_out = _games_left_out(path)
        if style_counts is not None:
            fit = style_scores(battles, style_counts, baseline, rounds, seed)
            styled, left_out_features[judge], style_notes[judge] = (
                fit.scores,
                fit.left_out,
                fit.note(),
            )
        else:
            styled = pd.DataFrame(columns=["style score", "style lower", "style upper"])
        rows = []
        for model in point.index:
            scores = win_rate_vs(boot[model].to_numpy(), _INITIAL)
            lower, upper = np.percentile(scores, [2.5, 97.5])
            own = battles["model_b"] == model
            rows.append(
                {
                    "judge": judge,
                    "model": model,
                    "score": float(win_rate_vs(point[model], point[baseline])),
                    "lower": float(lower),
                    "upper": float(upper),
                    "questions": int(battles.loc[own, "question_id"].nunique())
                    if model != baseline
                    else int(battles["question_id"].nunique()),
                    "battles": int(own.sum()) if model != baseline else len(battles),
                    "games_left_out": left_out.get(model, 0) if model != baseline else 0,
                    "answer_chars": (answer_chars or {}).get(model, float("nan")),
                    # the yardstick's row (the leaderboard marks it: isqaflow.report.board)
                    "baseline": model == baseline,
                    **{
                        column: float(styled[column].get(model, float("nan")))
                        for column in styled.columns
                    },
                }
            )
        blocks.append(pd.DataFrame(rows).sort_values("score", ascending=False, kind="stable"))
    table = pd.concat(blocks).set_index(["judge", "model"])[COLUMNS]
    table.attrs["style_left_out"] = left_out_features
    table.attrs["style_notes"] = style_notes
    return table


def _games_left_out(path: str | Path) -> dict[str, int]:
    """model -> games of its judgments without a valid label (counted, not battles)."""
    out: dict[str, int] = {}
    for _, line in read_jsonl(path):
        bad = sum(game is None or game.get("score") not in LEVELS for game in line.get("games", []))
        out[line["model"]] = out.get(line["model"], 0) + bad
    return out


def answer_lengths(paths: Sequence[str | Path]) -> dict[str, float]:
    """model -> mean characters of its answers (arena-hard's answer files)."""
    out = {}
    for path in paths:
        table = read_arena_hard_answers(path).table
        out[str(table["model"].iloc[0])] = float(table["answer"].str.len().mean())
    return out


def write_tables(
    judgment_paths: Sequence[str | Path],
    judges: Sequence[str],
    baseline_path: str | Path,
    answer_paths: Sequence[str | Path],
    control_paths: Sequence[str | Path],
    out_paths: Sequence[str | Path],
    strong_weight: int,
    rounds: int,
    seed: int,
    style_counts_path: str | Path | None = None,
    tokenizer: str | None = None,
) -> pd.DataFrame:
    """Entry point of rule arena_hard_tables: ``results/tables/arena_hard_scores.{csv,md,tex}``.
    ``style_counts_path``: rule arena_hard_style_counts' file, counted by the tokenizer of model
    ``tokenizer`` (none: style control off, its columns empty and the caption says so)."""
    baseline = str(read_arena_hard_answers(baseline_path).table["model"].iloc[0])
    lengths = answer_lengths([baseline_path, *answer_paths])
    counts = read_counts(style_counts_path) if style_counts_path else None
    table = score_table(
        judgment_paths, judges, baseline, strong_weight, rounds, seed, lengths, counts
    )
    summary = validity_summary(read_control_records(control_paths))
    caption = (
        f"Arena-Hard-Auto: score = win rate against the baseline {baseline} (%), Bradley-Terry "
        f"with {rounds} bootstrap resamples of the battles (95% interval); a strong verdict "
        f"counts {strong_weight} battle(s). "
        + style_note(table, tokenizer)
        + " "
        + validity_note(summary, ARENA_HARD_JUDGE)
    )
    write_table(table, out_paths, caption=caption)
    return table


def style_note(table: pd.DataFrame, tokenizer: str | None) -> str:
    """The caption's sentence on style control: what the style columns are, or that it is off."""
    notes = table.attrs.get("style_notes", {})
    if not notes:
        return "Style control: off (arena_hard.style_control.tokenizer: null), no style columns."
    said = "; ".join(f"{judge}: {note}" for judge, note in notes.items() if note)
    return (
        "style score: the win rate against the baseline at equal style (arena-hard v0.1's style "
        "control: Bradley-Terry with the normalized differences of tokens, headers, list items "
        f"and bold spans; tokens by {tokenizer}'s tokenizer, v0.1 counts cl100k_base), same "
        "battles and bootstrap" + (f" -- {said}" if said else "") + "."
    )
