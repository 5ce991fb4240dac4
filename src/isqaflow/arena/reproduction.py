"""The peers' published numbers recomputed from their released files: docs/reproduction.md.

Each row: a number a benchmark's authors published, the same number computed here from the files
they released (read by :mod:`isqaflow.data.peers`, with this project's statistics), the
difference, the tolerance the test allows (``tests/unit/arena/test_reproduction.py``) and why
any difference remains.  ``ROW_BUILDERS`` lists the builders; each takes the peers' folder
(``../shared/data/peers``, its README names every file's source) and returns rows.  The markdown
is generated (``python tools/reproduction.py``), never edited by hand.

The place for length-controlled (AlpacaEval ``length_controlled_v1``) and style-controlled
(arena-hard) rows: add their builders to ``ROW_BUILDERS`` (marked below).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from isqaflow.arena.ratings.bootstrap import bootstrap_ratings
from isqaflow.arena.ratings.bradley_terry import bradley_terry
from isqaflow.data.peers import (
    drfr,
    raw_win_rate,
    read_alpaca_eval_annotations,
    read_arena_hard_battles,
    read_infobench_eval,
)

ARENA_HARD_MODELS = ("gpt-4-0613", "gpt-3.5-turbo-0125")
ARENA_HARD_BASELINE = "gpt-4-0314"
# arena-hard v0.1 show_result.py: --num-rounds 100, np.random.seed(42), percentiles 2.5 / 97.5.
ARENA_HARD_ROUNDS = 100
ARENA_HARD_SEED = 42
# Below this a difference is float rounding; printed as such, so the file does not change with
# the last bits of a sum.
EXACT = 1e-9


@dataclass(frozen=True)
class ReproductionRow:
    """One published number beside ours.  ``tolerance``: the largest ``|ours - published|`` the
    test accepts; ``why``: the reason a difference remains (or why there is none)."""

    benchmark: str
    quantity: str
    published: float
    ours: float
    tolerance: float
    why: str
    digits: int = 2

    @property
    def difference(self) -> float:
        return self.ours - self.published

    @property
    def within(self) -> bool:
        return abs(self.difference) <= self.tolerance


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _win_rate_vs(rating: float | np.ndarray, anchor: float) -> float | np.ndarray:
    """arena-hard's score (``predict_win_rate``): P(beat the baseline) in percent."""
    return 100.0 / (1.0 + 10.0 ** ((anchor - rating) / 400.0))


def arena_hard_rows(peers: Path) -> list[ReproductionRow]:
    """Arena-Hard-Auto v0.1: the score (Bradley-Terry win rate vs gpt-4-0314) and its interval
    for the two models whose battles are released, against the 2024-07-31 leaderboard."""
    battles = read_arena_hard_battles(peers / "arena-hard/data/arena_hard_battles.jsonl").table
    published = {
        row["model"]: row
        for row in _csv_rows(peers / "arena-hard/leaderboard/arena_hard_leaderboard_20240731.csv")
    }
    point = bradley_terry(battles, anchor=ARENA_HARD_BASELINE)
    boot = bootstrap_ratings(
        battles, "bt", rounds=ARENA_HARD_ROUNDS, seed=ARENA_HARD_SEED, anchor=ARENA_HARD_BASELINE
    )
    rows = []
    for model in ARENA_HARD_MODELS:
        score = float(_win_rate_vs(point[model], point[ARENA_HARD_BASELINE]))
        # the baseline is the anchor in every round, so its rating is 1000 there too
        low, high = np.percentile(_win_rate_vs(boot[model].to_numpy(), 1000.0), [2.5, 97.5])
        rows.append(
            ReproductionRow(
                "Arena-Hard-Auto v0.1",
                f"{model}: score (win rate vs {ARENA_HARD_BASELINE}, %)",
                float(published[model]["score"]),
                score,
                0.01,
                "the same maximum-likelihood fit (each model meets only the baseline, so the "
                "other leaderboard models do not move it; ours adds a 0.001 pseudo-count per "
                "pair); the leaderboard rounds to 2 decimals",
            )
        )
        for bound, ours, column in ((low, "lower", "rating_q025"), (high, "upper", "rating_q975")):
            rows.append(
                ReproductionRow(
                    "Arena-Hard-Auto v0.1",
                    f"{model}: 95% interval, {ours} (%)",
                    float(published[model][column]),
                    float(bound),
                    1.0,
                    f"bootstrap noise: {ARENA_HARD_ROUNDS} resamples each (percentiles 2.5 and "
                    "97.5, as v0.1's show_result.py; its later code prints a 90% interval), "
                    "theirs of the battles of every leaderboard model (pandas' sample, numpy "
                    "seed 42), ours of the released battles of two models (numpy Generator, "
                    "seed 42)",
                )
            )
    return rows


def alpaca_eval_rows(peers: Path) -> list[ReproductionRow]:
    """AlpacaEval 2.0 raw win rates (mean of ``preference - 1``, x100) of every annotated model."""
    published = {
        row[""]: float(row["win_rate"])
        for row in _csv_rows(peers / "alpaca_eval/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv")
    }
    rows = []
    for path in sorted((peers / "alpaca_eval/annotations").glob("*.json")):
        read = read_alpaca_eval_annotations(path)
        left_out = f"; {read.n_skipped} preferences missing, left out as alpaca_eval does" * bool(
            read.n_skipped
        )
        rows.append(
            ReproductionRow(
                "AlpacaEval 2.0",
                f"{path.stem}: win rate (%, {len(read.table)} annotations{left_out})",
                published[path.stem],
                raw_win_rate(read),
                EXACT,
                "the same mean; float rounding only",
                digits=4,
            )
        )
    return rows


def infobench_rows(peers: Path) -> list[ReproductionRow]:
    """InFoBench: the DRFR of the released GPT-4 evaluation file."""
    read = read_infobench_eval(peers / "infobench/GPT4_DecomposeEval.jsonl")
    n_none = read.counts.get("eval None", 0)
    return [
        ReproductionRow(
            "InFoBench",
            f"GPT-4: DRFR (%, {len(read.table)} decomposed questions, {n_none} None)",
            87.6,
            100.0 * drfr(read, none="no"),
            EXACT,
            "published: what InFoBench's `bool_ratio` prints on this file (1971 True of 2250); "
            "the same share, a None counted as NO as `bool_ratio` does",
            digits=4,
        )
    ]


# The row builders, in the order of the table.  stats36: the length-controlled v1 (AlpacaEval)
# and style-controlled (arena-hard) rows join here, as builders with the same signature.
ROW_BUILDERS: list[Callable[[Path], list[ReproductionRow]]] = [
    arena_hard_rows,
    alpaca_eval_rows,
    infobench_rows,
]


def reproduction_rows(peers: str | Path) -> list[ReproductionRow]:
    peers = Path(peers)
    if not peers.is_dir():
        raise FileNotFoundError(f"{peers}: the peers' released files are not there")
    return [row for build in ROW_BUILDERS for row in build(peers)]


def _number(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def _difference(row: ReproductionRow) -> str:
    if abs(row.difference) < EXACT:
        return f"0 (< {EXACT:g})"
    return f"{row.difference:+.{max(row.digits, 4)}f}"


def render_markdown(rows: list[ReproductionRow]) -> str:
    """docs/reproduction.md: one table, a row per published number."""
    lines = [
        "# The peers' published numbers, recomputed from their released files",
        "",
        "Generated by `python tools/reproduction.py` (`isqaflow.arena.reproduction`) from "
        "`../shared/data/peers/` (its README names each file's source); do not edit by hand. "
        "`tests/unit/arena/test_reproduction.py` regenerates it and checks every row's tolerance.",
        "",
        "| benchmark | number | published | ours | difference | tolerance | why a difference remains |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        cells = [
            row.benchmark,
            row.quantity,
            _number(row.published, row.digits),
            _number(row.ours, row.digits),
            _difference(row),
            f"{row.tolerance:g}",
            row.why,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def reproduction_table(rows: list[ReproductionRow]) -> pd.DataFrame:
    """The rows as a frame (for a caller that wants the numbers, e.g. a closing note)."""
    return pd.DataFrame(
        [
            {
                "benchmark": r.benchmark,
                "quantity": r.quantity,
                "published": r.published,
                "ours": r.ours,
                "difference": r.difference,
                "tolerance": r.tolerance,
                "within": r.within,
            }
            for r in rows
        ]
    )


def write_reproduction(peers: str | Path, out: str | Path) -> list[ReproductionRow]:
    """Write docs/reproduction.md from the peers' files; returns the rows."""
    rows = reproduction_rows(peers)
    Path(out).write_text(render_markdown(rows), encoding="utf-8")
    return rows
