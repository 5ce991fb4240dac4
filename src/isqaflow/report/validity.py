"""The validity table: do the judges and metrics of a run separate better from worse?

Every judge or metric control writes JSON Lines records, one per control item and
verdict rule (the project's control-record contract)::

    {"instrument": "DRFR judge", "name": "local", "scope": "infobench",
     "control": "empty_response", "rule": "raw", "item": "task_1#2",
     "expected": "NO", "outcome": "YES", "correct": false, "chance": 0.5,
     "baseline_correct": null, "detail": {...}}

``correct`` is null when the reply could not be parsed: such a record is counted in
``n_invalid`` and as not correct, never dropped.

Per (instrument, name, scope, control, rule) :func:`validity_summary` reports ``n``,
``n_invalid``, ``n_correct``, the share correct with a 95% percentile bootstrap
interval over the records (:func:`isqaflow.stats.bootstrap_ci`), the chance level
and ``no_evidence``: true when the interval's lower bound is not above chance --
then there is no evidence that the instrument separates better from worse.  The
chance level is the mean of ``baseline_correct`` (null counted as not correct, like
``correct``) when any record of the group has one -- the feedback-model control's
outcome without the inserted evidence -- and otherwise the mean of ``chance`` (what
a content-blind instrument gets, e.g. 0.5 for a YES/NO question).  A control whose
fixed chance level is 100% -- the arena's answer against itself, judged in both orders:
any deterministic judge ties there, so it checks how the orders are combined and
cannot show separation -- is a consistency check: ``no_evidence`` is None for it, and
it neither raises nor clears the flag of its instrument.

Each group's bootstrap draws from ``keyed_rng(seed, <group key>)`` over its records
in item order: a group's interval depends only on its own records and the seed (not
on the other groups or the order of files and lines), so a stage that builds the
summary of its own control files (for a table caption, with
:func:`read_control_records` and :func:`validity_summary`) gets the same numbers as
``results/validity/summary.json``.  :func:`validity_note` turns a summary into the
caption sentence every table built on a judge or metric carries.

This module sits on the report floor: it knows the record contract, not the stages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from isqaflow.io import RecordError, read_jsonl, write_json
from isqaflow.report.tables import write_table
from isqaflow.seeds import keyed_rng
from isqaflow.stats import bootstrap_ci

__all__ = [
    "GROUP_KEYS",
    "INSTRUMENTS",
    "NO_EVIDENCE",
    "build_validity_table",
    "read_control_records",
    "validity_frame",
    "validity_note",
    "validity_summary",
]

INSTRUMENTS = ("arena judge", "DRFR judge", "QAGS", "QuestEval", "feedback model")
VERDICT_RULES = ("raw", "calibrated")
GROUP_KEYS = ("instrument", "name", "scope", "control", "rule")
NO_EVIDENCE = "no evidence that this judge separates better from worse"
ALPHA = 0.05

_TEXT_FIELDS = ("name", "scope", "control", "item")


def _check_record(path: str | Path, line: int, record: Mapping[str, Any]) -> None:
    """Raise RecordError naming file, line, record and field for a record off the contract."""
    item = record.get("item")

    def fail(field: str, message: str) -> None:
        raise RecordError(path, message, line=line, record=item, field=field)

    if record.get("instrument") not in INSTRUMENTS:
        fail("instrument", f"{record.get('instrument')!r} is not one of {list(INSTRUMENTS)}")
    for field in _TEXT_FIELDS:
        if not isinstance(record.get(field), str) or not record[field]:
            fail(field, "missing or not a non-empty string")
    if record.get("rule") not in VERDICT_RULES:
        fail("rule", f"{record.get('rule')!r} is not one of {list(VERDICT_RULES)}")
    for field in ("expected", "outcome"):
        if field not in record:
            fail(field, "missing")
    for field in ("correct", "baseline_correct"):
        if field not in record or record[field] not in (True, False, None):
            fail(field, "must be true, false or null")
    chance = record.get("chance")
    if isinstance(chance, bool) or not isinstance(chance, (int, float)) or not 0.0 <= chance <= 1.0:
        fail("chance", f"{chance!r} is not a number between 0 and 1")
    if not isinstance(record.get("detail", {}), dict):
        fail("detail", "must be an object")


def read_control_records(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Every record of the control files, checked against the contract.

    A record off the contract, or the same (instrument, name, scope, control, rule,
    item) twice, raises :class:`isqaflow.io.RecordError` naming file, line, item and field.
    """
    records: list[dict[str, Any]] = []
    seen: dict[tuple[str, ...], str] = {}
    for path in paths:
        for line, record in read_jsonl(path):
            _check_record(path, line, record)
            key = tuple(record[k] for k in GROUP_KEYS) + (record["item"],)
            if key in seen:
                raise RecordError(
                    path,
                    f"control item recorded twice (first at {seen[key]})",
                    line=line,
                    record=record["item"],
                    field="item",
                )
            seen[key] = f"{path}, line {line}"
            records.append(record)
    return records


def _sort_key(row: Mapping[str, Any]) -> tuple:
    return (
        INSTRUMENTS.index(row["instrument"]),
        row["name"],
        row["scope"],
        row["control"],
        VERDICT_RULES.index(row["rule"]),
    )


def validity_summary(
    records: Sequence[Mapping[str, Any]], rounds: int, seed: int
) -> dict[str, Any]:
    """Per (instrument, name, scope, control, rule): counts, share correct, interval, chance.

    Returns ``{"rounds", "seed", "alpha", "groups": [row, ...]}`` with rows in the
    order of :data:`INSTRUMENTS`, then name, scope, control and rule (raw first);
    each row holds the group keys, ``n``, ``n_invalid``, ``n_correct``,
    ``correct`` (the share), ``lower``, ``upper``, ``chance`` and ``no_evidence``.
    """
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for record in records:
        groups.setdefault(tuple(record[k] for k in GROUP_KEYS), []).append(record)
    rows = []
    for key, members in groups.items():
        members = sorted(
            members, key=lambda r: r["item"]
        )  # resampled in item order, whatever the file order
        correct = [1.0 if r["correct"] is True else 0.0 for r in members]
        group_seed = int(keyed_rng(seed, "validity:" + "\x1f".join(key)).integers(2**63))
        interval = bootstrap_ci(correct, rounds=rounds, alpha=ALPHA, seed=group_seed)
        baselines = [r["baseline_correct"] for r in members]
        consistency_check = False
        if any(b is not None for b in baselines):
            chance = sum(b is True for b in baselines) / len(baselines)
        else:
            chance = sum(float(r["chance"]) for r in members) / len(members)
            consistency_check = chance >= 1.0
        rows.append(
            {
                **dict(zip(GROUP_KEYS, key, strict=True)),
                "n": len(members),
                "n_invalid": sum(r["correct"] is None for r in members),
                "n_correct": int(sum(correct)),
                "correct": interval["estimate"],
                "lower": interval["lower"],
                "upper": interval["upper"],
                "chance": chance,
                "no_evidence": None if consistency_check else not interval["lower"] > chance,
            }
        )
    rows.sort(key=_sort_key)
    return {"rounds": rounds, "seed": seed, "alpha": ALPHA, "groups": rows}


def validity_frame(summary: Mapping[str, Any]) -> pd.DataFrame:
    """The summary's rows as a table indexed by the group keys (numeric; shares in [0, 1])."""
    columns = [
        *GROUP_KEYS,
        "n",
        "n_invalid",
        "n_correct",
        "correct",
        "lower",
        "upper",
        "chance",
        "no_evidence",
    ]
    return pd.DataFrame(list(summary["groups"]), columns=columns).set_index(list(GROUP_KEYS))


def _percent(value: float) -> str:
    return f"{100 * value:.0f}"


def _shown_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The table for reading: percentages with the interval, and the verdict in words."""
    return pd.DataFrame(
        {
            "n": frame["n"],
            "invalid": frame["n_invalid"],
            "correct (%) [95% CI]": [
                f"{100 * c:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
                for c, lo, hi in zip(frame["correct"], frame["lower"], frame["upper"], strict=True)
            ],
            "chance (%)": 100 * frame["chance"],
            "verdict": [
                "consistency check (chance 100%: shows no separation)" if flag is None
                else NO_EVIDENCE.upper() if flag else "separates (CI above chance)"
                for flag in frame["no_evidence"]
            ],
        },
        index=frame.index,
    )


def validity_note(summary: Mapping[str, Any], instrument: str, name: str | None = None) -> str:
    """The caption sentence of a table built on ``instrument`` (and judge/metric ``name``).

    Per (name, scope, rule): each control's correct count of n, its share with the
    95% interval and the chance level, the invalid count when there are invalid
    replies, and "NO EVIDENCE THAT THIS JUDGE SEPARATES BETTER FROM WORSE" when any
    of its controls' interval does not lie above chance.  Says so when no control
    was recorded.
    """
    if instrument not in INSTRUMENTS:
        raise ValueError(f"unknown instrument {instrument!r}; known: {list(INSTRUMENTS)}")
    rows = [
        r
        for r in summary["groups"]
        if r["instrument"] == instrument and (name is None or r["name"] == name)
    ]
    subject = instrument if name is None else f"{instrument} {name}"
    if not rows:
        return f"Controls: none recorded for {subject}."
    parts = []
    by_setting: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        by_setting.setdefault((row["name"], row["scope"], row["rule"]), []).append(row)
    for (row_name, scope, rule), members in by_setting.items():
        shown = []
        for r in members:
            invalid = f", {r['n_invalid']} invalid" if r["n_invalid"] else ""
            shown.append(
                f"{r['control']} {r['n_correct']}/{r['n']} correct ({_percent(r['correct'])}% "
                f"[{_percent(r['lower'])}, {_percent(r['upper'])}], "
                f"chance {_percent(r['chance'])}%{invalid})"
            )
        text = f"{instrument} {row_name} on {scope}, {rule}: " + "; ".join(shown)
        if any(r["no_evidence"] is True for r in members):
            text += " -- " + NO_EVIDENCE.upper()
        parts.append(text)
    return "Controls (known answers; share correct, 95% bootstrap CI): " + ". ".join(parts) + "."


def build_validity_table(
    control_paths: Sequence[str | Path],
    table_paths: Sequence[str | Path],
    summary_path: str | Path,
    rounds: int,
    seed: int,
) -> dict[str, Any]:
    """Entry point of rule validity_table: control files -> validity.{csv,md,tex}, summary.json.

    The CSV keeps the numbers (shares in [0, 1]); Markdown and LaTeX show
    percentages, the interval and the verdict in words.
    """
    summary = validity_summary(read_control_records(control_paths), rounds=rounds, seed=seed)
    frame = validity_frame(summary)
    csv_paths = [p for p in table_paths if Path(p).suffix == ".csv"]
    shown_paths = [p for p in table_paths if Path(p).suffix != ".csv"]
    write_table(frame, csv_paths)
    write_table(
        _shown_frame(frame),
        shown_paths,
        digits=1,
        caption=(
            "Known-answer controls of every judge and metric: share of control items judged "
            "correctly (95% percentile bootstrap interval over items; unparseable replies count as "
            f"not correct) against the chance level. {NO_EVIDENCE.upper()} marks an instrument "
            "whose "
            "interval does not lie above chance."
        ),
    )
    write_json(summary_path, summary)
    return summary
