"""The arena's win rates anchored on human labels (results/tables/arena_ppi.*).

Per setting, judge and system: the judge-only preference over LFRQA (win 1, tie 0.5, loss 0;
the mean over the system's judged reference pairs with a valid verdict, N of them) beside the
prediction-powered estimate (:mod:`isqaflow.ppi`, PPI++ with its power tuning) where people
labelled some of those same pairs (n of them): a human-labelled pair counts when its system
and query are a judged reference pair's and its answer text is the one the judge saw (a label
of another answer says nothing about this one).  The human label is the pair's strict
majority on the merged scale (:func:`isqaflow.arena.judging.agreement.human_majority`), as a
preference of the system over the reference.

PPI needs the labelled pairs to be a random sample of the judged ones.  The config says whether
they were (``datasets.rag.human_sample``: ``random`` or ``chosen``); where they were chosen --
the embedded pairs were written by hand for the agreement check -- or where no human label
matches a judged pair, the row keeps the judge-only estimate and says why there is no PPI
estimate; it is never computed on a sample it does not apply to.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from isqaflow.arena.judging.agreement import human_majority, read_human_labels
from isqaflow.ppi import ROW_COLUMNS, anchored_row

__all__ = ["HUMAN_SAMPLES", "PREFERENCE", "human_preferences", "ppi_table"]

HUMAN_SAMPLES = ("random", "chosen")
PREFERENCE = {"1": 1.0, "tie": 0.5, "2": 0.0}  # the system (answer 1) over the reference
_HUMAN_PREFERENCE = {1: 1.0, 0: 0.5, -1: 0.0}
COLUMNS = ["setting", "system", *ROW_COLUMNS]


def _normal(text: object) -> str:
    return " ".join(str(text).split())


def human_preferences(human_csv: str, reference: str) -> pd.DataFrame:
    """One row per human-labelled pair of a system against ``reference``: (domain, qid,
    system, answer, human) with ``human`` the majority's preference of the system (1, 0.5, 0)."""
    labels = read_human_labels(human_csv)
    majority = human_majority(labels)
    rows = []
    for pair_id, first in labels.drop_duplicates("pair_id").set_index("pair_id").iterrows():
        score = int(majority[pair_id])  # +1: answer 1 better
        if first["system_2"] == reference and first["system_1"] != reference:
            system, answer, preference = first["system_1"], first["answer_1"], score
        elif first["system_1"] == reference and first["system_2"] != reference:
            system, answer, preference = first["system_2"], first["answer_2"], -score
        else:
            continue  # two systems, no reference: not a win rate's pair
        rows.append(
            {
                "domain": str(first["domain"]),
                "qid": str(first["qid"]),
                "system": system,
                "answer": _normal(answer),
                "human": _HUMAN_PREFERENCE[preference],
            }
        )
    keys = ["domain", "qid", "system", "answer"]
    return pd.DataFrame(rows, columns=[*keys, "human"]).drop_duplicates(keys)


def _row(
    setting: str, system: str, judged: pd.DataFrame, human: pd.DataFrame, random: bool
) -> dict:
    merged = judged.merge(human, on=["domain", "qid", "system", "answer"], how="left")
    others = sorted(set(human["system"]) - {system})
    return {
        "setting": setting,
        "system": system,
        **anchored_row(
            judged["judge"].to_numpy(dtype=float),
            merged["human"].to_numpy(dtype=float),
            random_subset=random,
            unit="judged pairs",
            sample_setting="datasets.rag.human_sample: chosen",
            no_labels="no human label of this system's judged answers"
            + (f" (the human pairs are of {', '.join(others)})" if others else ""),
        ),
    }


def ppi_table(
    judged_by_setting: Mapping[str, pd.DataFrame],
    human_csv: str | None,
    reference: str,
    human_sample: str,
) -> pd.DataFrame:
    """The table: one row per setting (e.g. bm25-k5.local) and system of the reference pairs."""
    if human_sample not in HUMAN_SAMPLES:
        raise ValueError(
            f"datasets.rag.human_sample must be one of {HUMAN_SAMPLES}, got {human_sample!r}"
        )
    human = (
        human_preferences(human_csv, reference)
        if human_csv
        else pd.DataFrame(columns=["domain", "qid", "system", "answer", "human"])
    )
    rows = []
    for setting, records in judged_by_setting.items():
        if records.empty or "kind" not in records.columns:
            continue
        pairs = records[(records["kind"] == "reference") & (records["system_b"] == reference)]
        pairs = pairs.assign(judge=pairs["verdict"].map(PREFERENCE)).dropna(subset=["judge"])
        pairs = pairs.assign(
            domain=pairs["domain"].astype(str),
            qid=pairs["qid"].astype(str),
            system=pairs["system_a"],
            answer=pairs["answer_a"].map(_normal),
        )
        for system, judged in pairs.groupby("system", sort=True):
            rows.append(_row(setting, system, judged, human, random=human_sample == "random"))
    return pd.DataFrame(rows, columns=COLUMNS).set_index(["setting", "system"])
