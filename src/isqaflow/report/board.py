"""The leaderboard's cells (:class:`Board`; :mod:`isqaflow.report.leaderboard`): each cell's text
and numbers, its marks (SELF, zero width, prior-set, not decisive), its section -- the suite's
title, or the benchmark of records that are not the workflow's own
(:func:`isqaflow.data.peers.records.leaderboard_origins`) -- and each row's source, with the
suites' references and baselines as rows (issue 41), and the notes under the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from isqaflow.report.front import NOT_DECISIVE
from isqaflow.stats import SMALL_N, SMALL_N_MARK, small_n_note
from isqaflow.suites import SUITES

METRICS = {"qags": "QAGS", "questeval": "QuestEval", "rouge": "ROUGE"}
CONTROLLED_METRICS = ("qags", "questeval")  # ROUGE has no control (a reference overlap)
REFERENCE = "lfrqa"  # isqaflow.arena.players (a floor above this one)
ABSTRACT = "abstract"
# Each suite's reference as a row (issue 41), its rank column "reference": LFRQA's answers are
# the arena's yardstick (the win rates are against them), the abstract the summaries'; neither
# is ranked against the systems here (arena_ratings lists LFRQA among its players)
REFERENCE_NOTES = {
    REFERENCE: "reference: LFRQA's answers (the win rates' yardstick)",
    ABSTRACT: "reference: the paper's abstract",
}
#: suite -> its section's title (the suite descriptors'); records of another benchmark (the peers'
#: released judgments) carry their own (LeaderboardSettings.origins)
TITLES = {entry.name: entry.title for entry in SUITES}
SOFT = "soft preferences"  # isqaflow.data.peers.records.PeerFormat.verdicts: no battles
NORMAL_95 = 1.959963984540054  # the normal 97.5% quantile: value +- 1.96 SE
SELF = "SELF"  # a judge of the system's own model family (isqaflow.configcheck.families)
DEGENERATE_MARK = "\u00a7"  # an interval of zero width
# Bradley-Terry: above this share of bootstrap resamples (in %) in which some model or group is
# separated from the rest (no finite maximum-likelihood rating), the pseudo-count prior sets the
# interval's bounds, not the battles (arena_ratings' "prior-set %", whose caption cites this).
PRIOR_SET_LIMIT = 2.5
PRIOR_MARK = "\u00b6"  # pilcrow: an interval (and so a rank) the prior sets
#: suite -> its judgment browser from results/tables/ (the suite descriptors' ``browser``)
BROWSERS = {
    entry.name: "../browser/" + entry.browser.rsplit("/", 1)[-1]
    for entry in SUITES
    if entry.browser
}


def browser_link(suite: str, **filters: str) -> str:
    """The browser page of ``suite`` filtered to ``filters`` (the page reads them from the URL's
    hash: :mod:`isqaflow.report.browser`); values percent-encoded."""
    return (
        BROWSERS[suite]
        + "#"
        + "&".join(f"{key}={quote(str(value), safe='')}" for key, value in filters.items())
    )


def run_and_judge(setting: str) -> tuple[str, str]:
    """An arena setting label "<retriever>-k<k>.<judge>" as (run, judge)."""
    run, _, judge = str(setting).partition(".")
    return run, judge


def cell_text(
    point: float,
    lower: float | None = None,
    upper: float | None = None,
    n: Any = None,
    digits: int = 1,
    exact: bool = False,
) -> str:
    """``exact``: an exact interval (Clopper-Pearson), which keeps its coverage at small n (no
    small-n mark)."""
    if point is None or (isinstance(point, float) and np.isnan(point)):
        return "--"
    text = f"{point:.{digits}f}"
    few = not exact and n is not None and not pd.isna(n) and int(n) < SMALL_N
    one = (
        n is not None and not pd.isna(n) and int(n) < 2
    )  # a zero-width interval from one item: none
    if lower is not None and upper is not None and not (np.isnan(lower) or np.isnan(upper) or one):
        text += f" [{lower:.{digits}f}, {upper:.{digits}f}]" + (SMALL_N_MARK if few else "")
        if upper - lower == 0:  # every resample gave the same value: no certainty
            text += DEGENERATE_MARK
    if n is not None:
        text += f" (n={int(n)})"
    return text


def column_suffix(label: str, values: Sequence[str]) -> str:
    """A column's qualifier (judge, setting, dataset) when the run has more than one."""
    return f" [{label}]" if len(set(values)) > 1 else ""


class Board:
    """The cells of the leaderboard; ``self_judged``: (suite, judge, system) judged by a judge of
    its own family (systems of ISQA's summaries as ``summaries:<summarizer>``); ``failing``:
    (instrument, name) of the judges and metrics that fail their known-answer controls
    (:func:`isqaflow.report.validity.failing`), whose cells are marked :data:`NOT_DECISIVE`."""

    def __init__(
        self,
        self_judged: set[tuple[str, str, str]] | frozenset = frozenset(),
        failing: set[tuple[str, str]] | frozenset = frozenset(),
        origins: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.origins = origins or {}
        self.section: dict[str, str] = {}  # column -> the section it is in
        self.sources: dict[str, set[str]] = {}  # system -> the sources of its cells' records
        # system -> (its rank word, its source) for a reference or baseline; ranked: those the
        # suite ranks among its systems
        self.references: dict[str, tuple[str, str]] = {}
        self.ranked_references: set[str] = set()
        self.cells: dict[str, dict[str, str]] = {}
        self.links: dict[str, dict[str, str]] = {}
        self.numbers: list[dict[str, Any]] = []
        self.columns: list[str] = []
        self.self_judged = self_judged
        self.failing = failing
        # column -> the failing (instrument, name) its not-decisive cells are built on
        self.not_decisive: dict[str, set[tuple[str, str]]] = {}
        # the judges and metrics the cells are built on, in the order of their first cell (the
        # caption gives each one's known-answer controls)
        self.instruments: dict[str, None] = {}

    def is_self(self, suite: str, judges: Sequence[str], system: str) -> bool:
        return any((suite, judge, system) in self.self_judged for judge in judges)

    def origin(self, suite: str, key: str) -> tuple[str, Mapping[str, Any]]:
        """(section, origin) of the cells of ``suite``'s setting or judge ``key``: the records'
        own (:func:`isqaflow.data.peers.records.leaderboard_origins`) where they carry one, else
        the suite's title and no origin."""
        origin = self.origins.get(f"{suite}:{key}", {})
        return origin.get("section", TITLES[suite]), origin

    def shown(self, suite: str, key: str) -> bool:
        """Whether ``suite``'s columns show the cells of its setting or judge ``key``: not where
        the records' origin says another suite's columns show them (``shown: False``: the peers'
        arena-hard battles, read by the arena's tables beside Arena-Hard's own)."""
        return bool(self.origins.get(f"{suite}:{key}", {}).get("shown", True))

    def reference(self, system: str, note: str, ranked: bool = False) -> None:
        """``system`` is its suite's reference or baseline: ``note`` its source, ranked only
        where the suite ranks it among its systems."""
        self.references[system] = (
            "reference" if note.startswith("reference") else "baseline",
            note,
        )
        if ranked:
            self.ranked_references.add(system)

    def unranked(self, system: str) -> bool:
        return system in self.references and system not in self.ranked_references

    def mark(self, system: str, column: str, text: str, section: str) -> None:
        """A cell of text only (a reference's "reference" in the columns measured against it)."""
        if column not in self.columns:
            self.columns.append(column)
        self.section.setdefault(column, section)
        self.cells.setdefault(system, {})[column] = text

    def put(
        self,
        system: str,
        column: str,
        cell: str,
        link: str | None = None,
        self_judged: bool = False,
        built_on: Sequence[tuple[str, str]] = (),
        section: str = "",
        source: str | None = None,
        **numbers: Any,
    ) -> None:
        """``built_on``: the (instrument, name) of the judges or metrics the value comes from;
        ``section``: the column's section (:meth:`origin`), ``source`` that of the records (none:
        the workflow's own)."""
        if column not in self.columns:
            self.columns.append(column)
        self.section.setdefault(column, section)
        if source:
            self.sources.setdefault(system, set()).add(source)
        if self_judged:
            cell += f" {SELF}"
        self.instruments.update(dict.fromkeys(instrument for instrument, _ in built_on))
        failed = set(built_on) & set(self.failing)
        if failed:
            cell += f" {NOT_DECISIVE}"
            self.not_decisive.setdefault(column, set()).update(failed)
        self.cells.setdefault(system, {})[column] = cell
        if link:
            self.links.setdefault(system, {})[column] = link
        lower, upper = numbers.get("lower"), numbers.get("upper")
        degenerate = (
            lower is not None and upper is not None and not pd.isna(lower) and lower == upper
        )
        self.numbers.append(
            {
                "system": system,
                "column": column,
                **numbers,
                "self_judged": self_judged,
                "degenerate": degenerate,
                "not_decisive": bool(failed),
                "browser": link or "",
            }
        )

    def markdown_cell(self, system: str, column: str) -> str:
        """The cell as a Markdown link to its items in the judgment browser (where it has one)."""
        cell, link = self.cells[system].get(column, ""), self.links.get(system, {}).get(column)
        return f"[{cell}]({link})" if cell and link else cell


CELL_NOTES = (
    (("DRFR ",), "DRFR x100, CI over instructions"),
    (
        ("arena win",),
        "arena win and win+tie % against LFRQA (n = pairs with a valid verdict, one per query; "
        "exact Clopper-Pearson 95% CI from the counts) and the length-controlled win rate "
        "(AlpacaEval 2.0, ties half; '--' where not identified)",
    ),
    (
        ("Bradley-Terry", "Elo"),
        "Bradley-Terry, and online Elo only where it has converged (n = votes)",
    ),
    (
        ("QAGS", "QuestEval", "ROUGE"),
        "QAGS, QuestEval, ROUGE x100 of the final summaries over papers",
    ),
    (("summary ",), "the summaries' DRFR and win % against the abstract"),
    (
        ("Arena-Hard",),
        "Arena-Hard-Auto's score: win rate % against its baseline from Bradley-Terry on both "
        "games of each question, bootstrap 95% CI over battles (n = questions); 'style-controlled "
        "score': the same at equal style (arena-hard's style control: length and markdown)",
    ),
)


def notes(board: Board, ranks: Sequence[str]) -> list[str]:
    """The footnotes under the table (Markdown; the full control text one link away)."""
    cells = " ".join(text for row in board.cells.values() for text in row.values())
    # each kind of column's reading, for the kinds the board has (all of them: the embedded run)
    kinds = [
        text for prefixes, text in CELL_NOTES if any(c.startswith(prefixes) for c in board.columns)
    ]
    lines = [
        "Cells: value [95% CI] (n); each judged cell links to its items in the judgment browser. "
        + "; ".join(kinds)
        + (". " if kinds else "")
        + "'source': a file's coverage (n of the dataset's items; its cells are on those items)."
    ]
    if board.references:
        lines.append(
            "reference / baseline (source and rank): each suite's yardstick as a row -- LFRQA's "
            "answers, the paper's abstract, a benchmark's baseline -- 'reference' or 'baseline' in "
            "the columns measured against it; not ranked against the systems unless its benchmark "
            "ranks it (arena-hard's leaderboard lists its baseline among its models). InFoBench's "
            "DRFR has none (a share of the instructions' requirements met)."
        )
    if any(c.startswith("LC win % vs ") for c in board.columns):
        lines.append(
            "win % vs <baseline>: a judge's soft preferences (AlpacaEval's annotations) averaged, "
            "ties half, 95% CI value +- 1.96 AlpacaEval's standard error (n = annotated "
            "instructions); a soft preference is no battle outcome, so no Bradley-Terry or Elo. "
            "LC win % (<GLM>): the length-controlled win rate under the GLM named (noreg: "
            "unregularised, this workflow's default; AlpacaEval's leaderboard publishes "
            "length_controlled_v1: config arena.length_control), bootstrap 95% CI; 'not "
            "identified' where the data do not decide it (arena_length_controlled's 'LC status')."
        )
    if ranks:
        lines.append(
            "rank: 1 + the systems whose whole interval lies above this one's (overlapping intervals "
            "share a rank), in "
            + ", ".join(c.removeprefix("rank ") for c in ranks)
            + "; rows sorted by rank."
        )
    if f" {SELF}" in cells:
        lines.append(
            f"{SELF}: judged by a judge of the system's own model family (or its own model), whose "
            "verdicts may favour it (judges_self_preference)."
        )
    if SMALL_N_MARK in cells:
        lines.append(small_n_note("items (the cell's n)") + ".")
    if PRIOR_MARK in cells:
        lines.append(
            f"{PRIOR_MARK} Bradley-Terry interval set by the pseudo-count prior: in more than "
            f"{PRIOR_SET_LIMIT:g}% of the bootstrap resamples some model or group won or lost every "
            "battle (no finite rating; arena_ratings' 'prior-set %'), so its bounds and its rank "
            "say more about the prior than about the battles."
        )
    if f" {NOT_DECISIVE}" in cells:
        lines.append(
            f"{NOT_DECISIVE}: built on a judge or metric that did no better than chance on some of "
            "its known-answer controls (the validity table): the value shows what it said, not "
            "which system is better, and so does its rank."
        )
    if DEGENERATE_MARK in cells:
        lines.append(
            f"{DEGENERATE_MARK} interval of zero width: every bootstrap resample gave the same value "
            "(e.g. all wins or all ties); not certainty."
        )
    return lines


def rows_are(board: Board) -> str:
    """What the caption says the rows are: the workflow's own systems (its models and systems
    read from files) and/or the systems of records read from elsewhere, by their source."""
    released = sorted({source for sources in board.sources.values() for source in sources})
    own = any(s not in board.references and not board.sources.get(s) for s in board.cells)
    parts = (
        ["the models the workflow runs and systems read from files"] if own or not released else []
    )
    if released:
        parts.append("the systems of " + ", ".join(released) + ", judged by no model of this run")
    return "; ".join(parts)


def short_source(board: Board, system: str) -> str:
    """A row's source where no file brought it: a reference's or baseline's note, else the
    sources of its records (the peers' released judgments and their publisher), else "model"
    (the workflow ran it)."""
    if system in board.references:
        return board.references[system][1]
    return "; ".join(sorted(board.sources.get(system, ()))) or "model"
