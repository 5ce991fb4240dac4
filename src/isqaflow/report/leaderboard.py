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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from isqaflow.io import read_json, read_jsonl, write_text
from isqaflow.report.front import NOT_DECISIVE, front_page
from isqaflow.report.panel_note import panel_lines
from isqaflow.report.tables import write_table
from isqaflow.report.validity import INSTRUMENTS, cannot_rank, failing, validity_brief
from isqaflow.stats import SMALL_N, SMALL_N_MARK, bootstrap_ci, share_test, small_n_note
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
#: the judgment browsers, from results/tables/ (rules arena_browser, drfr_browser)
BROWSERS = {"arena": "../browser/arena.html", "drfr": "../browser/drfr.html"}


def browser_link(suite: str, **filters: str) -> str:
    """The browser page of ``suite`` filtered to ``filters`` (the page reads them from the URL's
    hash: :mod:`isqaflow.report.browser`); values percent-encoded."""
    return (
        BROWSERS[suite]
        + "#"
        + "&".join(f"{key}={quote(str(value), safe='')}" for key, value in filters.items())
    )


def _run_and_judge(setting: str) -> tuple[str, str]:
    """An arena setting label "<retriever>-k<k>.<judge>" as (run, judge)."""
    run, _, judge = str(setting).partition(".")
    return run, judge


def _cell(
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


def _suffix(label: str, values: Sequence[str]) -> str:
    """A column's qualifier (judge, setting, dataset) when the run has more than one."""
    return f" [{label}]" if len(set(values)) > 1 else ""


class _Board:
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

    def is_self(self, suite: str, judges: Sequence[str], system: str) -> bool:
        return any((suite, judge, system) in self.self_judged for judge in judges)

    def origin(self, suite: str, key: str) -> tuple[str, Mapping[str, Any]]:
        """(section, origin) of the cells of ``suite``'s setting or judge ``key``: the records'
        own (:func:`isqaflow.data.peers.records.leaderboard_origins`) where they carry one, else
        the suite's title and no origin."""
        origin = self.origins.get(f"{suite}:{key}", {})
        return origin.get("section", TITLES[suite]), origin

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


def drfr_columns(board: _Board, table5_long: pd.DataFrame) -> None:
    judges = list(table5_long["judge"].unique()) if not table5_long.empty else []
    for row in table5_long.to_dict("records"):
        tag = _suffix(row["judge"], judges)
        section, origin = board.origin("drfr", row["judge"])
        for label in ("Overall", "Easy", "Hard"):
            if label in row and not pd.isna(row[label]):
                n = row.get(f"{label}_n")
                board.put(
                    row["model"],
                    f"DRFR {label.lower()}{tag}",
                    _cell(
                        100 * row[label],
                        100 * row[f"{label}_lower"],
                        100 * row[f"{label}_upper"],
                        None if pd.isna(n) else n,
                    ),
                    link=browser_link(
                        "drfr", system=row["model"], judge=row["judge"], kind="response"
                    ),
                    self_judged=board.is_self("drfr", [row["judge"]], row["model"]),
                    built_on=[("DRFR judge", row["judge"])],
                    section=section,
                    source=origin.get("source"),
                    value=100 * row[label],
                    lower=100 * row[f"{label}_lower"],
                    upper=100 * row[f"{label}_upper"],
                    n=n,
                )


def exact_interval(percent: float, n: Any) -> tuple[float, float]:
    """The exact (Clopper-Pearson) 95% interval, in %, of a share given in % of ``n`` independent
    pairs (one per query and system: the arena's reference pairs); NaN without pairs."""
    if n is None or pd.isna(n) or int(n) < 1 or pd.isna(percent):
        return np.nan, np.nan
    test = share_test(round(percent * int(n) / 100), int(n), 0.5)
    return 100 * test["lower"], 100 * test["upper"]


def arena_columns(board: _Board, win_rates: pd.DataFrame, ratings: pd.DataFrame) -> None:
    overall = win_rates[win_rates["domain"] == "overall"] if not win_rates.empty else win_rates
    settings = list(overall["setting"].unique()) if not overall.empty else []
    for row in overall.to_dict("records"):
        tag = _suffix(row["setting"], settings)
        n = row["n_valid"]
        run, judge = _run_and_judge(row["setting"])
        section, origin = board.origin("arena", row["setting"])
        where = {
            "link": browser_link(
                "arena", system=row["model"], setting=run, judge=judge, kind="reference"
            ),
            "self_judged": board.is_self("arena", [judge], row["model"]),
            "built_on": [("arena judge", judge)],
            "section": section,
            "source": origin.get("source"),
        }
        for column, rate in (
            (f"arena win % vs LFRQA{tag}", row["win_rate"]),
            (f"arena win+tie % vs LFRQA{tag}", row["win_tie_rate"]),
        ):
            lower, upper = exact_interval(rate, n)
            board.put(
                row["model"],
                column,
                _cell(rate, lower, upper, n, exact=True),
                **where,
                value=rate,
                lower=lower,
                upper=upper,
                n=n,
            )
        if "LC win rate %" in row and not pd.isna(row["LC win rate %"]):
            board.put(
                row["model"],
                f"arena LC win % vs LFRQA{tag}",
                _cell(row["LC win rate %"], row["LC lower"], row["LC upper"], n),
                **where,
                value=row["LC win rate %"],
                lower=row["LC lower"],
                upper=row["LC upper"],
                n=n,
            )
    if not overall.empty:  # LFRQA: what the win rates are against
        board.reference(REFERENCE, REFERENCE_NOTES[REFERENCE])
        for column in [c for c in board.columns if c.startswith("arena ") and "vs LFRQA" in c]:
            board.mark(REFERENCE, column, "reference", board.section[column])
    if ratings.empty:
        return
    settings = list(ratings["setting"].unique())
    for setting, df in ratings.groupby("setting", sort=False):
        # the widest set of battles: with the all-pairs sample when the run has one
        battles = max(df["battles"].unique())
        tag = _suffix(setting, settings)
        run, judge = _run_and_judge(setting)
        section, origin = board.origin("arena", setting)
        # the reference (LFRQA) or the benchmark's baseline: a row, ranked only as its suite
        # ranks it (origin baseline_ranked)
        baseline = origin.get("baseline") or REFERENCE
        if baseline in set(df["model"]):
            board.reference(
                baseline,
                REFERENCE_NOTES.get(baseline) or f"baseline; {origin['source']}",
                ranked=bool(origin.get("baseline_ranked")),
            )
        for row in df[df["battles"] == battles].to_dict("records"):
            prior = row.get("Bradley-Terry prior-set %", np.nan)
            prior_set = not pd.isna(prior) and float(prior) > PRIOR_SET_LIMIT
            for method in ("Bradley-Terry", "Elo"):  # the maximum-likelihood fit first
                if method == "Elo" and str(row.get("Elo converged", True)) == "False":
                    continue  # online Elo that has not converged (arena_ratings: 'spread / BT')
                extra = (
                    {"prior_set_pct": float(prior)}
                    if method == "Bradley-Terry" and not pd.isna(prior)
                    else {}
                )
                board.put(
                    row["model"],
                    f"{method}{tag}",
                    _cell(
                        row[f"{method} rating"],
                        row[f"{method} lower"],
                        row[f"{method} upper"],
                        row["votes"],
                        digits=0,
                    )
                    + (PRIOR_MARK if method == "Bradley-Terry" and prior_set else ""),
                    link=browser_link("arena", system=row["model"], setting=run, judge=judge),
                    self_judged=board.is_self("arena", [judge], row["model"]),
                    built_on=[("arena judge", judge)],
                    section=section,
                    source=origin.get("source"),
                    value=row[f"{method} rating"],
                    lower=row[f"{method} lower"],
                    upper=row[f"{method} upper"],
                    n=row["votes"],
                    battles=battles,
                    **extra,
                )


def summary_system_label(summarizer: str, system: str) -> str:
    """A summaries system's row: a file-based one by its name, a model's by summarizer and prompt."""
    return system if summarizer == system else f"{summarizer} {system}"


def metric_columns(
    board: _Board,
    score_paths: Sequence[str | Path],
    systems: Mapping[str, Sequence[str]],
    rounds: int,
    seed: int,
) -> None:
    rows = [obj for path in score_paths for _, obj in read_jsonl(path)]
    if not rows:
        return
    scores = pd.DataFrame(rows)
    scores = scores[scores["final"].fillna(True).astype(bool)]
    datasets = list(scores["dataset"].unique())
    for (dataset, summarizer, system), df in scores.groupby(
        ["dataset", "summarizer", "system"], sort=True
    ):
        if system not in systems.get(f"{dataset}/{summarizer}", ()):
            continue
        tag = _suffix(dataset, datasets)
        for metric, label in METRICS.items():
            if metric not in df:
                continue
            ci = bootstrap_ci(100 * df[metric].to_numpy(dtype=float), rounds=rounds, seed=seed)
            board.put(
                summary_system_label(summarizer, system),
                f"{label}{tag}",
                _cell(ci["estimate"], ci["lower"], ci["upper"], ci["n"]),
                # QAGS and QuestEval record their controls under their own label and key
                built_on=[(label, metric)] if metric in CONTROLLED_METRICS else [],
                section=TITLES["isqa"],
                value=ci["estimate"],
                lower=ci["lower"],
                upper=ci["upper"],
                n=ci["n"],
            )


def summary_judge_columns(
    board: _Board,
    drfr_summaries: pd.DataFrame,
    arena_summaries: pd.DataFrame,
    drfr_judges: Sequence[str] = (),
) -> None:
    """``drfr_judges``: the DRFR judges whose verdicts the summaries' DRFR pools."""
    if not drfr_summaries.empty:
        datasets = list(drfr_summaries["dataset"].unique())
        for row in drfr_summaries.to_dict("records"):
            tag = _suffix(row["dataset"], datasets)
            board.put(
                summary_system_label(row["summarizer"], row["system"]),
                f"summary DRFR{tag}",
                _cell(100 * row["drfr"], 100 * row["lower"], 100 * row["upper"], row["n_papers"]),
                link=browser_link(
                    "drfr",
                    system=row["system"],
                    setting=f"summaries {row['dataset']}/{row['summarizer']}",
                    kind="summary",
                ),
                self_judged=board.is_self("drfr", drfr_judges, f"summaries:{row['summarizer']}"),
                built_on=[("DRFR judge", judge) for judge in drfr_judges],
                section=TITLES["isqa"],
                value=100 * row["drfr"],
                lower=100 * row["lower"],
                upper=100 * row["upper"],
                n=row["n_papers"],
            )
    if not arena_summaries.empty:
        against = arena_summaries[arena_summaries["comparison"].str.endswith(f" vs {ABSTRACT}")]
        datasets = list(against["dataset"].unique())
        judges = list(against["judge"].unique())
        for row in against.to_dict("records"):
            system = row["comparison"][: -len(f" vs {ABSTRACT}")]
            # one column per dataset and arena judge: with two judges one column would keep
            # whichever row came last
            tag = _suffix(row["dataset"], datasets) + _suffix(row["judge"], judges)
            n = row["pairs"] - row["invalid"]
            board.put(
                summary_system_label(row["summarizer"], system),
                f"summary win % vs {ABSTRACT}{tag}",
                _cell(row["win %"], n=n),
                link=browser_link(
                    "arena",
                    system=system,
                    setting=f"summaries {row['dataset']}/{row['summarizer']}",
                    judge=row["judge"],
                    kind="summary reference",
                ),
                self_judged=board.is_self(
                    "arena", [row["judge"]], f"summaries:{row['summarizer']}"
                ),
                built_on=[("arena judge", row["judge"])],
                section=TITLES["isqa"],
                value=row["win %"],
                n=n,
            )
        if not against.empty:  # the abstract: what these win rates are against
            board.reference(ABSTRACT, REFERENCE_NOTES[ABSTRACT])
            for column in [
                c for c in board.columns if c.startswith(f"summary win % vs {ABSTRACT}")
            ]:
                board.mark(ABSTRACT, column, "reference", TITLES["isqa"])


def soft_preference_columns(board: _Board, lc: pd.DataFrame) -> None:
    """The systems of records of soft preferences (AlpacaEval's annotations: origin verdicts
    :data:`SOFT`), each against its benchmark's baseline, from the length-controlled table: the
    raw win rate (the mean preference, ties half) with a normal 95% interval from AlpacaEval's
    standard error, and the LC win rate under the GLM the table names ('not identified' where
    the data do not decide it, its reason in leaderboard_long's status). A soft preference is no
    battle outcome: no Bradley-Terry, no Elo (:func:`isqaflow.arena.tables.ratings_table`)."""
    if lc.empty:
        return
    for row in lc.to_dict("records"):
        section, origin = board.origin("arena", row["setting"])
        if origin.get("verdicts") != SOFT or row["kind"] != "reference":
            continue
        _, judge = _run_and_judge(row["setting"])
        baseline, n = row["baseline"], row["n"]
        glm = row.get("glm") if isinstance(row.get("glm"), str) else "noreg"
        where = {
            "self_judged": board.is_self("arena", [judge], row["system"]),
            "built_on": [("arena judge", judge)],
            "section": section,
            "source": origin.get("source"),
        }
        rate, se = row["win rate (ties half) %"], row.get("win rate SE", np.nan)
        lower, upper = rate - NORMAL_95 * se, rate + NORMAL_95 * se
        win, lc_column = f"win % vs {baseline}", f"LC win % vs {baseline} ({glm})"
        board.put(
            row["system"],
            win,
            _cell(rate, lower, upper, n),
            **where,
            value=rate,
            lower=lower,
            upper=upper,
            n=n,
            se=se,
        )
        identified = not pd.isna(row["LC win rate %"])
        board.put(
            row["system"],
            lc_column,
            _cell(row["LC win rate %"], row["LC lower"], row["LC upper"], n)
            if identified
            else "not identified",
            **where,
            value=row["LC win rate %"],
            lower=row["LC lower"],
            upper=row["LC upper"],
            n=n,
            status=row["LC status"],
        )
        board.reference(baseline, f"baseline; {origin['source']}")
        for column in (win, lc_column):
            board.mark(baseline, column, "baseline", section)


def _read_csv(path: str | Path | None, **kwargs: Any) -> pd.DataFrame:
    if not path or not Path(path).exists() or Path(path).stat().st_size <= 1:
        return pd.DataFrame()
    return pd.read_csv(path, **kwargs)


def read_ratings(path: str | Path | None) -> pd.DataFrame:
    """arena_ratings.csv (two header rows: method, statistic) as flat columns with ``model``."""
    if not path or not Path(path).exists() or Path(path).stat().st_size <= 1:
        return pd.DataFrame()
    table = pd.read_csv(path, header=[0, 1], index_col=0)
    table.columns = [
        " ".join(p for p in col if not p.startswith("Unnamed")).strip() for col in table.columns
    ]
    return table.rename_axis("model").reset_index()


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


RANKED = ("DRFR overall", "Bradley-Terry")  # the columns ranked (each tag of them), in sort order


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


def rank_columns(board: _Board) -> dict[str, pd.Series]:
    """ "rank <column>" -> system -> rank, for every column of :data:`RANKED`."""
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


def notes(board: _Board, ranks: Sequence[str]) -> list[str]:
    """The footnotes under the table (Markdown; the full control text one link away)."""
    cells = " ".join(text for row in board.cells.values() for text in row.values())
    lines = [
        (
            "Cells: value [95% CI] (n); each judged cell links to its items in the judgment browser. DRFR x100, "
            "CI over instructions; arena win and win+tie % against LFRQA (n = pairs with a valid verdict, one per "
            "query; exact Clopper-Pearson 95% CI from the counts) and "
            "the length-controlled win rate (AlpacaEval 2.0, ties half; '--' where not identified); "
            "Bradley-Terry, and online Elo only where it has converged (n = votes); QAGS, QuestEval, ROUGE "
            "x100 of the final summaries over papers; the summaries' DRFR and win % against the abstract. "
            "'source': a file's coverage (n of the dataset's items; its cells are on those items)."
        )
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


def controls_brief(summary: Mapping[str, Any]) -> str:
    """The caption's last sentence: each column's instrument on its known-answer controls, briefly
    (the full text in results/tables/validity.*)."""
    return (
        "Controls (known answers; in full: the validity table): "
        + "; ".join(
            validity_brief(summary, instrument)
            for instrument in ("DRFR judge", "arena judge", "QAGS", "QuestEval")
        )
        + ". ROUGE has no control (a reference overlap, not a judge)."
    )


NUMBERS = ("value", "lower", "upper", "n")


def with_numbers(table: pd.DataFrame, board: _Board) -> pd.DataFrame:
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


def sections(board: _Board) -> dict[str, str]:
    """Column (and its "rank <column>") -> its section: the suite's title, or the benchmark of
    the records it is built on (:meth:`_Board.origin`); sections in the order their first
    column was put (DRFR, the arena, ISQA's summaries)."""
    out = dict(board.section)
    return out | {f"rank {column}": section for column, section in out.items()}


def section_warnings(board: _Board, summary: Mapping[str, Any]) -> dict[str, str]:
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


def rank_text(board: _Board, rank_column: str, ranks: pd.Series, system: str) -> str:
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


def build_leaderboard(
    out_stem: str | Path,
    *,
    drfr_table5: str | Path | None,
    drfr_summaries: str | Path | None,
    arena_win_rates: str | Path | None,
    arena_ratings: str | Path | None,
    arena_summaries: str | Path | None,
    score_paths: Sequence[str | Path],
    validity_summary_path: str | Path,
    systems_path: str | Path | None,
    settings: LeaderboardSettings,
    panel_path: str | Path | None = None,
    panel_loo_path: str | Path | None = None,
    front_path: str | Path | None = None,
    arena_length_controlled: str | Path | None = None,
) -> pd.DataFrame:
    """Entry point of rule leaderboard: the suites' tables -> leaderboard.{csv,md,tex} and
    leaderboard_long.csv.  ``systems_path``: results/systems/checked.json (system -> {suite: its
    check record}, none when the run has no file-based system), for the source column;
    ``panel_path``/``panel_loo_path``: the judges' audit tables judges_panel.csv and
    judges_panel_loo.csv, whose agreement and leave-one-out lines join the notes
    (:func:`isqaflow.report.panel_note.panel_lines`); ``settings``: :class:`LeaderboardSettings`;
    ``front_path``: the page the report opens on (:mod:`isqaflow.report.front`);
    ``arena_length_controlled``: the arena's LC table, whose rows of soft preferences
    (:func:`soft_preference_columns`) are the only cells it gives."""
    file_systems = read_json(systems_path) if systems_path else {}
    judge_pairs = settings.judge_pairs
    summary = read_json(validity_summary_path)
    board = _Board(
        {(p["suite"], p["judge"], p["system"]) for p in judge_pairs if p["self_family"]},
        {(i, name) for i in INSTRUMENTS for name in failing(summary, i)},
        settings.origins,
    )
    table5 = _read_csv(drfr_table5)
    drfr_columns(board, table5)
    arena_columns(board, _read_csv(arena_win_rates), read_ratings(arena_ratings))
    soft_preference_columns(board, _read_csv(arena_length_controlled))
    metric_columns(board, score_paths, settings.summary_systems, settings.rounds, settings.seed)
    drfr_judges = sorted({p["judge"] for p in judge_pairs if p["suite"] == "drfr"})
    summary_judge_columns(board, _read_csv(drfr_summaries), _read_csv(arena_summaries), drfr_judges)
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
        w
        for i in ("DRFR judge", "arena judge", "QAGS", "QuestEval")
        if (w := cannot_rank(summary, i))
    )
    caption = (warnings + " " if warnings else "") + (
        f"Leaderboard: every system across the suites ({rows_are(board)}), one table per suite in "
        "this view (the CSV: one row per system), sorted by rank; notes below the tables. "
        + controls_brief(summary)
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


def _front(board: _Board, ranks, file_systems, footnotes: Sequence[str], summary) -> str:
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
        controls_brief(summary),
        section_warnings(board, summary),
        # a reference's or baseline's word only (the page is 1,400 px wide; its note in the tables)
        {
            system: board.references[system][0]
            if system in board.references
            else short_source(board, system)
            for system in board.cells
        },
    )


def rows_are(board: _Board) -> str:
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


def short_source(board: _Board, system: str) -> str:
    """A row's source where no file brought it: a reference's or baseline's note, else the
    sources of its records (the peers' released judgments and their publisher), else "model"
    (the workflow ran it)."""
    if system in board.references:
        return board.references[system][1]
    return "; ".join(sorted(board.sources.get(system, ()))) or "model"
