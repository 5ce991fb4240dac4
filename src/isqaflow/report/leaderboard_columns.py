"""The leaderboard's columns (:mod:`isqaflow.report.leaderboard`), each from one suite's table:
DRFR (drfr_table5_long), the arena's win rates against LFRQA and its ratings (arena_win_rates,
arena_ratings), soft preferences against a benchmark's baseline (arena_length_controlled: the
peers' AlpacaEval annotations), ISQA's metrics (the scores), the summaries' DRFR and win rate
against the abstract, and Arena-Hard-Auto's score against its baseline (arena_hard_scores).

Each function here is a suite's column builder, named by its descriptor
(:attr:`isqaflow.suites.Suite.board_builders`, which also orders them), with one signature:
``(board, tables, settings)`` -- the :class:`~isqaflow.report.board.Board` it puts cells on,
the :class:`BoardTables` (the suites' tables by name, and ISQA's score files) and the rule's
:class:`~isqaflow.report.leaderboard.LeaderboardSettings`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from isqaflow.io import read_jsonl
from isqaflow.stats import bootstrap_ci, share_test
from isqaflow.report.board import (
    ABSTRACT,
    CONTROLLED_METRICS,
    METRICS,
    NORMAL_95,
    PRIOR_MARK,
    PRIOR_SET_LIMIT,
    REFERENCE,
    REFERENCE_NOTES,
    SOFT,
    TITLES,
    Board,
    browser_link,
    cell_text,
    column_suffix,
    run_and_judge,
)
from isqaflow.suites import BOARD_TABLES
from isqaflow.suites.drfr import JUDGE as DRFR_JUDGE
from isqaflow.suites.arena import JUDGE as ARENA_JUDGE
from isqaflow.suites.arena_hard import BOARD_COLUMN as ARENA_HARD_COLUMN
from isqaflow.suites.arena_hard import JUDGE as ARENA_HARD_JUDGE

if TYPE_CHECKING:  # the rule's settings: defined beside the board that calls the builders
    from isqaflow.report.leaderboard import LeaderboardSettings


class BoardTables(Mapping[str, pd.DataFrame]):
    """What a column builder reads: ``tables[name]`` -- a suite's table the leaderboard reads
    (:data:`isqaflow.suites.BOARD_TABLES`), its CSV read as a frame on each access, empty where
    the run has no such table (its suite is not in the run); :meth:`path` -- the file itself,
    for a table with a layout of its own (arena_ratings' two header rows: :func:`read_ratings`);
    ``scores``: ISQA's metric scores (rule leaderboard's input scores, JSONL), which no table
    holds.  A name no suite declares is a KeyError naming it, not an empty table."""

    def __init__(
        self, paths: Mapping[str, str | Path | None], scores: Sequence[str | Path] = ()
    ) -> None:
        self._paths = dict(paths)
        self.scores = tuple(scores)

    def path(self, name: str) -> str | Path | None:
        if name not in BOARD_TABLES:
            raise KeyError(
                f"leaderboard: no suite declares the table {name!r} (isqaflow.suites: "
                f"board_tables); declared: {list(BOARD_TABLES)}"
            )
        return self._paths.get(name)

    def __getitem__(self, name: str) -> pd.DataFrame:
        return read_table_csv(self.path(name))

    def __iter__(self) -> Iterator[str]:
        return iter(BOARD_TABLES)

    def __len__(self) -> int:
        return len(BOARD_TABLES)


def drfr_columns(board: Board, tables: BoardTables, settings: LeaderboardSettings) -> None:
    """DRFR's: the responders' DRFR overall, Easy and Hard (drfr_table5_long), one column each
    per judge where the run has several."""
    table5_long = tables["drfr_table5_long"]
    judges = list(table5_long["judge"].unique()) if not table5_long.empty else []
    for row in table5_long.to_dict("records"):
        if not board.shown("drfr", row["judge"]):
            continue
        tag = column_suffix(row["judge"], judges)
        section, origin = board.origin("drfr", row["judge"])
        for label in ("Overall", "Easy", "Hard"):
            if label in row and not pd.isna(row[label]):
                n = row.get(f"{label}_n")
                board.put(
                    row["model"],
                    f"DRFR {label.lower()}{tag}",
                    cell_text(
                        100 * row[label],
                        100 * row[f"{label}_lower"],
                        100 * row[f"{label}_upper"],
                        None if pd.isna(n) else n,
                    ),
                    link=browser_link(
                        "drfr", system=row["model"], judge=row["judge"], kind="response"
                    ),
                    self_judged=board.is_self("drfr", [row["judge"]], row["model"]),
                    built_on=[(DRFR_JUDGE, row["judge"])],
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


def arena_columns(board: Board, tables: BoardTables, settings: LeaderboardSettings) -> None:
    """The arena's: win and win+tie rates against LFRQA, with the LC win rate where the table
    has it (arena_win_rates), Bradley-Terry and converged Elo (arena_ratings), one column each
    per setting where the run has several; LFRQA is a reference row."""
    win_rates, ratings = tables["arena_win_rates"], read_ratings(tables.path("arena_ratings"))
    overall = win_rates[win_rates["domain"] == "overall"] if not win_rates.empty else win_rates
    if not overall.empty:  # settings another suite's columns show are not the arena's cells
        overall = overall[[board.shown("arena", s) for s in overall["setting"]]]
    settings = list(overall["setting"].unique()) if not overall.empty else []
    for row in overall.to_dict("records"):
        tag = column_suffix(row["setting"], settings)
        n = row["n_valid"]
        run, judge = run_and_judge(row["setting"])
        section, origin = board.origin("arena", row["setting"])
        where = {
            "link": browser_link(
                "arena", system=row["model"], setting=run, judge=judge, kind="reference"
            ),
            "self_judged": board.is_self("arena", [judge], row["model"]),
            "built_on": [(ARENA_JUDGE, judge)],
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
                cell_text(rate, lower, upper, n, exact=True),
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
                cell_text(row["LC win rate %"], row["LC lower"], row["LC upper"], n),
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
    if not ratings.empty:
        ratings = ratings[[board.shown("arena", s) for s in ratings["setting"]]]
    if ratings.empty:
        return
    settings = list(ratings["setting"].unique())
    for setting, df in ratings.groupby("setting", sort=False):
        # the widest set of battles: with the all-pairs sample when the run has one
        battles = max(df["battles"].unique())
        tag = column_suffix(setting, settings)
        run, judge = run_and_judge(setting)
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
                    cell_text(
                        row[f"{method} rating"],
                        row[f"{method} lower"],
                        row[f"{method} upper"],
                        row["votes"],
                        digits=0,
                    )
                    + (PRIOR_MARK if method == "Bradley-Terry" and prior_set else ""),
                    link=browser_link("arena", system=row["model"], setting=run, judge=judge),
                    self_judged=board.is_self("arena", [judge], row["model"]),
                    built_on=[(ARENA_JUDGE, judge)],
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


def metric_columns(board: Board, tables: BoardTables, settings: LeaderboardSettings) -> None:
    """ISQA's: each judged summaries system's QAGS, QuestEval and ROUGE (``tables.scores``), the
    mean over papers with a bootstrap 95% interval (``settings.rounds``, ``settings.seed``), for
    the systems ``settings.summary_systems`` lists."""
    systems, rounds, seed = settings.summary_systems, settings.rounds, settings.seed
    rows = [obj for path in tables.scores for _, obj in read_jsonl(path)]
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
        tag = column_suffix(dataset, datasets)
        for metric, label in METRICS.items():
            if metric not in df:
                continue
            ci = bootstrap_ci(100 * df[metric].to_numpy(dtype=float), rounds=rounds, seed=seed)
            board.put(
                summary_system_label(summarizer, system),
                f"{label}{tag}",
                cell_text(ci["estimate"], ci["lower"], ci["upper"], ci["n"]),
                # QAGS and QuestEval record their controls under their own label and key
                built_on=[(label, metric)] if metric in CONTROLLED_METRICS else [],
                section=TITLES["isqa"],
                value=ci["estimate"],
                lower=ci["lower"],
                upper=ci["upper"],
                n=ci["n"],
            )


def summary_judge_columns(board: Board, tables: BoardTables, settings: LeaderboardSettings) -> None:
    """ISQA's, from its summaries' judgments in the other suites' tables: their DRFR
    (drfr_summaries_long, pooling every DRFR judge of ``settings.judge_pairs``) and win rate
    against the abstract (arena_summaries, one column per arena judge where there are several);
    the abstract is a reference row."""
    drfr_summaries, arena_summaries = tables["drfr_summaries_long"], tables["arena_summaries"]
    # the DRFR judges whose verdicts the summaries' DRFR pools
    drfr_judges = sorted({p["judge"] for p in settings.judge_pairs if p["suite"] == "drfr"})
    if not drfr_summaries.empty:
        datasets = list(drfr_summaries["dataset"].unique())
        for row in drfr_summaries.to_dict("records"):
            tag = column_suffix(row["dataset"], datasets)
            board.put(
                summary_system_label(row["summarizer"], row["system"]),
                f"summary DRFR{tag}",
                cell_text(
                    100 * row["drfr"], 100 * row["lower"], 100 * row["upper"], row["n_papers"]
                ),
                link=browser_link(
                    "drfr",
                    system=row["system"],
                    setting=f"summaries {row['dataset']}/{row['summarizer']}",
                    kind="summary",
                ),
                self_judged=board.is_self("drfr", drfr_judges, f"summaries:{row['summarizer']}"),
                built_on=[(DRFR_JUDGE, judge) for judge in drfr_judges],
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
            tag = column_suffix(row["dataset"], datasets) + column_suffix(row["judge"], judges)
            n = row["pairs"] - row["invalid"]
            board.put(
                summary_system_label(row["summarizer"], system),
                f"summary win % vs {ABSTRACT}{tag}",
                cell_text(row["win %"], n=n),
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
                built_on=[(ARENA_JUDGE, row["judge"])],
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


def soft_preference_columns(
    board: Board, tables: BoardTables, settings: LeaderboardSettings
) -> None:
    """The systems of records of soft preferences (AlpacaEval's annotations: origin verdicts
    :data:`SOFT`), each against its benchmark's baseline, from the length-controlled table: the
    raw win rate (the mean preference, ties half) with a normal 95% interval from AlpacaEval's
    standard error, and the LC win rate under the GLM the table names ('not identified' where
    the data do not decide it, its reason in leaderboard_long's status). A soft preference is no
    battle outcome: no Bradley-Terry, no Elo (:func:`isqaflow.arena.tables.ratings_table`)."""
    lc = tables["arena_length_controlled"]
    if lc.empty:
        return
    for row in lc.to_dict("records"):
        section, origin = board.origin("arena", row["setting"])
        if (
            origin.get("verdicts") != SOFT
            or row["kind"] != "reference"
            or not board.shown("arena", row["setting"])
        ):
            continue
        _, judge = run_and_judge(row["setting"])
        baseline, n = row["baseline"], row["n"]
        glm = row.get("glm") if isinstance(row.get("glm"), str) else "noreg"
        where = {
            "self_judged": board.is_self("arena", [judge], row["system"]),
            "built_on": [(ARENA_JUDGE, judge)],
            "section": section,
            "source": origin.get("source"),
        }
        rate, se = row["win rate (ties half) %"], row.get("win rate SE", np.nan)
        lower, upper = rate - NORMAL_95 * se, rate + NORMAL_95 * se
        win, lc_column = f"win % vs {baseline}", f"LC win % vs {baseline} ({glm})"
        board.put(
            row["system"],
            win,
            cell_text(rate, lower, upper, n),
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
            cell_text(row["LC win rate %"], row["LC lower"], row["LC upper"], n)
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


#: a style-controlled score whose interval the data did not decide (isqaflow.arena_hard.style)
STYLE_UNDECIDED = "no interval: undecided"


def arena_hard_columns(board: Board, tables: BoardTables, settings: LeaderboardSettings) -> None:
    """Arena-Hard-Auto's score (arena_hard_scores: the win rate % against its baseline from
    Bradley-Terry on both games of each question, bootstrap 95% interval over battles) and,
    where the table has it, the score at equal style (style control; not ranked), one column
    each per judge where the run has several, n = the questions judged; the baseline is a row,
    ranked as arena-hard's leaderboard ranks it (among the models, at 50)."""
    scores = tables["arena_hard_scores"]
    if scores.empty:
        return
    scores = scores[[board.shown("arena_hard", j) for j in scores["judge"]]]
    judges = list(scores["judge"].unique())
    for row in scores.to_dict("records"):
        tag = column_suffix(row["judge"], judges)
        section, origin = board.origin("arena_hard", row["judge"])
        # the baseline is the fit's anchor: 50 by construction, no interval
        baseline = bool(row["baseline"])
        lower, upper = (None, None) if baseline else (row["lower"], row["upper"])
        where = {
            # the baseline's games are every answerer's: its cell links to the judge's items
            "link": browser_link("arena_hard", judge=row["judge"])
            if baseline
            else browser_link("arena_hard", system=row["model"], judge=row["judge"]),
            "self_judged": board.is_self("arena_hard", [row["judge"]], row["model"]),
            "built_on": [(ARENA_HARD_JUDGE, row["judge"])],
            "section": section,
            "source": origin.get("source"),
        }
        board.put(
            row["model"],
            f"{ARENA_HARD_COLUMN}{tag}",
            cell_text(row["score"], lower, upper, row["questions"]),
            **where,
            value=row["score"],
            lower=lower,
            upper=upper,
            n=row["questions"],
            battles=row["battles"],
        )
        # style control (where the table has it): the score at equal style, not ranked
        if not pd.isna(row.get("style score", np.nan)):
            style_lower, style_upper = (
                (None, None) if baseline else (row["style lower"], row["style upper"])
            )
            # an interval the table withheld (too many resamples with one outcome): said, so the
            # point is not read as certain (arena_hard_scores' caption gives the count)
            undecided = not baseline and pd.isna(style_lower)
            board.put(
                row["model"],
                f"Arena-Hard style-controlled score{tag}",
                cell_text(row["style score"], style_lower, style_upper, row["questions"])
                + (f" {STYLE_UNDECIDED}" if undecided else ""),
                **where,
                value=row["style score"],
                lower=style_lower,
                upper=style_upper,
                n=row["questions"],
                battles=row["battles"],
            )
        if baseline:  # the peers' released judgments: their publisher's baseline
            board.reference(
                row["model"],
                f"baseline; {origin['source']}"
                if origin.get("source")
                else "baseline: the answers the scores are against",
                True,
            )


def read_table_csv(path: str | Path | None, **kwargs: Any) -> pd.DataFrame:
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
