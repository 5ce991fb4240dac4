"""One leaderboard across the suites (results/tables/leaderboard.{csv,md,tex}).

One row per system -- the models the workflow runs and the systems read from files
(:mod:`isqaflow.data.outputs`) -- with, where the system takes part: InFoBench DRFR
(overall, Easy, Hard), the arena's win and win+tie rates against LFRQA with the
length-controlled win rate, Bradley-Terry and (where it has converged) online Elo with
their intervals, and for
summarizers QAGS, QuestEval and ROUGE (mean over papers with a 95% bootstrap
interval), the summaries' DRFR and their win rate against the abstract.  Every cell
carries its n (instructions, judged pairs, battles' votes, papers), so a system with
``coverage: partial`` is read with its own n.  The numbers are those of the suites'
tables (the leaderboard reads their CSVs); the caption carries each judge's and
metric's known-answer controls (:func:`isqaflow.report.validity.validity_note`, the
numbers of results/tables/validity.*).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from isqaflow.io import read_json, read_jsonl
from isqaflow.report.tables import table_paths, write_table
from isqaflow.report.validity import validity_note
from isqaflow.stats import SMALL_N, SMALL_N_MARK, bootstrap_ci, small_n_note

METRICS = {"qags": "QAGS", "questeval": "QuestEval", "rouge": "ROUGE"}
REFERENCE = "lfrqa"  # isqaflow.arena.players (a floor above this one)
ABSTRACT = "abstract"


def _cell(point: float, lower: float | None = None, upper: float | None = None, n: Any = None,
          digits: int = 1) -> str:
    if point is None or (isinstance(point, float) and np.isnan(point)):
        return "--"
    text = f"{point:.{digits}f}"
    few = n is not None and not pd.isna(n) and int(n) < SMALL_N
    one = n is not None and not pd.isna(n) and int(n) < 2  # a zero-width interval from one item: none
    if lower is not None and upper is not None and not (np.isnan(lower) or np.isnan(upper) or one):
        text += f" [{lower:.{digits}f}, {upper:.{digits}f}]" + (SMALL_N_MARK if few else "")
    if n is not None:
        text += f" (n={int(n)})"
    return text


def _suffix(label: str, values: Sequence[str]) -> str:
    """A column's qualifier (judge, setting, dataset) when the run has more than one."""
    return f" [{label}]" if len(set(values)) > 1 else ""


class _Board:
    def __init__(self) -> None:
        self.cells: dict[str, dict[str, str]] = {}
        self.numbers: list[dict[str, Any]] = []
        self.columns: list[str] = []

    def put(self, system: str, column: str, cell: str, **numbers: Any) -> None:
        if column not in self.columns:
            self.columns.append(column)
        self.cells.setdefault(system, {})[column] = cell
        self.numbers.append({"system": system, "column": column, **numbers})


def drfr_columns(board: _Board, table5_long: pd.DataFrame) -> None:
    judges = list(table5_long["judge"].unique()) if not table5_long.empty else []
    for row in table5_long.to_dict("records"):
        tag = _suffix(row["judge"], judges)
        for label in ("Overall", "Easy", "Hard"):
            if label in row and not pd.isna(row[label]):
                n = row.get(f"{label}_n")
                board.put(row["model"], f"DRFR {label.lower()}{tag}",
                          _cell(100 * row[label], 100 * row[f"{label}_lower"], 100 * row[f"{label}_upper"],
                                None if pd.isna(n) else n),
                          value=100 * row[label], lower=100 * row[f"{label}_lower"],
                          upper=100 * row[f"{label}_upper"], n=n)


def arena_columns(board: _Board, win_rates: pd.DataFrame, ratings: pd.DataFrame) -> None:
    overall = win_rates[win_rates["domain"] == "overall"] if not win_rates.empty else win_rates
    settings = list(overall["setting"].unique()) if not overall.empty else []
    for row in overall.to_dict("records"):
        tag = _suffix(row["setting"], settings)
        n = row["n_valid"]
        board.put(row["model"], f"arena win % vs LFRQA{tag}", _cell(row["win_rate"], n=n),
                  value=row["win_rate"], n=n)
        board.put(row["model"], f"arena win+tie % vs LFRQA{tag}", _cell(row["win_tie_rate"], n=n),
                  value=row["win_tie_rate"], n=n)
        if "LC win rate %" in row and not pd.isna(row["LC win rate %"]):
            board.put(row["model"], f"arena LC win % vs LFRQA{tag}",
                      _cell(row["LC win rate %"], row["LC lower"], row["LC upper"], n),
                      value=row["LC win rate %"], lower=row["LC lower"], upper=row["LC upper"], n=n)
    if ratings.empty:
        return
    settings = list(ratings["setting"].unique())
    for setting, df in ratings.groupby("setting", sort=False):
        # the widest set of battles: with the all-pairs sample when the run has one
        battles = sorted(df["battles"].unique())[-1]
        tag = _suffix(setting, settings)
        for row in df[df["battles"] == battles].to_dict("records"):
            if row["model"] == REFERENCE:
                continue
            for method in ("Bradley-Terry", "Elo"):  # the maximum-likelihood fit first
                if method == "Elo" and str(row.get("Elo converged", True)) == "False":
                    continue  # online Elo that has not converged (arena_ratings: 'spread / BT')
                board.put(row["model"], f"{method}{tag}",
                          _cell(row[f"{method} rating"], row[f"{method} lower"], row[f"{method} upper"],
                                row["votes"], digits=0),
                          value=row[f"{method} rating"], lower=row[f"{method} lower"],
                          upper=row[f"{method} upper"], n=row["votes"], battles=battles)


def summary_system_label(summarizer: str, system: str) -> str:
    """A summaries system's row: a file-based one by its name, a model's by summarizer and prompt."""
    return system if summarizer == system else f"{summarizer} {system}"


def metric_columns(board: _Board, score_paths: Sequence[str | Path], systems: Mapping[str, Sequence[str]],
                   rounds: int, seed: int) -> None:
    rows = [obj for path in score_paths for _, obj in read_jsonl(path)]
    if not rows:
        return
    scores = pd.DataFrame(rows)
    scores = scores[scores["final"].fillna(True).astype(bool)]
    datasets = list(scores["dataset"].unique())
    for (dataset, summarizer, system), df in scores.groupby(["dataset", "summarizer", "system"], sort=True):
        if system not in systems.get(f"{dataset}/{summarizer}", ()):
            continue
        tag = _suffix(dataset, datasets)
        for metric, label in METRICS.items():
            if metric not in df:
                continue
            ci = bootstrap_ci(100 * df[metric].to_numpy(dtype=float), rounds=rounds, seed=seed)
            board.put(summary_system_label(summarizer, system), f"{label}{tag}",
                      _cell(ci["estimate"], ci["lower"], ci["upper"], ci["n"]),
                      value=ci["estimate"], lower=ci["lower"], upper=ci["upper"], n=ci["n"])


def summary_judge_columns(board: _Board, drfr_summaries: pd.DataFrame, arena_summaries: pd.DataFrame) -> None:
    if not drfr_summaries.empty:
        datasets = list(drfr_summaries["dataset"].unique())
        for row in drfr_summaries.to_dict("records"):
            tag = _suffix(row["dataset"], datasets)
            board.put(summary_system_label(row["summarizer"], row["system"]), f"summary DRFR{tag}",
                      _cell(100 * row["drfr"], 100 * row["lower"], 100 * row["upper"], row["n_papers"]),
                      value=100 * row["drfr"], lower=100 * row["lower"], upper=100 * row["upper"],
                      n=row["n_papers"])
    if not arena_summaries.empty:
        against = arena_summaries[arena_summaries["comparison"].str.endswith(f" vs {ABSTRACT}")]
        datasets = list(against["dataset"].unique())
        for row in against.to_dict("records"):
            system = row["comparison"][: -len(f" vs {ABSTRACT}")]
            tag = _suffix(row["dataset"], datasets)
            n = row["pairs"] - row["invalid"]
            board.put(summary_system_label(row["summarizer"], system), f"summary win % vs {ABSTRACT}{tag}",
                      _cell(row["win %"], n=n), value=row["win %"], n=n)


def _read_csv(path: str | Path | None, **kwargs: Any) -> pd.DataFrame:
    if not path or not Path(path).exists() or Path(path).stat().st_size <= 1:
        return pd.DataFrame()
    return pd.read_csv(path, **kwargs)


def read_ratings(path: str | Path | None) -> pd.DataFrame:
    """arena_ratings.csv (two header rows: method, statistic) as flat columns with ``model``."""
    if not path or not Path(path).exists() or Path(path).stat().st_size <= 1:
        return pd.DataFrame()
    table = pd.read_csv(path, header=[0, 1], index_col=0)
    table.columns = [" ".join(p for p in col if not p.startswith("Unnamed")).strip() for col in table.columns]
    return table.rename_axis("model").reset_index()


COVERED_SHOWN = 3


def coverage_note(check: Mapping[str, Any]) -> str:
    """"3/15" for a full file; for a partial one, which items it covers: per domain for RAG
    queries (``<domain>:<id>``), else the first few ids ("3/15, partial: fiqa 2, science 1")."""
    text = f"{check['n']}/{check['n_dataset']}"
    if check.get("coverage") != "partial":
        return text
    covered = list(check.get("covered") or [])
    if not covered:
        return f"{text}, partial"
    if all(":" in key for key in covered):
        per_domain = Counter(key.split(":", 1)[0] for key in covered)
        return f"{text}, partial: " + " ".join(f"{d} {n}" for d, n in sorted(per_domain.items()))
    shown = " ".join(covered[:COVERED_SHOWN]) + (f" +{len(covered) - COVERED_SHOWN} more"
                                                 if len(covered) > COVERED_SHOWN else "")
    return f"{text}, partial: {shown}"


def build_leaderboard(out_stem: str | Path, *, drfr_table5: str | Path | None, drfr_summaries: str | Path | None,
                      arena_win_rates: str | Path | None, arena_ratings: str | Path | None,
                      arena_summaries: str | Path | None, score_paths: Sequence[str | Path],
                      summary_systems: Mapping[str, Sequence[str]], validity_summary_path: str | Path,
                      systems_path: str | Path | None, rounds: int, seed: int) -> pd.DataFrame:
    """Entry point of rule leaderboard: the suites' tables -> leaderboard.{csv,md,tex} and
    leaderboard_long.csv.  ``summary_systems``: ``"<dataset>/<summarizer>"`` -> the judged
    systems; ``systems_path``: results/systems/checked.json (system -> {suite: its check
    record}, none when the run has no file-based system), for the source column."""
    file_systems = read_json(systems_path) if systems_path else {}
    board = _Board()
    drfr_columns(board, _read_csv(drfr_table5))
    arena_columns(board, _read_csv(arena_win_rates), read_ratings(arena_ratings))
    metric_columns(board, score_paths, summary_systems, rounds, seed)
    summary_judge_columns(board, _read_csv(drfr_summaries), _read_csv(arena_summaries))
    rows = []
    for system in sorted(board.cells, key=lambda s: (s not in file_systems, s)):
        checks = file_systems.get(system, {})
        if checks:
            source = "file: " + ", ".join(f"{suite} ({coverage_note(c)})" for suite, c in sorted(checks.items()))
        else:
            source = "model"
        rows.append({"system": system, "source": source,
                     **{c: board.cells[system].get(c, "") for c in board.columns}})
    table = pd.DataFrame(rows).set_index("system") if rows else pd.DataFrame()
    summary = read_json(validity_summary_path)
    notes = [f"{title}: {validity_note(summary, instrument)}" for title, instrument in (
        ("DRFR columns (InFoBench and summaries)", "DRFR judge"), ("Arena columns (answers and summaries)",
                                                                    "arena judge"),
        ("QAGS", "QAGS"), ("QuestEval", "QuestEval"))]
    caption = ("Leaderboard: one row per system across the suites (models the workflow runs and systems "
               "read from files; 'source' gives a file's coverage, n of the dataset's items, and for a partial "
               "file the items it covers: per domain, or its first ids; its cells are computed on those items, "
               "the models' on all). DRFR x100 "
               "with 95% bootstrap CI over instructions (n = instructions); arena win and win+tie rates "
               "against LFRQA (%, n = judged pairs with a valid verdict) and the length-controlled win "
               "rate (AlpacaEval 2.0, ties half, 95% CI over queries; '--' where not identified); "
               "Bradley-Terry and, only where it has converged (arena_ratings), online Elo with 95% "
               "bootstrap CI over queries (n = votes; with the all-pairs battles where the run has them); QAGS, "
               "QuestEval and ROUGE x100 of the final summaries, 95% CI over papers (n = papers); the "
               "summaries' DRFR and win rate against the abstract. " + small_n_note("items (the cell's n)")
               + ". ROUGE has no control (a reference overlap, not a judge). " + " ".join(notes))
    stem = Path(out_stem)
    write_table(table, table_paths(stem), digits=1, caption=caption)
    long = pd.DataFrame(board.numbers)
    write_table(long.set_index(["system", "column"]) if not long.empty else long,
                [stem.with_name(stem.name + "_long.csv")])
    return table
