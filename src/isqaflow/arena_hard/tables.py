"""Arena-Hard-Auto's score table: each answerer's win rate against the baseline, from
Bradley-Terry on the judges' battles, with bootstrap intervals (rules arena_hard_tables and
peer_arena_hard_tables).

As v0.1's ``show_result.py``: the judgment files become battles
(:func:`isqaflow.data.peers.read_arena_hard_judgments`: both games, a strong verdict
``strong_weight`` times -- arena-hard's 3, or 1: one battle per game), Bradley-Terry is fitted
by maximum likelihood (:func:`isqaflow.arena.ratings.bradley_terry.bradley_terry`, anchored at
the baseline) and the score is the predicted win rate against the baseline in percent
(``predict_win_rate``: 100 / (1 + 10^((R_baseline - R) / 400)); the baseline scores 50).  The
interval: percentiles 2.5 and 97.5 of the score over ``rounds`` resamples of the battles
(:func:`isqaflow.arena.ratings.bootstrap.bootstrap_ratings`, as v0.1: battles, not questions,
are resampled).  One block of rows per judge -- one fit over all its files, as
``show_result.py`` fits every model of a judge's folder at once; the caption quotes the judges'
known-answer controls.

A judge's files are the model_judgment files its judge writes (:data:`JUDGMENTS`; rule
arena_hard_judge, or arena-hard's own released ones) or arena-hard's battles files
(:data:`BATTLES`: ``show_result.py``'s ``arena_hard_battles.jsonl``, its strong verdicts already
repeated, its games gone): the peers' released judgments (config ``peers:``) are read by the
same readers and fill the same table (rule peer_arena_hard_tables).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from isqaflow.arena.ratings.bootstrap import bootstrap_ratings
from isqaflow.arena.ratings.bradley_terry import bradley_terry
from isqaflow.arena_hard.judge import LEVELS
from isqaflow.arena_hard.style import read_counts, style_scores
from isqaflow.data.peers import (
    STRONG_WEIGHT,
    read_arena_hard_answers,
    read_arena_hard_battles,
    read_arena_hard_judgments,
)
from isqaflow.io import read_jsonl
from isqaflow.report.tables import write_table
from isqaflow.report.validity import read_control_records, validity_note, validity_summary
from isqaflow.suites.arena_hard import JUDGE as ARENA_HARD_JUDGE

log = logging.getLogger(__name__)

__all__ = [
    "BATTLES",
    "COLUMNS",
    "FORMATS",
    "JUDGMENTS",
    "BattleFile",
    "score_table",
    "style_note",
    "win_rate_vs",
    "write_tables",
]

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

#: a judge's model_judgment files (gen_judgment.py's: two games per question, five levels)
JUDGMENTS = "arena_hard_judgments"
#: show_result.py's battles file (its strong verdicts already repeated, its games gone)
BATTLES = "arena_hard_battles"
#: the formats of a judge's files (the names config ``peers:`` gives them)
FORMATS = (JUDGMENTS, BATTLES)
#: the caption's reason for no style columns in the workflow's own run
STYLE_OFF = "arena_hard.style_control.tokenizer: null"


@dataclass(frozen=True)
class BattleFile:
    """One file of a judge's verdicts against the baseline: its ``path``, the ``judge`` whose
    block of rows it is in (the table's judge column; a judge's files are one fit), its
    ``format`` (:data:`FORMATS`) and, for a judgments file, ``strong_weight`` (the battles per
    strong verdict); a battles file holds its strong verdicts repeated as released (None)."""

    path: str
    judge: str
    format: str = JUDGMENTS
    strong_weight: int | None = STRONG_WEIGHT

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"{self.path}: format {self.format!r} is not one of {FORMATS}")
        if self.format == BATTLES and self.strong_weight is not None:
            raise ValueError(
                f"{self.path}: a battles file holds its strong verdicts repeated as released; "
                f"it takes no strong_weight (got {self.strong_weight!r})"
            )
        if self.format == JUDGMENTS and self.strong_weight is None:
            raise ValueError(f"{self.path}: a judgments file needs its strong_weight")

    def read(self, baseline: str) -> tuple[pd.DataFrame, dict[str, int] | None]:
        """(battles: ``question_id``, ``model_a`` -- the baseline --, ``model_b``, ``winner``;
        model -> games of its judgments without a valid label, None for a battles file, which
        holds no games)."""
        if self.format == BATTLES:
            read = read_arena_hard_battles(self.path, baseline=baseline)
            log.info("%s", read.report())
            return read.table, None
        read = read_arena_hard_judgments(
            self.path, strong_weight=self.strong_weight, baseline=baseline
        )
        log.info("%s", read.report())
        return read.table[["question_id", "model_a", "model_b", "winner"]], _games_left_out(
            self.path
        )


def battle_files(
    paths: Sequence[str | Path],
    judges: Sequence[str],
    strong_weight: int | Sequence[int | None],
    formats: Sequence[str] | None = None,
) -> list[BattleFile]:
    """One :class:`BattleFile` per path: ``judges``, ``formats`` (default: every file a
    judgments file) and ``strong_weight`` (one for all, or one per file) given per path."""
    if len(paths) != len(judges):
        raise ValueError(f"{len(paths)} judgment files for {len(judges)} judges")
    formats = [JUDGMENTS] * len(paths) if formats is None else list(formats)
    weights = (
        [strong_weight] * len(paths)
        if strong_weight is None or isinstance(strong_weight, int)
        else list(strong_weight)
    )
    if len(formats) != len(paths) or len(weights) != len(paths):
        raise ValueError(
            f"{len(paths)} judgment files for {len(formats)} formats and {len(weights)} strong "
            "weights"
        )
    return [
        BattleFile(str(path), judge, fmt, weight if fmt == JUDGMENTS else None)
        for path, judge, fmt, weight in zip(paths, judges, formats, weights, strict=True)
    ]


def win_rate_vs(rating: float | np.ndarray, anchor: float) -> float | np.ndarray:
    """arena-hard's score (``predict_win_rate``): P(beat the baseline), in percent."""
    return 100.0 / (1.0 + 10.0 ** ((anchor - rating) / 400.0))


def score_table(
    judgment_paths: Sequence[str | Path],
    judges: Sequence[str],
    baseline: str,
    strong_weight: int | Sequence[int | None],
    rounds: int,
    seed: int,
    answer_chars: dict[str, float] | None = None,
    style_counts: pd.DataFrame | None = None,
    formats: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Rows (judge, model): the score vs ``baseline`` with its interval, the questions judged,
    the battles, the games left out (no valid label; NaN for a battles file, whose games are
    not in it), the answers' mean length, whether the row is the baseline's and, with
    ``style_counts`` (:func:`isqaflow.arena_hard.style.read_counts`), the style-controlled score
    with its interval (NaN without), sorted by score within each judge.  ``judgment_paths``:
    the files, each with its judge in ``judges`` (a judge's files are one fit), its format in
    ``formats`` (:data:`FORMATS`; default all :data:`JUDGMENTS`) and ``strong_weight`` (one
    for all or one per file; a battles file's is its own).  ``attrs["style_left_out"]``: judge ->
    the style features left out of its fit as constant over its battles;
    ``attrs["style_notes"]``: judge -> what its caption says of the fit beyond the method
    (:meth:`isqaflow.arena_hard.style.StyleFit.note`, or that it has no style fit: a model of
    its battles without style counts)."""
    files = battle_files(judgment_paths, judges, strong_weight, formats)
    blocks, left_out_features, style_notes = [], {}, {}
    for judge in dict.fromkeys(f.judge for f in files):
        mine = [f for f in files if f.judge == judge]
        reads = [f.read(baseline) for f in mine]
        battles = pd.concat([r[0] for r in reads], ignore_index=True)
        if battles.empty:
            paths = ", ".join(f.path for f in mine)
            raise ValueError(
                f"{paths}: judge {judge!r} left no battle (every game without a label)"
            )
        # games without a label per model (the judgments files'); a battles file's models: NaN
        left_out: dict[str, float] = {}
        for table, games in reads:
            for model in table["model_b"].unique() if games is None else ():
                left_out[model] = float("nan")
            for model, n in (games or {}).items():
                left_out[model] = left_out.get(model, 0) + n
        point = bradley_terry(battles, anchor=baseline, initial=_INITIAL)
        boot = bootstrap_ratings(battles, "bt", rounds=rounds, seed=seed, anchor=baseline)
        styled = pd.DataFrame(columns=["style score", "style lower", "style upper"])
        if style_counts is not None:
            without = sorted(set(point.index) - set(style_counts["model"]))
            if without:
                style_notes[judge] = (
                    f"no style score: no style counts of {', '.join(without)} (answers not given)"
                )
            else:
                fit = style_scores(battles, style_counts, baseline, rounds, seed)
                styled, left_out_features[judge], style_notes[judge] = (
                    fit.scores,
                    fit.left_out,
                    fit.note(),
                )
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
    table.attrs["files"] = files
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
    baseline_path: str | Path | None,
    answer_paths: Sequence[str | Path],
    control_paths: Sequence[str | Path],
    out_paths: Sequence[str | Path],
    strong_weight: int | Sequence[int | None],
    rounds: int,
    seed: int,
    style_counts_path: str | Path | None = None,
    tokenizer: str | None = None,
    *,
    formats: Sequence[str] | None = None,
    baseline: str | None = None,
    style_off: str | None = None,
    about: str = "",
) -> pd.DataFrame:
    """Entry point of rules arena_hard_tables and peer_arena_hard_tables:
    ``<tables>/arena_hard_scores.{csv,md,tex}``.  ``baseline_path``: the baseline's answers
    file (its model is the baseline; none: ``baseline`` names it, its answers, if any, among
    ``answer_paths``); ``formats`` and ``strong_weight``: as :func:`score_table`.
    ``style_counts_path``: rule arena_hard_style_counts' file, counted by the tokenizer of model
    ``tokenizer`` (none: style control off, its columns empty and the caption says why:
    ``style_off``, by default :data:`STYLE_OFF`).  ``about``: the caption's first sentence
    where the judgments are not the run's own (the peers' released ones: whose, read how)."""
    named = (
        str(read_arena_hard_answers(baseline_path).table["model"].iloc[0])
        if baseline_path
        else None
    )
    if named and baseline and named != baseline:
        raise ValueError(
            f"{baseline_path}: the baseline's answers are {named!r}'s, not {baseline!r}'s"
        )
    baseline = named or baseline
    if not baseline:
        raise ValueError("arena_hard_scores: no baseline (neither its answers file nor its name)")
    lengths = answer_lengths([*([baseline_path] if baseline_path else []), *answer_paths])
    counts = read_counts(style_counts_path) if style_counts_path else None
    table = score_table(
        judgment_paths,
        judges,
        baseline,
        strong_weight,
        rounds,
        seed,
        lengths,
        counts,
        formats,
    )
    summary = validity_summary(read_control_records(control_paths))
    caption = (
        (about.strip() + " " if about.strip() else "")
        + f"Arena-Hard-Auto: score = win rate against the baseline {baseline} (%), Bradley-Terry "
        f"with {rounds} bootstrap resamples of the battles (95% interval); "
        + weight_note(table.attrs["files"])
        + " "
        + style_note(table, tokenizer, style_off)
        + " "
        + validity_note(summary, ARENA_HARD_JUDGE)
    )
    write_table(table, out_paths, caption=caption)
    return table


def weight_note(files: Sequence[BattleFile]) -> str:
    """The caption's words on how a strong verdict counts, for the judgment and battles files
    read."""
    weights = sorted({f.strong_weight for f in files if f.format == JUDGMENTS})
    parts = []
    if weights:
        parts.append(
            "a strong verdict counts "
            + " or ".join(str(w) for w in weights)
            + " battle(s)"
            + (" in a judgments file" if len(weights) < len(files) else "")
        )
    if any(f.format == BATTLES for f in files):
        parts.append(
            "a battles file (show_result.py's) is read as released, its strong verdicts already "
            "repeated; its games are gone, so its models' games_left_out is empty"
        )
    return "; ".join(parts) + "."


def style_note(table: pd.DataFrame, tokenizer: str | None, style_off: str | None = None) -> str:
    """The caption's sentence on style control: what the style columns are, or that it is off
    and why (``style_off``; default :data:`STYLE_OFF`)."""
    notes = table.attrs.get("style_notes", {})
    if not notes:
        return f"Style control: off ({style_off or STYLE_OFF}), no style columns."
    said = "; ".join(f"{judge}: {note}" for judge, note in notes.items() if note)
    return (
        "style score: the win rate against the baseline at equal style (arena-hard v0.1's style "
        "control: Bradley-Terry with the normalized differences of tokens, headers, list items "
        f"and bold spans; tokens by {tokenizer}'s tokenizer, v0.1 counts cl100k_base), same "
        "battles and bootstrap" + (f" -- {said}" if said else "") + "."
    )
