"""The validity table: do the judges and metrics of a run separate better from worse?

Every judge or metric control writes JSON Lines records, one per control item and
verdict rule (the project's control-record contract)::

    {"instrument": "DRFR judge", "name": "local", "scope": "infobench",
     "control": "empty_response", "rule": "raw", "item": "task_1#2",
     "expected": "NO", "outcome": "YES", "correct": false, "chance": 0.5,
     "baseline_correct": null, "detail": {...}}

``correct`` is null when the reply could not be parsed: such a record is counted in
``n_invalid`` and as not correct, never dropped.  A record may carry ``untestable``: a
sentence saying why its control cannot test its verdict rule (e.g. the DRFR
``empty_response`` control under the calibrated rule: the empty text and the
calibration's content-free "N/A" are both content-free, so a perfect judge's calibrated
log-odds on it are about 0); such a group is shown with that reason and counts as
evidence neither way.

Per (instrument, name, scope, control, rule) :func:`validity_summary` reports ``n``,
``n_invalid``, ``n_correct``, the share correct with its exact 95% Clopper-Pearson
interval, the chance level, an exact one-sided test and ``no_evidence``
(:func:`isqaflow.stats.share_test`, :func:`isqaflow.stats.mcnemar_test`):

* a control with a fixed chance level (what a content-blind instrument gets, e.g. 0.5
  for a YES/NO question; the mean of the records' ``chance``): the one-sided exact
  binomial test of "the share correct exceeds chance";
* a paired control -- any record of the group has ``baseline_correct``, the
  feedback-model control's outcome on the same item without the inserted evidence: the
  one-sided exact McNemar test against that baseline (the binomial test at 1/2 of the
  items gained among the discordant ones; null baselines count as not correct, like
  ``correct``).  Its chance column is the baseline's share correct.

"separates" only when the test's one-sided p < 0.025 (:data:`ALPHA`: exactly when the exact
two-sided 95% interval lies above chance).  Beside it, ``p_holm``: Holm's adjustment over
the tested controls of the same instrument and name (every scope and rule of one judge or
metric: one family).  The verdicts stay on the unadjusted p because the claim a caption
makes -- the instrument separates on *every* control; one failing control raises the flag
-- is an intersection-union test, which holds its level without adjustment; a "separates"
row that does not survive Holm says so ("not alone after Holm"), for a reader who takes
that one row as a finding.  Otherwise ``no_evidence`` is true -- there is
no evidence that the instrument separates better from worse.  A perfect instrument
needs :func:`isqaflow.stats.min_items_to_separate` items (6 at chance 50%), reported per row as ``min_n``: fewer
items cannot show separation whatever the instrument.  A control whose fixed chance
level is 100% -- the arena's answer against itself, judged in both orders: any
deterministic judge ties there, so it checks how the orders are combined and cannot
show separation -- is a consistency check: ``no_evidence`` is None for it, as for an
untestable group, and it neither raises nor clears the flag of its instrument.

Nothing is resampled: a group's numbers depend only on its own records, so a stage
that builds the summary of its own control files (for a table caption, with
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
from isqaflow.stats import holm, mcnemar_test, min_items_to_separate, share_test
from isqaflow.suites import INSTRUMENTS
from isqaflow.suites.isqa import FEEDBACK_MODEL

__all__ = [
    "GROUP_KEYS",
    "INSTRUMENTS",
    "NO_EVIDENCE",
    "build_validity_table",
    "cannot_rank",
    "failing",
    "read_control_records",
    "validity_frame",
    "validity_note",
    "validity_summary",
    "plain_verdict",
    "verdict_text",
]

VERDICT_RULES = ("raw", "calibrated")
GROUP_KEYS = ("instrument", "name", "scope", "control", "rule")
NO_EVIDENCE = "no evidence that this judge separates better from worse"
# One-sided at 2.5%: a group "separates" exactly when its exact two-sided 95% interval lies
# above chance, so the verdict and the interval printed beside it never disagree (at 5%, 5/5
# would pass with an interval of [47.8, 100]); a perfect instrument then needs 6 items at 50%.
ALPHA = 0.025

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
    untestable = record.get("untestable")
    if untestable is not None and (not isinstance(untestable, str) or not untestable.strip()):
        fail("untestable", "must be null or a non-empty sentence")


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


def _verdict(
    test: Mapping[str, Any], untestable: str | None, consistency_check: bool
) -> tuple[str, bool | None]:
    """(verdict, no_evidence) of a group."""
    if untestable:
        return "cannot test this rule", None
    if consistency_check:
        return "consistency check", None
    return ("separates", False) if test["separates"] else ("no evidence", True)


def validity_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per (instrument, name, scope, control, rule): counts, share correct, exact interval and test.

    Returns ``{"alpha", "groups": [row, ...]}`` with rows in the order of
    :data:`INSTRUMENTS`, then name, scope, control and rule (raw first); each row holds
    the group keys, ``n``, ``n_invalid``, ``n_correct``, ``correct`` (the share),
    ``lower`` and ``upper`` (Clopper-Pearson, 95%), ``chance``, ``test`` ("binomial",
    "mcnemar"; None for a consistency check or an untestable group), ``p_value``
    (one-sided), ``n_gained``/``n_lost`` (McNemar's discordant items; None otherwise),
    ``min_n`` (items a perfect instrument needs to separate; for McNemar, discordant
    items), ``verdict`` ("separates", "no evidence", "consistency check", "cannot test
    this rule"), ``untestable`` (the reason, or None) and ``no_evidence``.
    """
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for record in records:
        groups.setdefault(tuple(record[k] for k in GROUP_KEYS), []).append(record)
    rows = []
    for key, members in groups.items():
        correct = [r["correct"] is True for r in members]
        baselines = [r["baseline_correct"] for r in members]
        reasons = sorted({r["untestable"] for r in members if r.get("untestable")})
        untestable = "; ".join(reasons) or None
        n, n_correct = len(members), sum(correct)
        paired = any(b is not None for b in baselines)
        if paired:
            chance = sum(b is True for b in baselines) / n
            mcnemar = mcnemar_test(correct, [b is True for b in baselines], alpha=ALPHA)
            test = {
                **share_test(n_correct, n, chance, alpha=ALPHA),
                "p_value": mcnemar["p_value"],
                "separates": mcnemar["separates"],
            }
            gained, lost = mcnemar["gained"], mcnemar["lost"]
            min_n = min_items_to_separate(0.5, ALPHA)
        else:
            chance = sum(float(r["chance"]) for r in members) / n
            test = share_test(n_correct, n, min(chance, 1.0), alpha=ALPHA)
            gained = lost = None
            min_n = min_items_to_separate(min(chance, 1.0), ALPHA)
        consistency_check = not paired and chance >= 1.0
        verdict, no_evidence = _verdict(test, untestable, consistency_check)
        tested = verdict in ("separates", "no evidence")
        rows.append(
            {
                **dict(zip(GROUP_KEYS, key, strict=True)),
                "n": n,
                "n_invalid": sum(r["correct"] is None for r in members),
                "n_correct": n_correct,
                "correct": test["share"],
                "lower": test["lower"],
                "upper": test["upper"],
                "chance": chance,
                "test": ("mcnemar" if paired else "binomial") if tested else None,
                "p_value": test["p_value"] if tested else None,
                "p_holm": None,
                "n_gained": gained,
                "n_lost": lost,
                "min_n": min_n,
                "verdict": verdict,
                "untestable": untestable,
                "no_evidence": no_evidence,
            }
        )
    _adjust(rows)
    rows.sort(key=_sort_key)
    return {"alpha": ALPHA, "groups": rows}


def _adjust(rows: list[dict[str, Any]]) -> None:
    """``p_holm``: Holm over the tested controls of each (instrument, name), one family per judge
    or metric.  The verdicts stay on the unadjusted p: the claim a caption makes is that the
    instrument separates on *every* control (an intersection-union test, which holds its
    level without adjustment); a row read alone as a discovery is read with ``p_holm``."""
    families: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        if row["verdict"] in ("separates", "no evidence"):
            families.setdefault((row["instrument"], row["name"]), []).append(row)
    for members in families.values():
        for row, adjusted in zip(members, holm([r["p_value"] for r in members]), strict=True):
            row["p_holm"] = float(adjusted)


_FRAME_COLUMNS = (
    "n",
    "n_invalid",
    "n_correct",
    "correct",
    "lower",
    "upper",
    "chance",
    "test",
    "p_value",
    "p_holm",
    "n_gained",
    "n_lost",
    "min_n",
    "verdict",
    "untestable",
    "no_evidence",
)


def validity_frame(summary: Mapping[str, Any]) -> pd.DataFrame:
    """The summary's rows as a table indexed by the group keys (numeric; shares in [0, 1])."""
    columns = [*GROUP_KEYS, *_FRAME_COLUMNS]
    return pd.DataFrame(list(summary["groups"]), columns=columns).set_index(list(GROUP_KEYS))


def _percent(value: float) -> str:
    return f"{100 * value:.0f}"


def _p(value: float) -> str:
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def _holm(row: Mapping[str, Any]) -> str:
    p_holm = row.get("p_holm")
    return "" if p_holm is None or pd.isna(p_holm) else f", Holm {_p(p_holm)}"


def verdict_text(row: Mapping[str, Any]) -> str:
    """A summary row's verdict in words: the test, its p-value and, below ``min_n``, why it
    cannot pass."""
    if row["verdict"] == "cannot test this rule":
        return f"cannot test this rule ({row['untestable']}): counts neither way"
    if row["verdict"] == "consistency check":
        return "consistency check (chance 100%: shows no separation)"
    min_n = int(row["min_n"])  # a table's integer columns with gaps come back as floats
    if row["test"] == "mcnemar":
        gained, lost = int(row["n_gained"]), int(row["n_lost"])
        test = f"exact McNemar p = {_p(row['p_value'])}{_holm(row)}: {gained} gained, {lost} lost"
        short = gained + lost < min_n
        need = f"{min_n} discordant items"
    else:
        test = f"exact binomial p = {_p(row['p_value'])}{_holm(row)}"
        short = row["n"] < min_n
        need = f"{min_n} items"
    if row["verdict"] == "separates":
        p_holm = row.get("p_holm")
        alone = (
            "" if p_holm is None or pd.isna(p_holm) or p_holm < ALPHA else "; not alone after Holm"
        )
        return f"separates ({test}{alone})"
    if short:
        test += f"; too few to show it: a perfect instrument needs {need}"
    return f"{NO_EVIDENCE.upper()} ({test})"


def _count(value: float) -> str:
    return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"


def _family(rows: Sequence[Mapping[str, Any]], row: Mapping[str, Any]) -> int:
    """The tested controls of ``row``'s instrument and name (the family Holm adjusts over)."""
    return sum(
        r["instrument"] == row["instrument"]
        and r["name"] == row["name"]
        and r["verdict"] in ("separates", "no evidence")
        for r in rows
    )


def plain_verdict(row: Mapping[str, Any], family: int = 1) -> str:
    """A summary row in words a newcomer reads without the statistics: what it got right, what
    chance would give, and whether that is unlikely by chance -- alone and after correcting for
    the ``family`` tested controls of the same judge or metric (Holm's adjustment)."""
    noun = "judge" if row["instrument"].endswith("judge") else "metric"
    if row["instrument"] == FEEDBACK_MODEL:
        noun = "model"
    if row["verdict"] == "cannot test this rule":
        return f"this control cannot test the {row['rule']} rule ({row['untestable']}); it counts neither way"
    if row["verdict"] == "consistency check":
        return (
            "a consistency check (an answer against itself, which a consistent judge ties): "
            "it cannot show that the judge tells better from worse"
        )
    p = _p(row["p_value"])
    if row["test"] == "mcnemar":
        gained, lost = int(row["n_gained"]), int(row["n_lost"])
        text = (
            f"with the evidence it got {gained} known answers right that it missed without, "
            f"and lost {lost}; chance would gain as many as it lost"
        )
        short, need = gained + lost < int(row["min_n"]), f"{int(row['min_n'])} changed answers"
    else:
        n, correct = int(row["n"]), int(row["n_correct"])
        text = f"correct on {correct} of {n} known answers; chance would be {_count(row['chance'] * n)}"
        short, need = n < int(row["min_n"]), f"{int(row['min_n'])} known answers"
    controls = f"the {family} controls of this {noun}"
    if row["verdict"] == "separates":
        p_holm = row.get("p_holm")
        text += f"; this is unlikely by chance (p = {p})"
        if family > 1 and p_holm is not None and not pd.isna(p_holm):
            text += (
                f", also after correcting for {controls}"
                if p_holm < ALPHA
                else f", but not after correcting for {controls}"
            )
        return text
    text += f"; this could well be chance (p = {p})"
    if short:
        text += f", and even a perfect {noun} would need {need} to show otherwise"
    return text + f": no evidence that this {noun} tells better from worse"


def _shown_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The table for reading: percentages with the interval, and the verdict in words."""
    rows = frame.reset_index().to_dict("records")
    return pd.DataFrame(
        {
            "n": frame["n"],
            "invalid": frame["n_invalid"],
            "correct (%) [95% exact CI]": [
                f"{100 * c:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
                for c, lo, hi in zip(frame["correct"], frame["lower"], frame["upper"], strict=True)
            ],
            "chance (%)": 100 * frame["chance"],
            "verdict": [verdict_text(row) for row in rows],
            "in plain words": [plain_verdict(row, _family(rows, row)) for row in rows],
        },
        index=frame.index,
    )


CAPTION = (
    "Known-answer controls of every judge and metric: share of control items judged correctly "
    "(exact 95% Clopper-Pearson interval; unparseable replies count as not correct) against the "
    'chance level. "separates" when the one-sided exact binomial test against chance gives '
    "p < 0.025, i.e. exactly when that interval lies above chance (a paired control, the feedback "
    "model with and without the evidence: the one-sided "
    "exact McNemar test against its baseline, the same items without the evidence); a perfect "
    f"instrument needs {min_items_to_separate(0.5, ALPHA)} items at chance 50% to pass (n/n has "
    "p = 0.5**n), and fewer cannot show "
    "separation. "
    "Beside each p, Holm's adjustment over the tested controls of the same judge or metric; the "
    "verdicts use the unadjusted p, since a judge is trusted only when every one of its controls "
    'passes (an intersection-union test needs no adjustment); "not alone after Holm" marks a '
    "passing control that would not pass as a finding on its own. "
    f'{NO_EVIDENCE.upper()} marks a control whose test does not pass; "cannot test this rule" '
    "a control that cannot show separation under that verdict rule (counted neither way)."
)


def validity_brief(summary: Mapping[str, Any], instrument: str) -> str:
    """One short clause for ``instrument`` (a table's footnote; the full text is
    :func:`validity_note`'s, in results/tables/validity.*): how many of its tested controls it
    got right beyond chance, and the warning when any did not."""
    rows = [r for r in summary["groups"] if r["instrument"] == instrument]
    if not rows:
        return f"{instrument} without a recorded control"
    tested = [r for r in rows if r["verdict"] in ("separates", "no evidence")]
    text = (
        f"{instrument} {sum(r['verdict'] == 'separates' for r in tested)} of {len(tested)} tested controls "
        "correct beyond chance"
    )
    if any(r["no_evidence"] is True for r in rows):
        text += " (NO EVIDENCE THAT IT SEPARATES BETTER FROM WORSE on some)"
    return text


def failing(summary: Mapping[str, Any], instrument: str) -> dict[str, tuple[int, int]]:
    """name -> (controls failed, controls tested) of each judge or metric of ``instrument`` that
    fails any of its tested controls: what :func:`cannot_rank` says, and what marks a leaderboard
    value built on it as not decisive."""
    by_name: dict[str, list[Mapping[str, Any]]] = {}
    for r in summary["groups"]:
        if r["instrument"] == instrument and r["verdict"] in ("separates", "no evidence"):
            by_name.setdefault(r["name"], []).append(r)
    counts = {
        name: (sum(r["no_evidence"] is True for r in tested), len(tested))
        for name, tested in sorted(by_name.items())
    }
    return {name: count for name, count in counts.items() if count[0]}


def cannot_rank(
    summary: Mapping[str, Any], instrument: str, names: Iterable[str] | None = None
) -> str:
    """One plain sentence per judge or metric of ``instrument`` (of ``names``, when given) that
    fails any of its tested controls, for the first screen of every table and figure built on it
    ("" when all pass or none was recorded: the caption's control note says that): it cannot rank
    the systems, and what its numbers still show."""
    chosen = None if names is None else set(names)
    return " ".join(
        f"The {instrument} {name} cannot rank these systems: it did no better than chance "
        f"on {failed} of its {tested} known-answer controls, so its numbers show what "
        "it said, not which system is better."
        for name, (failed, tested) in failing(summary, instrument).items()
        if chosen is None or name in chosen
    )


def validity_note(summary: Mapping[str, Any], instrument: str, name: str | None = None) -> str:
    """The caption sentence of a table built on ``instrument`` (and judge/metric ``name``).

    Per (name, scope, rule): each control's correct count of n, its share with the
    exact 95% interval, the chance level, the one-sided exact p-value (or why there is
    none), the invalid count when there are invalid replies, and "NO EVIDENCE THAT THIS
    JUDGE SEPARATES BETTER FROM WORSE" when any of its tested controls does not pass.
    Says so when no control was recorded.
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
            if r["verdict"] == "cannot test this rule":
                test = ", cannot test this rule"
            elif r["verdict"] == "consistency check":
                test = ", consistency check"
            else:
                kind = "McNemar" if r["test"] == "mcnemar" else "binomial"
                test = f", {kind} p = {_p(r['p_value'])}{_holm(r)}"
            shown.append(
                f"{r['control']} {r['n_correct']}/{r['n']} correct ({_percent(r['correct'])}% "
                f"[{_percent(r['lower'])}, {_percent(r['upper'])}], "
                f"chance {_percent(r['chance'])}%{test}{invalid})"
            )
        text = f"{instrument} {row_name} on {scope}, {rule}: " + "; ".join(shown)
        if any(r["no_evidence"] is True for r in members):
            text += " -- " + NO_EVIDENCE.upper()
        parts.append(text)
    return (
        "Controls (known answers; share correct, exact 95% CI, one-sided exact test against "
        "chance, and its Holm adjustment over the instrument's controls): " + ". ".join(parts) + "."
    )


def build_validity_table(
    control_paths: Sequence[str | Path],
    table_paths: Sequence[str | Path],
    summary_path: str | Path,
) -> dict[str, Any]:
    """Entry point of rule validity_table: control files -> validity.{csv,md,tex}, summary.json.

    The CSV keeps the numbers (shares in [0, 1]); Markdown and LaTeX show
    percentages, the interval and the verdict in words.
    """
    summary = validity_summary(read_control_records(control_paths))
    frame = validity_frame(summary)
    csv_paths = [p for p in table_paths if Path(p).suffix == ".csv"]
    shown_paths = [p for p in table_paths if Path(p).suffix != ".csv"]
    write_table(frame, csv_paths)
    # first in the report: each instrument that cannot rank the systems, in one sentence
    warnings = [w for instrument in INSTRUMENTS if (w := cannot_rank(summary, instrument))]
    caption = " ".join([*warnings, CAPTION])
    write_table(_shown_frame(frame), shown_paths, digits=1, caption=caption)
    write_json(summary_path, summary)
    return summary
