"""RAG-QA Arena tables and the ratings figure.

* Win and win+tie rates against LFRQA per domain and overall (Table 3), per
  retrieval setting; judged pairs without a valid verdict are excluded and counted.
* The no-answer ratio per model (Table 9) and the retriever's recall of gold documents.
* Bradley-Terry (the headline: maximum likelihood, ties half a win each way) and online
  Elo (K 4, base 10, scale 400, initial 1000; the point is the median of the bootstrap,
  as in FastChat, since one online pass depends on the battles' order; ranked only where
  it has converged to Bradley-Terry's spread) with 95% bootstrap intervals over queries
  and ranks by interval separation: (A) the reference pairs only,
  (B) plus the all-pairs battles among the models (Table 5).  Plotted with their
  intervals.
* Position consistency of the judge (both-orders judging), under both verdict rules:
  raw (the two orders' labels agree) and calibrated (their label margins have the same
  sign; logprob judges).  Every other table uses each judge's configured rule (the
  records' ``verdict``), named in its ``rule`` column.
* Judge-human agreement: Pearson correlation and Cohen's kappa between the judge and
  the human majority label (Tables 4 and 8), with both label distributions.
* ISQA summaries in the arena: each system against the abstract, and head to head.
* Length-controlled win rates (AlpacaEval 2.0's regression, :mod:`isqaflow.arena.ratings.length`)
  beside the raw ones, for every kind of pair (against LFRQA, all pairs, the summaries
  against the abstract and head to head), "not identified" where a length difference of 0
  lies outside the data, and the judge's length bias among pairs of two model answers: the
  share of decided pairs the longer answer wins, with its exact interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from isqaflow.arena.judging.agreement import (
    human_majority,
    judge_human_agreement,
    merge_rating,
    read_human_labels,
)
from isqaflow.arena.ratings.bradley_terry import bradley_terry
from isqaflow.arena.ratings.length import length_tables
from isqaflow.arena.players import ABSTRACT, REFERENCE
from isqaflow.arena.ratings.bootstrap import (
    ELO_CONVERGED,
    battles_from_verdicts,
    bootstrap_ratings,
    bt_separation,
    elo_convergence,
    elo_with_intervals,
    rating_intervals,
    win_rates,
)
from isqaflow.arena.judging.verdicts import (
    calibrated_side,
    fit_tie_band,
    loo_tie_band_sides,
    position_consistency,
)
from isqaflow.arena.ppi_table import ppi_table
from isqaflow.io import RecordError, read_json, read_jsonl
from isqaflow.report.figures import caveat, new_figure, save_figure
from isqaflow.report.tables import table_paths, write_table
from isqaflow.report.validity import (
    cannot_rank,
    read_control_records,
    validity_note,
    validity_summary,
)
from isqaflow.stats import SMALL_N
from isqaflow.suites.arena import JUDGE as ARENA_JUDGE


def _load(paths: Sequence[str | Path]) -> pd.DataFrame:
    rows = [obj for path in paths for _, obj in read_jsonl(path)]
    return pd.DataFrame(rows)


def _pct(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    df = df.copy()
    for c in columns:
        df[c] = 100 * df[c]
    return df


def outcomes_vs(records: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Each model's outcome against ``reference`` (win / tie / loss / invalid), from judged pairs."""
    rows = records[(records["system_b"] == reference) & (records["system_a"] != reference)]
    outcome = rows["verdict"].map({"1": "win", "2": "loss", "tie": "tie"}).fillna("invalid")
    return pd.DataFrame({"domain": rows["domain"], "model": rows["system_a"], "outcome": outcome})


def verdict_rule(judged: pd.DataFrame) -> str:
    """The verdict rule of judged records (records written before rules existed: raw)."""
    if "rule" not in judged.columns:
        return "raw"
    rules = sorted(set(judged["rule"].fillna("raw")))
    if len(rules) != 1:
        raise ValueError(f"judged records of one setting mix verdict rules {rules}")
    return rules[0]


def win_rate_table(judged: pd.DataFrame, reference: str, failed: str = "exclude") -> pd.DataFrame:
    """Win and win+tie rates per setting, domain and model from the reference pairs only.

    Each (domain, query, model) meets the reference once, in its reference pair; other
    kinds of pairs (the all-pairs sample) never count here, whoever plays in them.
    ``failed``: a judgment without a valid verdict is left out ("exclude") or a tie ("tie",
    RAG-QA Arena's code; :func:`~isqaflow.arena.ratings.bootstrap.win_rates`).
    """
    parts = []
    for setting, df in judged.groupby("setting"):
        rates = win_rates(
            outcomes_vs(df[df["kind"] == "reference"], reference), by=["domain"], failed=failed
        )
        rates.insert(0, "rule", verdict_rule(df))
        rates.insert(0, "setting", setting)
        parts.append(rates)
    table = pd.concat(parts, ignore_index=True)
    return _pct(table, ["win_rate", "win_tie_rate"]).set_index(["setting", "domain", "model"])


def _query_ids(df: pd.DataFrame) -> np.ndarray | None:
    """The query of each judged pair (the cluster of the ratings' bootstrap), when the records say it."""
    if {"domain", "qid"} <= set(df.columns):
        return (df["domain"].astype(str) + ":" + df["qid"].astype(str)).to_numpy()
    return None


def is_soft_verdict(verdict: object) -> bool:
    """A number (a soft verdict in [1, 2], :mod:`isqaflow.arena.ratings.length_inputs`), not a
    label and not missing."""
    return (
        isinstance(verdict, int | float | np.number)
        and not isinstance(verdict, bool)
        and not np.isnan(verdict)
    )


def ratings_table(
    judged: pd.DataFrame, elo: dict[str, float], rounds: int, seed: int, kinds: Sequence[str]
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Bradley-Terry (the headline) and online Elo with intervals from the judged pairs of the
    given kinds; the bootstrap resamples queries (all their battles) where the records name
    them.  Elo's rank, and its panel in the figure (the returned results), only where it has
    converged (:func:`elo_convergence`)."""
    pairs = judged[judged["kind"].isin(kinds)]
    # a soft verdict (AlpacaEval's preference, isqaflow.data.peers.records) is no battle outcome:
    # the length-controlled table reads it, the ratings leave it out
    battles, invalid = battles_from_verdicts(
        pairs[~pairs["verdict"].map(is_soft_verdict)], "system_a", "system_b"
    )
    if battles.empty:
        return pd.DataFrame(), {}
    queries = _query_ids(judged.loc[battles.index])
    battles = battles.reset_index(drop=True)
    bt_kwargs = {k: elo[k] for k in ("base", "scale", "initial")}
    point_bt = bradley_terry(battles, **bt_kwargs)
    results = {
        "Bradley-Terry": rating_intervals(
            point_bt,
            bootstrap_ratings(battles, "bt", rounds=rounds, seed=seed, groups=queries, **bt_kwargs),
        )
    }
    results["Elo"] = elo_with_intervals(battles, rounds=rounds, seed=seed, groups=queries, **elo)
    convergence = elo_convergence(results["Elo"]["rating"], point_bt)
    separation = bt_separation(battles, rounds=rounds, seed=seed, groups=queries)
    votes = pd.concat([battles["model_a"], battles["model_b"]]).value_counts()
    table = pd.concat(
        {name: r[["rating", "lower", "upper", "rank"]] for name, r in results.items()}, axis=1
    )
    # a bound set by the pseudo-count prior (the model's own separation, or through centring
    # another's): flagged, not hidden
    table[("Bradley-Terry", "separated %")] = 100 * separation["separated_share"].reindex(
        table.index
    )
    table[("Bradley-Terry", "prior-set %")] = 100 * separation["prior_share"].reindex(table.index)
    # a rank says out of how many players (the reference, LFRQA, is one of them)
    table.insert(
        table.columns.get_loc(("Bradley-Terry", "rank")) + 1, ("Bradley-Terry", "of"), len(table)
    )
    low, high = ELO_CONVERGED
    converged = bool(low <= convergence <= high)
    if not converged:
        table[("Elo", "rank")] = np.nan
    table[("Elo", "spread / BT")] = convergence
    table[("Elo", "converged")] = converged
    table[("votes", "")] = votes.reindex(table.index).fillna(0).astype(int)
    table[(f"votes < {SMALL_N}", "")] = table[("votes", "")] < SMALL_N  # its intervals: indicative
    table[("invalid excluded", "")] = invalid
    table[("resampled", "")] = "queries" if queries is not None else "battles"
    plotted = (
        results if converged else {"Bradley-Terry": results["Bradley-Terry"]}
    )  # the figure: no unconverged Elo
    return table.sort_values(("Bradley-Terry", "rating"), ascending=False), plotted


def position_consistency_table(judged: pd.DataFrame) -> pd.DataFrame:
    """Position consistency per setting under the raw rule and, where margins exist, the calibrated one."""
    rows = []
    for setting, df in judged.groupby("setting"):
        records = df.to_dict("records")
        configured = verdict_rule(df)
        rows.append(
            {
                "setting": setting,
                "rule": "raw",
                "configured": configured == "raw",
                **position_consistency(records),
            }
        )
        if "margin" in df.columns and df["margin"].notna().any():
            rows.append(
                {
                    "setting": setting,
                    "rule": "calibrated",
                    "configured": configured == "calibrated",
                    **position_consistency(records, "position_consistent_calibrated"),
                }
            )
    return pd.DataFrame(rows).set_index(["setting", "rule"])


def ratings_figure(
    results: dict[str, dict[str, pd.DataFrame]], paths: Sequence[str | Path], warning: str = ""
) -> None:
    """One panel per setting and method; ``warning`` (the judge cannot rank these systems) is
    written across the top, in red, so the bars are never read without it."""
    panels = [(col, name, r) for col, by_method in results.items() for name, r in by_method.items()]
    fig, axes = new_figure(ncols=max(1, len(panels)), width=4.0)
    for ax, (column, method, r) in zip(axes, panels, strict=False):
        r = r.sort_values("rating")
        y = np.arange(len(r))
        # the interval as a line and the rating as a point, not error bars: a percentile
        # bootstrap interval need not contain the point estimate (a few queries, the prior at
        # its edge: the dress rehearsal's 3), and matplotlib refuses negative bar lengths
        ax.hlines(y, r["lower"], r["upper"], color="C0")
        ax.plot(r["rating"], y, "o", color="C0")
        ax.set_yticks(y, r.index)
        ax.set_xlabel(f"{method} rating")
        ax.set_title(column, fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    caveat(fig, warning)
    save_figure(fig, paths)


_SIDE_VERDICT = {"a": "1", "b": "2", "tie": "tie", None: None}


def fitted_band_verdicts(
    judged: pd.DataFrame, human: pd.Series
) -> tuple[dict, pd.Series, pd.Series] | None:
    """The tie band fitted on the human-labelled pairs (:func:`fit_tie_band`), the calibrated
    verdicts under it (in-sample), and the out-of-sample verdicts of the labelled pairs, each
    under the band fitted on the others (:func:`loo_tie_band_sides`), per pair id; None when
    the records have no margins."""
    if "margin" not in judged.columns or judged["margin"].isna().all():
        return None
    margins = judged.set_index("pair_id")["margin"].astype(float)
    labelled = margins.index.intersection(human.index)
    fit = fit_tie_band(margins[labelled].to_numpy(), human[labelled].to_numpy())
    verdicts = margins.map(lambda m: _SIDE_VERDICT[calibrated_side(m, fit["tie_band"])])
    loo = pd.Series(
        [
            _SIDE_VERDICT[side]
            for side in loo_tie_band_sides(
                list(margins[labelled].to_numpy()), list(human[labelled].to_numpy())
            )
        ],
        index=labelled,
        dtype=object,
    )
    return fit, verdicts, loo


IN_SAMPLE = "in-sample: band fitted on these pairs"


def agreement_table(human_csv: str | Path, judged_paths: Sequence[str | Path]) -> pd.DataFrame:
    """Judge vs human majority per judge; for a judge with margins, also under the tie band
    fitted on these pairs (in-sample: the band the judge's ``tie_band`` can be set to) and
    out of sample (each pair under the band fitted on the others).  ``sample`` says which: a
    configured band equal (to 3 decimals) to the one fitted on these pairs is in-sample too."""
    labels = read_human_labels(human_csv)
    human = human_majority(labels)
    rows = []
    for path in judged_paths:
        judged = _load([path])
        if judged.empty:
            continue
        configured = (
            float(judged["tie_band"].iloc[0]) if "tie_band" in judged.columns else float("nan")
        )
        fitted = fitted_band_verdicts(judged, human)
        same = fitted is not None and round(configured, 3) == round(fitted[0]["tie_band"], 3)
        settings = [
            (
                verdict_rule(judged),
                configured,
                judged.set_index("pair_id")["verdict"],
                IN_SAMPLE + " (the configured band)" if same else "configured",
            )
        ]
        if fitted is not None:
            settings.append(
                (
                    "calibrated, tie band fitted on these pairs",
                    fitted[0]["tie_band"],
                    fitted[1],
                    IN_SAMPLE,
                )
            )
            settings.append(
                (
                    "calibrated, tie band fitted leave-one-out",
                    float("nan"),
                    fitted[2],
                    "out of sample: each pair under the band fitted on the others",
                )
            )
        for rule, band, verdicts, sample in settings:
            rows.append(
                {
                    **_agreement_row(judged["judge"].iloc[0], rule, band, human, verdicts, labels),
                    "sample": sample,
                }
            )
    return pd.DataFrame(rows).set_index("judge") if rows else pd.DataFrame()


def _agreement_row(
    judge: str, rule: str, band: float, human: pd.Series, verdicts: pd.Series, labels: pd.DataFrame
) -> dict:
    stats = judge_human_agreement(human, verdicts)
    share = lambda d, k: 100 * d.get(k, 0.0)  # noqa: E731
    return {
        "judge": judge,
        "rule": rule,
        "tie band": band,
        "pairs": stats["n"],
        "judge invalid": stats["n_judge_invalid"],
        "human 1 better %": share(stats["human_distribution"], 1),
        "human tie %": share(stats["human_distribution"], 0),
        "human 2 better %": share(stats["human_distribution"], -1),
        "judge 1 better %": share(stats["judge_distribution"], 1),
        "judge tie %": share(stats["judge_distribution"], 0),
        "judge 2 better %": share(stats["judge_distribution"], -1),
        "Pearson r": stats["pearson_r"],
        "p": stats["pearson_p"],
        "Cohen kappa": stats["cohen_kappa"],
        "accuracy %": 100 * stats["accuracy"],
        "annotator agreement %": 100 * _annotator_agreement(labels),
    }


def _annotator_agreement(labels: pd.DataFrame) -> float:
    """Share of pairs where all annotators gave the same merged label."""
    merged = labels.assign(score=labels["rating"].map(merge_rating))
    return float(merged.groupby("pair_id")["score"].nunique().eq(1).mean())


def own_retrieval(answers: pd.DataFrame) -> set[str]:
    """The answerers read from files (``source: file``): they brought their own retrieval."""
    if answers.empty or "source" not in answers:
        return set()
    return set(answers.loc[answers["source"].eq("file"), "answerer"])


def with_retrieval(rates: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """The win-rate table with a ``retrieval`` column: the setting's retriever and depth for
    the models, ``own`` for a system read from a file (its file serves every setting)."""
    own = own_retrieval(answers)
    rates = rates.copy()
    settings = rates.index.get_level_values("setting").str.split(".").str[0]
    models = rates.index.get_level_values("model")
    rates.insert(0, "retrieval", np.where(models.isin(list(own)), "own", settings))
    return rates


def no_answer_table(answers: pd.DataFrame) -> pd.DataFrame:
    """No-answer counts per retrieval setting and answerer; a system read from a file is listed
    once, under retriever ``own`` (the same file is each setting's answers); none without
    answers (released judgments only, rules/peers.smk)."""
    if answers.empty:
        return pd.DataFrame()
    own = answers["answerer"].isin(list(own_retrieval(answers)))
    answers = answers[~own | ~answers.duplicated(["answerer", "domain", "qid"])].copy()
    own = answers["answerer"].isin(list(own_retrieval(answers)))
    answers["retriever"] = answers["retriever"].where(~own, "own")
    answers["k"] = answers["k"].astype(str).where(~own, "-")
    table = answers.groupby(["retriever", "k", "answerer"]).agg(
        answers=("no_answer", "size"),
        no_answer=("no_answer", "sum"),
        unclosed_thinking=("thinking_unclosed", "sum"),
    )
    table["no_answer %"] = 100 * table["no_answer"] / table["answers"]
    return table


def summary_arena_table(judged: pd.DataFrame) -> pd.DataFrame:
    if judged.empty:
        return pd.DataFrame()
    rows = []
    for (dataset, summarizer, judge), df in judged.groupby(["domain", "summarizer", "judge"]):
        ref = df[df["kind"] == "reference"]
        for system, sub in ref.groupby("system_a"):
            valid = sub["verdict"].dropna()
            rows.append(
                {
                    "dataset": dataset,
                    "summarizer": summarizer,
                    "judge": judge,
                    "rule": verdict_rule(df),
                    "comparison": f"{system} vs {ABSTRACT}",
                    "pairs": len(sub),
                    "invalid": int(sub["verdict"].isna().sum()),
                    "win %": 100 * (valid == "1").mean() if len(valid) else np.nan,
                    "win+tie %": 100 * valid.isin(["1", "tie"]).mean() if len(valid) else np.nan,
                }
            )
        for (a, b), sub in df[df["kind"] == "head_to_head"].groupby(["system_a", "system_b"]):
            valid = sub["verdict"].dropna()
            rows.append(
                {
                    "dataset": dataset,
                    "summarizer": summarizer,
                    "judge": judge,
                    "rule": verdict_rule(df),
                    "comparison": f"{a} vs {b}",
                    "pairs": len(sub),
                    "invalid": int(sub["verdict"].isna().sum()),
                    "win %": 100 * (valid == "1").mean() if len(valid) else np.nan,
                    "win+tie %": 100 * valid.isin(["1", "tie"]).mean() if len(valid) else np.nan,
                }
            )
    return pd.DataFrame(rows).set_index(["dataset", "summarizer", "judge", "comparison"])


@dataclass(frozen=True)
class ArenaTablesSettings:
    """The ratings' settings (config ``arena.elo``: K, base, scale, initial), the bootstrap's
    rounds and seed, and what a failed judgment is in the win rates (config
    ``arena.failed_judgments``), from rule arena_tables' params (elo, rounds, seed,
    failed_judgments; no wildcards)."""

    elo: Mapping[str, float]
    rounds: int
    seed: int
    failed_judgments: str = "exclude"
    human_sample: str = "chosen"  # datasets.rag.human_sample: may PPI use the human pairs
    # arena.length_control: the LC tables' GLM, its gamed systems and difficulty file
    length_control: Mapping[str, Any] = field(
        default_factory=lambda: {"glm": "noreg", "gamed": [], "difficulty": None}
    )

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any = None) -> ArenaTablesSettings:
        return cls(
            elo=params.elo,
            rounds=params.rounds,
            seed=params.seed,
            failed_judgments=params.failed_judgments,
            human_sample=params.human_sample,
            length_control=params.length_control,
        )


# The win-rate caption's account of failed judgments, per config arena.failed_judgments.
_FAILED_CAPTION = {
    "exclude": "pairs without a valid verdict are excluded (n_invalid)",
    "tie": "pairs without a valid verdict count as ties in the denominator and the win+tie rate "
    "(n_invalid; RAG-QA Arena's code, not the paper's rule)",
}


def build_arena_tables(
    judged_paths: dict[str, str],
    answer_paths: Sequence[str],
    recall_paths: dict[str, str],
    human_csv: str | None,
    human_paths: Sequence[str],
    summary_paths: Sequence[str],
    out_dir: str | Path,
    figure_dir: str | Path,
    settings: ArenaTablesSettings,
    control_paths: Sequence[str | Path] = (),
) -> None:
    """Entry point of rule arena_tables; ``judged_paths`` maps a setting (e.g. bm25-k5.local) to its file.

    ``control_paths`` are the arena judges' known-answer control files: every table built on
    the judge's verdicts ends its caption with their accuracy (the numbers of
    ``results/tables/validity.*``: same records, same exact tests).
    """
    out_dir, figure_dir = Path(out_dir), Path(figure_dir)
    elo, rounds, seed = dict(settings.elo), settings.rounds, settings.seed
    summary = validity_summary(read_control_records(control_paths))
    controls = ". " + validity_note(summary, ARENA_JUDGE)
    warning = cannot_rank(summary, ARENA_JUDGE)  # first, in the ratings' caption and figure
    judged = pd.concat(
        [_load([p]).assign(setting=setting) for setting, p in judged_paths.items()],
        ignore_index=True,
    )
    summaries = _load(summary_paths)
    lc, bias = length_control_tables(judged, summaries, rounds, seed, settings.length_control)
    answers = _load(answer_paths)
    failed = settings.failed_judgments
    write_table(
        with_retrieval(with_lc(win_rate_table(judged, REFERENCE, failed), lc), answers),
        table_paths(out_dir / "arena_win_rates"),
        digits=1,
        caption=(warning + " " if warning else "")
        + "Win and win+tie rate (%) against LFRQA, each model answer judged once against its "
        "query's reference (retrieval: the setting's retriever and depth; own: a system read "
        "from a file, which brought its own retrieval); "
        "verdicts under the judge's rule (raw: both orders must agree; "
        "calibrated: mean label log-probability margin over both orders, a tie within "
        "tie_band); " + _FAILED_CAPTION[failed] + "; beside them, "
        "overall, the length-controlled win rate (AlpacaEval 2.0, ties half; see "
        "arena_length_controlled)" + controls,
    )
    rating_tables, figure_data = [], {}
    for setting, df in judged.groupby("setting"):
        for column, kinds in (
            ("A: reference pairs", ["reference"]),
            ("B: + all pairs", ["reference", "all_pairs"]),
        ):
            if column.startswith("B") and not (df["kind"] == "all_pairs").any():
                continue
            table, results = ratings_table(df, elo, rounds, seed, kinds)
            if table.empty:
                continue
            table.insert(0, ("battles", ""), column)
            table.insert(0, ("rule", ""), verdict_rule(df))
            table.insert(0, ("setting", ""), setting)
            rating_tables.append(table)
            figure_data[f"{setting} {column}"] = results
    ratings = pd.concat(rating_tables) if rating_tables else pd.DataFrame()
    write_table(
        ratings,
        table_paths(out_dir / "arena_ratings"),
        digits=1,
        caption=(warning + " " if warning else "")
        + "Bradley-Terry ratings (the headline: the maximum-likelihood fit with a 0.001 "
        "pseudo-win per ordered pair, as FastChat reports its arena today) and online Elo "
        "(K, base, scale, initial as configured; the median over the bootstrap rounds), with "
        "95% bootstrap intervals; rank by interval separation, 'of': the players ranked, LFRQA's reference "
        "answers among them. The bootstrap resamples queries "
        "with all their battles ('resampled': queries), since the systems answer the same "
        "queries. 'spread / BT': the spread of the Elo points over that of Bradley-Terry on "
        "the same battles; outside 0.8-1.25 online Elo has not converged (a small K over few "
        "battles shrinks every difference) and gets no rank: read Bradley-Terry. 'separated "
        "%': share of the resamples in which the model wins none or loses none of its battles; "
        "'prior-set %': share in which any model or group is so separated (no finite "
        "maximum-likelihood fit), which through the centring on the mean moves every model's "
        "rating: above 2.5% the bounds are set by the pseudo-count, not by the battles: read "
        f"them as unbounded. 'votes < {SMALL_N}': a model with fewer than {SMALL_N} battles, whose "
        "bootstrap intervals cover far less than 95% (read them as indicative). (A) reference "
        "pairs only, (B) plus all pairs among the models" + controls,
    )
    ratings_figure(
        figure_data,
        [figure_dir / "arena_ratings.png", figure_dir / "arena_ratings.svg"],
        warning=warning,
    )
    write_table(
        position_consistency_table(judged),
        table_paths(out_dir / "arena_position_consistency"),
        digits=3,
        caption="Position consistency: share of pairs judged alike in both orders. raw: the two orders' "
        "labels agree; calibrated: the two orders' label log-probability margins have the same "
        "sign (logprob judges). 'configured' marks the rule the judge's verdicts use" + controls,
    )
    write_table(
        no_answer_table(answers),
        table_paths(out_dir / "arena_no_answer"),
        digits=1,
        caption="'I couldn't find an answer.' per model (Table 9); retriever 'own': a system read from a "
        "file, listed once (its file serves every setting)",
    )
    recall = {
        (label, k): {m: v for m, v in values.items() if m != "k"}
        for label, path in recall_paths.items()
        for k, values in read_json(path).items()
    }
    write_table(
        # no domain with a corpus (every answerer read from a file): no retrieval, no row
        pd.DataFrame(recall).T.rename_axis(["retriever / domain", "depth"])
        if recall
        else pd.DataFrame(),
        table_paths(out_dir / "arena_retrieval"),
        digits=3,
        caption="Retrieval: share of queries with a gold document in the top k, and gold recall",
    )
    agreement = agreement_table(human_csv, human_paths) if human_csv else pd.DataFrame()
    write_table(
        agreement,
        table_paths(out_dir / "arena_agreement"),
        digits=3,
        caption="Judge vs human majority (3 annotators; no majority = tie). 'tie band': the judge's "
        "configured band (nats); a logprob judge also has a row under the band fitted on these "
        "pairs so that it ties as many of them as the people did (in-sample; set it as the "
        "judge's tie_band to use it) and a row where each pair is judged under the band fitted "
        "on the other pairs (leave-one-out: the out-of-sample agreement). 'sample' says which "
        "rows are in-sample: the configured row too when its band equals the fitted one (the "
        "embedded default's was fitted on these pairs)" + controls,
    )
    write_table(
        ppi_table(
            {s: _load([p]) for s, p in judged_paths.items()},
            human_csv,
            REFERENCE,
            settings.human_sample,
        ),
        table_paths(out_dir / "arena_ppi"),
        digits=1,
        caption="Win rates over LFRQA anchored on human labels (preference: win 1, tie 0.5, loss 0, "
        "in %): the judge alone over its N judged reference pairs (normal 95% CI) and, where people "
        "labelled n of those same pairs (same system, query and answer text) drawn at random "
        "(datasets.rag.human_sample: random), the prediction-powered estimate (PPI++, power-tuned "
        "weight lambda of the judge; 95% CI), an unbiased estimate of what the people would say "
        "over all N. Where the human pairs were chosen, not drawn at random, or none labels a "
        "judged answer, PPI does not apply and the note says so" + controls,
    )
    write_table(
        summary_arena_table(summaries),
        table_paths(out_dir / "arena_summaries"),
        digits=1,
        caption="ISQA summaries in the arena: against the abstract and head to head" + controls,
    )
    write_table(
        lc,
        table_paths(out_dir / "arena_length_controlled"),
        digits=1,
        caption="Length-controlled win rates (AlpacaEval 2.0): each system's preference over its "
        "baseline (LFRQA, another model, the abstract, the baseline summary) modelled on the "
        "system, tanh of the standardized length difference (characters) and the query's "
        "difficulty (fit over the systems meeting the same baseline), fit as alpaca_eval fits it "
        "by default (L1, penalty C by 5-fold cross-validation); LC: the modelled win rate with "
        "the length term at zero, ties half a win, 95% bootstrap CI over queries at the chosen "
        "C. Reported only where a length difference of 0 lies inside the data: at least "
        "3 pairs with the system not shorter and 3 not longer, and at least 10 pairs; else "
        "'not identified' (the reason in 'LC status') and no LC, no interval. longer / "
        "shorter: pairs with the system's answer longer / shorter; n: judged pairs with a "
        "valid verdict" + _v1_caption(settings.length_control) + controls,
    )
    if not bias.empty:  # p as read (three significant digits), not to the table's one decimal
        for column in ("p", "p by query"):
            bias[column] = bias[column].map(lambda p: f"{p:.3g}")
    write_table(
        bias,
        table_paths(out_dir / "arena_length_bias"),
        digits=1,
        caption="The judge's length bias among pairs of two model answers (all pairs, head to "
        "head; pairs against the reference or the abstract are left out: there the longer "
        "answer is mostly the reference, and its wins measure its quality, not length): share "
        "of decided pairs (no tie, valid verdict) of unequal length that the longer answer "
        "wins, exact (Clopper-Pearson) 95% CI, two-sided exact binomial p against 50% "
        "(pairs as independent) and 'p by query': sign-flip permutation test with each "
        "query's pairs flipped together (pairs over one query are not independent). Both "
        "answers are the judged models': a longer answer may also be a better one, so this "
        "bounds the judge's length preference together with any length-quality link" + controls,
    )


def _v1_caption(length_control: Mapping[str, Any]) -> str:
    """The LC caption's account of config arena.length_control when it is not the default."""
    if length_control["glm"] == "noreg":
        return ""
    gamed = ", ".join(length_control.get("gamed") or []) or "none: no regularisation rows"
    difficulty = length_control.get("difficulty")
    return (
        ". GLM: length_controlled_v1 (AlpacaEval 2.0's leaderboard: each system's pairs fit "
        f"together with the gamed baselines' pairs ({gamed}), weight 0.1 each, without "
        "intercept; 'glm' says which fit a row has), the instruction difficulty "
        + (f"from {difficulty}" if difficulty else "estimated from the other systems")
        + " ('difficulty' column)"
    )


def with_lc(rates: pd.DataFrame, lc: pd.DataFrame) -> pd.DataFrame:
    """The win-rate table with the LC win rate and its interval on the overall rows."""
    rates = rates.copy()
    for column in ("LC win rate %", "LC lower", "LC upper"):
        rates[column] = np.nan
    if lc.empty:
        return rates
    for (setting, kind, system, baseline), row in lc.iterrows():
        key = (setting, "overall", system)
        if kind == "reference" and baseline == REFERENCE and key in rates.index:
            for column in ("LC win rate %", "LC lower", "LC upper"):
                rates.loc[key, column] = row[column]
    return rates


def read_difficulty(path: str | Path) -> pd.Series:
    """An instruction-difficulty CSV (columns ``query``, ``difficulty``; config
    ``arena.length_control.difficulty``) as a Series query -> gamma; a missing column, a query
    twice or a value that is not a finite number is an error naming the file, line and field."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = sorted({"query", "difficulty"} - set(frame.columns))
    if missing:
        raise RecordError(path, f"missing columns {missing}", line=1)
    twice = frame["query"].duplicated()
    if twice.any():
        i = int(twice.to_numpy().argmax())
        raise RecordError(path, "query twice", record=frame["query"].iloc[i], line=i + 2)
    values = pd.to_numeric(frame["difficulty"], errors="coerce")
    bad = ~(values.abs() < float("inf"))
    if bad.any():
        i = int(bad.to_numpy().argmax())
        raise RecordError(
            path,
            f"not a finite number: {frame['difficulty'].iloc[i]!r}",
            record=frame["query"].iloc[i],
            field="difficulty",
            line=i + 2,
        )
    return pd.Series(values.to_numpy(float), index=frame["query"].to_numpy())


NOREG = {"glm": "noreg", "gamed": [], "difficulty": None}


def length_control_tables(
    judged: pd.DataFrame,
    summaries: pd.DataFrame,
    rounds: int,
    seed: int,
    length_control: Mapping[str, Any] = NOREG,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """LC win rates and length bias of the answers' settings and of the summaries' arena
    (setting ``summaries/<dataset>/<summarizer>.<judge>``).  Records without both answer texts
    (released judgments read without their answers, :mod:`isqaflow.data.peers.records`) have no
    lengths and are left out."""
    parts = [judged[judged["answer_a"].notna() & judged["answer_b"].notna()]]
    if not summaries.empty:
        label = (
            "summaries/"
            + summaries["domain"].astype(str)
            + "/"
            + summaries["summarizer"].astype(str)
            + "."
            + summaries["judge"].astype(str)
        )
        parts.append(summaries.assign(setting=label))
    difficulty = length_control.get("difficulty")
    return length_tables(
        pd.concat(parts, ignore_index=True),
        rounds,
        seed,
        glm=length_control["glm"],
        gamed=length_control.get("gamed") or (),
        difficulty=read_difficulty(difficulty) if difficulty else None,
    )
