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
tables (the leaderboard reads their CSVs).

Readable (issue 31): a rank per headline column (DRFR overall, Bradley-Terry) that respects
ties within the interval (:func:`interval_ranks`) and the rows sorted by it; a cell judged by a
judge of the system's own model family carries ``SELF``
(:func:`isqaflow.configcheck.families.judge_system_pairs`); a zero-width interval carries
:data:`DEGENERATE_MARK`; in the Markdown (and so the HTML) view every judged cell links to its
items in the judgment browser (:func:`browser_link`); a short caption ending with each
instrument's controls in brief (:func:`isqaflow.report.validity.validity_brief`; the full text
in results/tables/validity.*, linked) and short footnotes under the table.  The CSV and LaTeX
hold the same text without links; leaderboard_long.csv the numbers (value, lower, upper, n)
with the SELF, zero-width and browser-link columns.

Each suite's reference or baseline is a row (issue 41: LFRQA, the abstract, a peer benchmark's
baseline), marked in source and rank and ranked only where its benchmark ranks it; a section is
headed by its suite's title or, for records that are not the workflow's own (the peers'
released judgments: ``LeaderboardSettings.origins``), by their benchmark, with their publisher
as the rows' source; soft preferences (AlpacaEval) give win rates against their baseline and an
LC win rate, no ratings.  The cells: :mod:`isqaflow.report.board`; the columns from the suites'
tables: :mod:`isqaflow.report.leaderboard_columns`, each suite's builders named and ordered by
its descriptor (:func:`column_builders`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from isqaflow.io import read_json, write_text
from isqaflow.report.front import NOT_DECISIVE, front_page
from isqaflow.report.panel_note import panel_lines
from isqaflow.report.tables import write_table
from isqaflow.report.validity import INSTRUMENTS, cannot_rank, failing, validity_brief
from isqaflow.report.board import PRIOR_MARK, Board, notes, rows_are, short_source
from isqaflow.report.leaderboard_columns import BoardTables
from isqaflow.report.leaderboard_columns import read_ratings as read_ratings  # re-exported
from isqaflow.suites import BOARD_BUILDERS, BOARD_TABLES, RANKED
from isqaflow.suites.base import resolve_function


COVERED_SHOWN = 3


def coverage_note(check: Mapping[str, Any]) -> str:
    """ "3/15" for a full file; for a partial one, which items it covers: per domain for RAG
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
    shown = " ".join(covered[:COVERED_SHOWN]) + (
        f" +{len(covered) - COVERED_SHOWN} more" if len(covered) > COVERED_SHOWN else ""
    )
    return f"{text}, partial: {shown}"


def interval_ranks(numbers: pd.DataFrame) -> pd.Series:
    """system -> its rank in one column: 1 + the number of systems whose whole interval lies above
    its own (Chatbot Arena's rank: systems whose intervals overlap share a rank); a cell without
    an interval counts as the point."""
    lower = numbers["lower"].fillna(numbers["value"]) if "lower" in numbers else numbers["value"]
    upper = numbers["upper"].fillna(numbers["value"]) if "upper" in numbers else numbers["value"]
    ranks = {
        system: 1 + int((lower > up).sum())
        for system, up in zip(numbers["system"], upper, strict=True)
    }
    return pd.Series(ranks, dtype=int)


def rank_columns(board: Board) -> dict[str, pd.Series]:
    """ "rank <column>" -> system -> rank, for every column of the suites' ranked ones
    (:data:`isqaflow.suites.RANKED`: each tag of them, in sort order)."""
    long = pd.DataFrame(board.numbers)
    ranks = {}
    for prefix in RANKED:
        for column in board.columns:
            if column.startswith(prefix):
                rows = long[(long["column"] == column) & long["value"].notna()]
                # a reference or baseline only where its suite ranks it
                rows = rows[~rows["system"].map(board.unranked)]
                ranks[f"rank {column}"] = interval_ranks(rows)
    return ranks


def controls_brief(summary: Mapping[str, Any], board: Board) -> str:
    """The caption's last sentence: each judge and metric the board's cells are built on
    (:attr:`Board.instruments`, in the order of their columns) on its known-answer controls,
    briefly (the full text in results/tables/validity.*)."""
    parts = []
    if board.instruments:
        parts.append(
            "Controls (known answers; in full: the validity table): "
            + "; ".join(validity_brief(summary, instrument) for instrument in board.instruments)
            + "."
        )
    if any(c.startswith("ROUGE") for c in board.columns):
        parts.append("ROUGE has no control (a reference overlap, not a judge).")
    return " ".join(parts)


NUMBERS = ("value", "lower", "upper", "n")


def with_numbers(table: pd.DataFrame, board: Board) -> pd.DataFrame:
    """The CSV view: after each formatted column its numbers, ``<column> value|lower|upper|n``
    (those the column has), so the CSV is read without parsing text."""
    if table.empty:
        return table
    long = pd.DataFrame(board.numbers).drop_duplicates(["system", "column"], keep="last")
    out = table.copy()
    for column in board.columns:
        part = long[long["column"] == column].set_index("system")
        at = out.columns.get_loc(column) + 1
        for stat in NUMBERS:
            if stat in part and part[stat].notna().any():
                out.insert(at, f"{column} {stat}", pd.to_numeric(part[stat]).reindex(out.index))
                at += 1
    return out


def sections(board: Board) -> dict[str, str]:
    """Column (and its "rank <column>") -> its section: the suite's title, or the benchmark of
    the records it is built on (:meth:`Board.origin`); sections in the order their first
    column was put (DRFR, the arena, ISQA's summaries)."""
    out = dict(board.section)
    return out | {f"rank {column}": section for column, section in out.items()}


def section_warnings(board: Board, summary: Mapping[str, Any]) -> dict[str, str]:
    """Suite -> the plain sentence (:func:`isqaflow.report.validity.cannot_rank`) of each failing
    judge or metric its not-decisive cells are built on; suites without one are left out."""
    out = {}
    for section in dict.fromkeys(board.section.values()):
        built_on = {
            pair
            for column, pairs in board.not_decisive.items()
            if board.section[column] == section
            for pair in pairs
        }
        text = " ".join(
            w
            for instrument in INSTRUMENTS
            if (w := cannot_rank(summary, instrument, [n for i, n in built_on if i == instrument]))
        )
        if text:
            out[section] = text
    return out


def rank_text(board: Board, rank_column: str, ranks: pd.Series, system: str) -> str:
    """A system's rank "r of N" (N: the systems ranked in that column), with the cell's
    prior-set mark and :data:`NOT_DECISIVE` where the ranked value carries them; "" unranked."""
    cell = board.cells[system].get(rank_column.removeprefix("rank "), "")
    if system not in ranks:
        return board.references[system][0] if board.unranked(system) and cell else ""
    text = f"{int(ranks[system])} of {len(ranks)}" + (PRIOR_MARK if PRIOR_MARK in cell else "")
    return text + (f" {NOT_DECISIVE}" if cell.endswith(f" {NOT_DECISIVE}") else "")


def sectioned_markdown(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    ranks: Mapping[str, pd.Series],
    file_systems: Mapping[str, Any],
    warnings: Mapping[str, str] | None = None,
    section_of: Mapping[str, str] | None = None,
    unranked: Collection[str] = (),
) -> str:
    """The Markdown view: one compact table per suite -- its systems (those with a cell there), its
    rank, the source and its columns only -- sorted by its rank (a suite without one: by name);
    ``warnings``: a suite's :func:`section_warnings` sentence, first under its title;
    ``section_of``: column -> its section (:func:`sections`); ``unranked``: the references and
    baselines not ranked, after the systems."""
    warnings = warnings or {}
    section_of = section_of or {}
    parts = []
    for section in dict.fromkeys(section_of[c] for c in columns):
        cells = [c for c in columns if section_of[c] == section]
        ranked = [c for c in ranks if section_of[c] == section]
        shown = [r for r in rows if any(r[c] for c in cells)]
        shown.sort(
            key=lambda r: (
                *(ranks[c].get(r["system"], np.inf) for c in ranked),
                r["system"] in unranked,
                r["system"] not in file_systems,
                r["system"],
            )
        )
        frame = pd.DataFrame(
            [
                {
                    "system": r["system"],
                    **{c: r[c] for c in ranked},
                    "source": r["source"],
                    **{c: r[c] for c in cells},
                }
                for r in shown
            ]
        )
        warning = f"**{warnings[section]}**\n\n" if section in warnings else ""
        parts.append(f"{section}:\n\n{warning}" + frame.to_markdown(index=False))
    return "\n\n".join(parts)


@dataclass(frozen=True)
class LeaderboardSettings:
    """What rule leaderboard computes besides its files: ``summary_systems``
    (``"<dataset>/<summarizer>"`` -> the judged systems), ``judge_pairs``
    (:func:`isqaflow.configcheck.families.judge_system_pairs` as dicts: the SELF flags), the
    metric intervals' bootstrap ``rounds`` and ``seed``, and ``origins``: what the records of
    a setting or judge are when they are not the workflow's own (``<suite>:<setting or
    judge>`` -> section, source, baseline, baseline_ranked, verdicts;
    :func:`isqaflow.data.peers.records.leaderboard_origins`, rule peer_leaderboard)."""

    summary_systems: Mapping[str, Sequence[str]]
    judge_pairs: tuple[Mapping[str, Any], ...]
    rounds: int
    seed: int
    origins: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any = None) -> LeaderboardSettings:
        """From the rule's params (summary_systems, judge_pairs, rounds, seed, origins); no
        wildcards."""
        return cls(
            summary_systems=params.summary_systems,
            judge_pairs=tuple(params.judge_pairs),
            rounds=params.rounds,
            seed=params.seed,
            origins=params.origins,
        )


#: A suite's column builder: puts its columns' cells on the board from the tables and settings.
ColumnBuilder = Callable[[Board, BoardTables, LeaderboardSettings], None]

#: Where the builders live: the report floor, this one.  A reference elsewhere would be an import
#: the floors' contract (lint-imports) cannot see -- upward, to a suite's stages, or sideways.
BUILDER_MODULES = "isqaflow.report."


def column_builders(builders: Sequence[tuple[str, str]] | None = None) -> list[ColumnBuilder]:
    """The functions ``builders`` name -- ``(suite, "<module>:<function>")``, default every
    registered suite's in board order (:data:`isqaflow.suites.BOARD_BUILDERS`) -- imported.  A
    reference that does not resolve -- a misspelt module or function, a module outside the
    report floor, a name that is no function -- is an ImportError naming the suite and the
    reference: never skipped, which would drop the suite's columns from the board without a
    word."""
    resolved = []
    for suite, reference in BOARD_BUILDERS if builders is None else builders:
        resolved.append(
            resolve_function(suite, "board_builders", reference, within=BUILDER_MODULES)
        )
    return resolved


def board_inputs(named: Any) -> dict[str, Any]:
    """The suites' tables among a rule's named inputs (``snakemake.input``): those of the
    suites in the run, each under its table name (:data:`isqaflow.suites.BOARD_TABLES`)."""
    return {name: getattr(named, name) for name in BOARD_TABLES if hasattr(named, name)}


def build_leaderboard(
    out_stem: str | Path,
    *,
    tables: Mapping[str, str | Path | None],
    score_paths: Sequence[str | Path],
    validity_summary_path: str | Path,
    systems_path: str | Path | None,
    settings: LeaderboardSettings,
    panel_path: str | Path | None = None,
    panel_loo_path: str | Path | None = None,
    front_path: str | Path | None = None,
) -> pd.DataFrame:
    """Entry point of rule leaderboard: the suites' tables -> leaderboard.{csv,md,tex} and
    leaderboard_long.csv.  ``tables``: table name -> its CSV, for the suites' tables the board
    reads (:data:`isqaflow.suites.BOARD_TABLES`; a suite not in the run has none: a table left
    out or None is read as empty, a name no suite declares is an error); ``systems_path``:
    results/systems/checked.json (system -> {suite: its check record}, none when the run has
    no file-based system), for the source column;
    ``panel_path``/``panel_loo_path``: the judges' audit tables judges_panel.csv and
    judges_panel_loo.csv, whose agreement and leave-one-out lines join the notes
    (:func:`isqaflow.report.panel_note.panel_lines`); ``settings``: :class:`LeaderboardSettings`;
    ``front_path``: the page the report opens on (:mod:`isqaflow.report.front`).  The columns:
    each suite's builders (:func:`column_builders`), in the order the descriptors give them.  Of
    the arena's LC table (arena_length_controlled) only the rows of soft preferences
    (:func:`isqaflow.report.leaderboard_columns.soft_preference_columns`) give cells."""
    unknown = sorted(set(tables) - set(BOARD_TABLES))
    if unknown:
        raise ValueError(
            f"leaderboard: no suite declares the table(s) {unknown} (isqaflow.suites: "
            f"board_tables); declared: {list(BOARD_TABLES)}"
        )
    builders = column_builders()  # before any file is read: a reference that does not resolve
    file_systems = read_json(systems_path) if systems_path else {}
    judge_pairs = settings.judge_pairs
    summary = read_json(validity_summary_path)
    board = Board(
        {(p["suite"], p["judge"], p["system"]) for p in judge_pairs if p["self_family"]},
        {(i, name) for i in INSTRUMENTS for name in failing(summary, i)},
        settings.origins,
    )
    inputs = BoardTables(tables, score_paths)
    for builder in builders:
        builder(board, inputs, settings)
    ranks = rank_columns(board)

    def order(system: str) -> tuple:  # an unranked reference or baseline after the systems
        return (
            *(ranks[c].get(system, np.inf) for c in ranks),
            board.unranked(system),
            system not in file_systems,
            system,
        )

    rows, markdown = [], []
    for system in sorted(board.cells, key=order):
        checks = file_systems.get(system, {})
        if checks:
            source = "file: " + ", ".join(
                f"{suite} ({coverage_note(c)})" for suite, c in sorted(checks.items())
            )
        else:
            source = short_source(board, system)
        # "r of N"; a rank from an interval the prior sets, or from a value that is not
        # decisive, is flagged as that value is
        rank = {c: rank_text(board, c, r, system) for c, r in ranks.items()}
        rows.append(
            {
                "system": system,
                **rank,
                "source": source,
                **{c: board.cells[system].get(c, "") for c in board.columns},
            }
        )
        markdown.append(
            {
                "system": system,
                **rank,
                "source": source,
                **{c: board.markdown_cell(system, c) for c in board.columns},
            }
        )
    table = pd.DataFrame(rows).set_index("system") if rows else pd.DataFrame()
    footnotes = notes(board, list(ranks)) + panel_lines(panel_path, panel_loo_path)
    warnings = " ".join(  # the first screen: a judge or metric that fails its controls says so
        w for i in board.instruments if (w := cannot_rank(summary, i))
    )
    caption = (warnings + " " if warnings else "") + (
        f"Leaderboard: every system across the suites ({rows_are(board)}), one table per suite in "
        "this view (the CSV: one row per system), sorted by rank; notes below the tables. "
        + controls_brief(summary, board)
    )
    stem = Path(out_stem)
    write_table(with_numbers(table, board), [f"{stem}.csv"], digits=1)
    if markdown:  # one compact table per suite
        body = sectioned_markdown(
            markdown,
            board.columns,
            ranks,
            file_systems,
            section_warnings(board, summary),
            sections(board),
            {s for s in board.references if board.unranked(s)},
        )
        write_text(
            f"{stem}.md",
            "\n\n".join([caption, body, *footnotes, "Full controls: [validity](validity.html)."])
            + "\n",
        )
    else:
        write_table(table, [f"{stem}.md"], caption=caption)
    # LaTeX: no links; the notes as its comment
    write_table(table, [f"{stem}.tex"], digits=1, caption=caption + " " + " ".join(footnotes))
    long = pd.DataFrame(board.numbers)
    write_table(
        long.set_index(["system", "column"]) if not long.empty else long,
        [stem.with_name(stem.name + "_long.csv")],
    )
    if front_path is not None:
        write_text(front_path, _front(board, ranks, file_systems, footnotes, summary))
    return table


def _front(board: Board, ranks, file_systems, footnotes: Sequence[str], summary) -> str:
    """The page at a glance: per suite its columns and its systems in rank order."""
    section_of = sections(board)
    parts = []
    for section in dict.fromkeys(board.section.values()):
        columns = [c for c in board.columns if section_of[c] == section]
        ranked = [c for c in ranks if section_of[c] == section]
        systems = sorted(
            (s for s in board.cells if any(board.cells[s].get(c) for c in columns)),
            key=lambda s: (
                *(ranks[c].get(s, np.inf) for c in ranked),
                board.unranked(s),
                s not in file_systems,
                s,
            ),
        )
        parts.append((section, columns, systems))
    coverage = {
        system: f"{system}: file, "
        + "; ".join(f"{suite} {coverage_note(c)}" for suite, c in sorted(checks.items()))
        for system, checks in file_systems.items()
        if system in board.cells
    }
    numbers = pd.DataFrame(board.numbers)
    if not numbers.empty:
        numbers = numbers.drop_duplicates(["system", "column"], keep="last")
    shown_ranks = {
        c: pd.Series(
            {s: text for s in board.cells if (text := rank_text(board, c, r, s))}, dtype=object
        )
        for c, r in ranks.items()
    }
    return front_page(
        parts,
        numbers,
        board.cells,
        shown_ranks,
        coverage,
        footnotes,
        controls_brief(summary, board),
        section_warnings(board, summary),
        # a reference's or baseline's word only (the page is 1,400 px wide; its note in the tables)
        {
            system: board.references[system][0]
            if system in board.references
            else short_source(board, system)
            for system in board.cells
        },
    )
