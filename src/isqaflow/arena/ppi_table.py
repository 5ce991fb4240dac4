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

import numpy as np
import pandas as pd

from isqaflow.arena.judging.agreement import human_majority, read_human_labels
from isqaflow.ppi import NOT_RANDOM, classical_mean_ci, ppi_mean

__all__ = ["HUMAN_SAMPLES", "PREFERENCE", "human_preferences", "ppi_table"]

HUMAN_SAMPLES = ("random", "chosen")
PREFERENCE = {"1": 1.0, "tie": 0.5, "2": 0.0}  # the system (answer 1) over the reference
_HUMAN_PREFERENCE = {1: 1.0, 0: 0.5, -1: 0.0}
COLUMNS = [
    "setting",
    "system",
    "N judged",
    "judge %",
    "judge lower",
    "judge upper",
    "n human",
    "human %",
    "PPI %",
    "PPI lower",
    "PPI upper",
    "lambda",
    "note",
]


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
    judge = judged["judge"].to_numpy(dtype=float)
    low = high = np.nan
    same = judge.size >= 2 and bool(np.all(judge == judge[0]))
    if judge.size >= 2 and not same:
        _, low, high = classical_mean_ci(judge)
        # a preference lies in [0, 1]: the normal interval is cut at the bounds it cannot pass
        # (n=15 gave "-1.2" for a win rate), never reported beyond them
        low, high = max(low, 0.0), min(high, 1.0)
    row = {
        "setting": setting,
        "system": system,
        "N judged": int(judge.size),
        "judge %": 100 * judge.mean() if judge.size else np.nan,
        "judge lower": 100 * low,
        "judge upper": 100 * high,
        "n human": 0,
        "human %": np.nan,
        "PPI %": np.nan,
        "PPI lower": np.nan,
        "PPI upper": np.nan,
        "lambda": np.nan,
        "note": "",
    }
    merged = judged.merge(human, on=["domain", "qid", "system", "answer"], how="left")
    labelled = merged["human"].notna().to_numpy()
    row["n human"] = int(labelled.sum())
    if row["n human"]:
        row["human %"] = 100 * float(merged.loc[labelled, "human"].mean())
    others = sorted(set(human["system"]) - {system})
    no_spread = (
        f"every judged pair got {100 * judge[0]:g}: no interval (a zero-width one would read as "
        "certainty); "
        if same
        else ""
    )
    if not row["n human"]:
        row["note"] = (
            no_spread
            + "no human label of this system's judged answers"
            + (f" (the human pairs are of {', '.join(others)})" if others else "")
        )
    elif not random:
        row["note"] = no_spread + NOT_RANDOM + " (datasets.rag.human_sample: chosen)"
    elif row["n human"] < 2 or (~labelled).sum() < 2:
        row["note"] = no_spread + "PPI needs at least 2 labelled and 2 unlabelled judged pairs"
    else:
        est = ppi_mean(
            merged.loc[labelled, "human"].to_numpy(dtype=float),
            judge[labelled],
            judge[~labelled],
        )
        row.update(
            {
                "PPI %": 100 * est.ppi,
                "PPI lower": 100 * est.ppi_low,
                "PPI upper": 100 * est.ppi_high,
                "lambda": est.ppi_lambda,
            }
        )
    return row


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
