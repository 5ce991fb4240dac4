"""ISQA's factuality comparisons anchored on the human evaluation (results/tables/isqa_ppi.*).

Per dataset, summarizer and factuality metric (QAGS, QuestEval): for each system of
``human_eval.systems`` the metric's mean over the papers it scored (N of them) beside the
prediction-powered estimate (:mod:`isqaflow.ppi`, PPI++ with its power tuning; the same row as the
arena's and DRFR's, :func:`isqaflow.ppi.anchored_row`) of people's factuality -- a summary's share
of sentences the annotators judged factual (averaged over its annotators first, as
:func:`isqaflow.metrics.human.system_factuality`) -- on the papers of the human evaluation (n of
them, ``human_eval.filled``); and the comparison itself, the paired difference of the last system
minus the first on the papers both were scored on.  The metric is the predictor: its mean is on
the metric's own scale (not people's), the PPI estimate on people's.

The human papers are the workflow's own seeded random draw (:func:`isqaflow.metrics.human.
assign_papers`) among the papers with a summary of every system, and each filled sheet is checked
to hold exactly its annotator's part (:func:`isqaflow.metrics.human.check_assigned`): PPI applies.
Where every scored paper is in the human sample (fewer papers than ``human_eval.papers``), no paper
is left for the metric alone and the note says so; without filled sheets the row keeps the
metric's mean and says there is no human label.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from isqaflow.metrics.human import check_assigned, read_filled_sheet
from isqaflow.ppi import ROW_COLUMNS, anchored_row
from isqaflow.suites.isqa import QAGS, QUESTEVAL

__all__ = ["FACTUALITY", "comparison_rows", "human_factuality", "isqa_ppi_table", "ppi_caption"]

FACTUALITY = {"qags": QAGS, "questeval": QUESTEVAL}  # score field -> instrument
COLUMNS = ["dataset", "summarizer", "metric", "system", *ROW_COLUMNS]


def human_factuality(entry: Mapping[str, Any]) -> pd.DataFrame:
    """(paper_id, system, human): each sampled summary's share of factual sentences, from the
    filled sheets of ``entry`` (``key``, ``assignment``, ``filled``: annotator -> sheet), each
    checked against its annotator's assignment."""
    if not entry.get("filled"):
        return pd.DataFrame(columns=["paper_id", "system", "human"])
    key = pd.read_csv(entry["key"], dtype={"item_id": str, "paper_id": str, "system": str})
    assignment = json.loads(Path(entry["assignment"]).read_text(encoding="utf-8"))
    sheets = []
    for annotator, path in entry["filled"].items():
        judged = read_filled_sheet(path, annotator)
        check_assigned(judged, path, annotator, key, assignment)
        sheets.append(judged)
    judged = pd.concat(sheets, ignore_index=True).merge(
        key[["item_id", "paper_id", "system"]].rename(columns={"paper_id": "key_paper"}),
        on="item_id",
        how="left",
        validate="m:1",
    )
    per_annotator = judged.groupby(["key_paper", "system", "annotator"])["factual"].mean()
    per_summary = per_annotator.groupby(level=["key_paper", "system"]).mean()
    return per_summary.rename("human").rename_axis(["paper_id", "system"]).reset_index()


def comparison_rows(
    dataset: str,
    summarizer: str,
    scores: pd.DataFrame,
    systems: Sequence[str],
    human: pd.DataFrame,
    filled: bool = True,
) -> list[dict]:
    """The rows of one (dataset, summarizer): per metric, each system and the paired difference
    of the last minus the first; ``human``: :func:`human_factuality`'s, ``filled``: whether any
    sheet was filled (the note of a row without labels)."""
    systems = list(dict.fromkeys(systems))
    finals = scores[
        (scores["dataset"] == dataset)
        & (scores["summarizer"] == summarizer)
        & scores["final"].astype(bool)
    ].assign(paper_id=lambda df: df["paper_id"].astype(str))
    no_labels = (
        "no human label of this system's summaries"
        if filled
        else f"no filled human sheets (human_eval.filled: {dataset}/{summarizer})"
    )
    common = {
        "random_subset": True,
        "unit": "scored papers",
        "sample_setting": "human_eval",
        "no_labels": no_labels,
    }
    rows = []
    for metric, label in FACTUALITY.items():
        per_system = {}
        for system in systems:
            mine = finals[finals["system"] == system][["paper_id", metric]].dropna()
            mine = mine.assign(judge=mine[metric] / 100).merge(
                human[human["system"] == system][["paper_id", "human"]], on="paper_id", how="left"
            )
            per_system[system] = mine.set_index("paper_id")
            row = anchored_row(mine["judge"].to_numpy(), mine["human"].to_numpy(), **common)
            rows.append(
                {
                    "dataset": dataset,
                    "summarizer": summarizer,
                    "metric": label,
                    "system": system,
                    **row,
                }
            )
        if len(systems) >= 2:
            first, last = per_system[systems[0]], per_system[systems[-1]]
            both = first.join(last, how="inner", lsuffix="_a", rsuffix="_b")
            row = anchored_row(
                (both["judge_b"] - both["judge_a"]).to_numpy(),
                (both["human_b"] - both["human_a"]).to_numpy(),
                **{**common, "unit": "papers scored for both"},
                bounded=(-1.0, 1.0),
            )
            rows.append(
                {
                    "dataset": dataset,
                    "summarizer": summarizer,
                    "metric": label,
                    "system": f"{systems[-1]} - {systems[0]}",
                    **row,
                }
            )
    return rows


def isqa_ppi_table(scores: pd.DataFrame, ppi: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The table from rule isqa_tables' ``ppi`` param: "<dataset>/<summarizer>" -> ``systems``
    (human_eval.systems), ``key``, ``assignment`` and ``filled`` (annotator -> sheet; may be
    empty); ``scores``: :func:`isqaflow.metrics.tables.load_scores`'s (metrics x 100)."""
    rows = []
    for pair, entry in ppi.items():
        dataset, summarizer = pair.split("/", 1)
        rows += comparison_rows(
            dataset,
            summarizer,
            scores,
            entry.get("systems") or [],
            human_factuality(entry),
            filled=bool(entry.get("filled")),
        )
    return pd.DataFrame(rows, columns=COLUMNS).set_index(
        ["dataset", "summarizer", "metric", "system"]
    )


def ppi_caption(table: pd.DataFrame) -> str:
    """The caption's body (n human and N scored: the columns of each row)."""
    estimated = int(table["PPI %"].notna().sum()) if not table.empty else 0
    return (
        "Factuality anchored on the human evaluation (x100): each factuality metric's mean over "
        "the N papers it scored (judge %, on the metric's own scale; normal 95% interval) beside "
        "people's factuality (share of sentences judged factual) on the n papers of the human "
        "evaluation and the prediction-powered estimate of people's factuality over all N "
        "(PPI++, power-tuned lambda: 0 ignores the metric; 95% interval); the row b - a: the "
        "paired difference of the comparison (the last system of the human evaluation minus the "
        "first); the human papers are the workflow's own seeded random draw, so PPI applies; "
        + (f"{estimated} rows with a PPI estimate" if estimated else "no row has a PPI estimate")
    )
