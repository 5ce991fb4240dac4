"""DRFR anchored on human labels (results/tables/drfr_ppi.*).

Per dataset, judge and responder: the judge's DRFR -- its share of YES over the responder's
judged decomposed questions (INVALID counts as NO, as in every DRFR table), N of them -- beside
the prediction-powered estimate of people's share of YES (:mod:`isqaflow.ppi`, PPI++ with its
power tuning; the same row as the arena's win rates, :func:`isqaflow.ppi.anchored_row`) where
people labelled some of those questions (n of them;
``datasets.instructions.<dataset>.human_labels``, :mod:`isqaflow.data.instruction_labels`).  A
label counts when its instruction, question and response text are the judged ones (a label of
another response says nothing about this one); the others are counted in the note.

PPI needs the labelled questions to be a random sample of the judged ones
(``datasets.instructions.<dataset>.human_sample``: ``random`` or ``chosen``); where they were
chosen, or where no label matches, the row keeps the judge-only estimate and says why there is no
PPI estimate.  Questions count as independent draws (DRFR's own pooling); questions of one
instruction are not modelled as a cluster (docs/fidelity.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from isqaflow.data.instruction_labels import read_instruction_labels
from isqaflow.io import read_jsonl
from isqaflow.ppi import ROW_COLUMNS, anchored_row
from isqaflow.text.matching import match_key

__all__ = ["HUMAN_SAMPLES", "drfr_ppi_table", "ppi_caption"]

HUMAN_SAMPLES = ("random", "chosen")
COLUMNS = ["dataset", "judge", "responder", *ROW_COLUMNS]


def _responses(path: str | Path) -> dict[str, str]:
    """instruction id -> the response text (spaces collapsed) of one responses file."""
    return {row["instruction_id"]: match_key(row["response"]) for _, row in read_jsonl(path)}


def _dataset_rows(dataset: str, entry: Mapping[str, Any]) -> list[dict]:
    sample = entry.get("sample", "chosen")
    if sample not in HUMAN_SAMPLES:
        raise ValueError(
            f"datasets.instructions.{dataset}.human_sample must be one of {HUMAN_SAMPLES}, "
            f"got {sample!r}"
        )
    labels = {r: read_instruction_labels(p) for r, p in (entry.get("labels") or {}).items()}
    responses = {r: _responses(p) for r, p in (entry.get("responses") or {}).items()}
    judged = pd.DataFrame(
        [obj for path in entry.get("judgments", []) for _, obj in read_jsonl(path)],
        columns=["judge", "model", "instruction_id", "question_index", "answer"],
    )
    rows = []
    for (judge, responder), records in judged.groupby(["judge", "model"], sort=True):
        records = records.assign(
            question_index=records["question_index"].astype(int),
            judge_yes=(records["answer"] == "YES").astype(float),
        )
        human = pd.Series(float("nan"), index=records.index)
        other_text = 0
        if responder in labels:
            texts = responses.get(responder, {})
            mine = labels[responder]
            same = mine["output"] == mine["instruction_id"].map(texts)
            other_text = int((~same).sum())
            found = records.merge(mine[same], on=["instruction_id", "question_index"], how="left")[
                "human"
            ]
            human = found.set_axis(records.index)
        row = anchored_row(
            records["judge_yes"].to_numpy(),
            human.to_numpy(dtype=float),
            random_subset=sample == "random",
            unit="judged questions",
            sample_setting=f"datasets.instructions.{dataset}.human_sample: chosen",
            no_labels=(
                "no human label of this responder's judged questions"
                if labels
                else f"no human labels (datasets.instructions.{dataset}.human_labels)"
            ),
        )
        if other_text:
            row["note"] = "; ".join(
                filter(
                    None,
                    [row["note"], f"{other_text} labels of another response text not counted"],
                )
            )
        rows.append({"dataset": dataset, "judge": judge, "responder": responder, **row})
    return rows


def drfr_ppi_table(ppi: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The table from rule drfr_tables' ``ppi`` param: dataset -> ``judgments`` (paths),
    ``labels`` (responder -> human labels file), ``responses`` (responder -> its responses file),
    ``sample`` (random or chosen)."""
    rows = [row for dataset, entry in ppi.items() for row in _dataset_rows(dataset, entry)]
    return pd.DataFrame(rows, columns=COLUMNS).set_index(["dataset", "judge", "responder"])


def ppi_caption(table: pd.DataFrame) -> str:
    """The caption's body: what the columns are, and the counts of the rows with an estimate."""
    estimated = table[table["PPI %"].notna()] if not table.empty else table
    counts = ", ".join(
        f"{'/'.join(map(str, idx))}: n = {int(r['n human'])} human of N = {int(r['N judged'])} "
        "judged"
        for idx, r in estimated.iterrows()
    )
    return (
        "DRFR anchored on human labels (x100): the judge's share of YES over the N judged "
        "decomposed questions (INVALID as NO; normal 95% interval, questions as independent "
        "draws) beside people's share on the n questions they labelled and the prediction-"
        "powered estimate of people's DRFR over all N (PPI++, power-tuned lambda: 0 ignores the "
        "judge, 1 is plain PPI; 95% interval); PPI only where the labelled questions are a "
        "random sample of the judged ones (datasets.instructions.<dataset>.human_sample), else "
        "the note says why there is none"
        + (f" ({counts})" if counts else "; no row has a PPI estimate")
    )
