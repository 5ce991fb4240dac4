"""Which "w/ ISQA" results are feedback, and which are only a prompt change (issue 30, item 6).

With ``refine.empty_step: refine`` (Algorithm 1 as printed, the default) a step whose batch
gave no fact and no non-fact is still followed by a new summary, generated from the
act-on-feedback prompt with empty lists.  When the feedback model never yields a fact or a
non-fact, every ISQA variant is then the same prompt applied to the same paper: the variants'
final summaries can be identical texts, and Tables 1-4 would compare them without saying so.

From the refinement records (``results/summaries/<dataset>/<summarizer>/isqa-*.steps.jsonl``,
one record per paper: ``final_summary`` and every step with its prompt's facts and non-facts
and the feedback on its summary), per (dataset, summarizer):

* :func:`identical_pairs` -- for every two ISQA variants, on how many of the papers both have
  their final summaries are the same text; and for every variant, on how many its final
  summary is its first summary s_1 (the baseline job's summary with the initial prompt: the
  "w/o ISQA" text of that prompt).
* :func:`feedback_use` -- per variant: the feedback steps, those whose feedback gave no fact and
  no non-fact, and the summaries generated from an act-on-feedback prompt with empty lists
  (steps after the first, not skipped, with no fact and no non-fact in their prompt).
* :func:`identity_note` -- the caption sentences of a table for the variants it shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from isqaflow.io import read_jsonl

__all__ = ["feedback_use", "identical_pairs", "identity_note", "read_refinements"]

GROUP = ["dataset", "summarizer"]
FEEDBACK_DECISIONS = ("fact", "non_fact")


def read_refinements(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Every refinement record of ``paths`` (one per paper and ISQA run)."""
    records = []
    for path in paths:
        for line, record in read_jsonl(path):
            for field in ("dataset", "summarizer", "system", "paper_id", "final_summary"):
                if field not in record:
                    raise ValueError(f"{path}, line {line}: refinement record lacks {field!r}")
            records.append(record)
    return records


def _first_summary(record: Mapping[str, Any]) -> str | None:
    steps = record.get("steps") or []
    return steps[0]["summary"] if steps else None


def identical_pairs(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """(dataset, summarizer, a, b, identical, papers): final summaries of ``a`` and ``b`` equal on
    ``identical`` of the ``papers`` both have; ``b == "s_1"``: ``a``'s final summary is its first
    summary (the initial prompt's baseline summary), on the papers whose record has its steps."""
    finals: dict[tuple[str, str], dict[str, dict[str, str]]] = {}
    rows = []
    for rec in records:
        finals.setdefault((rec["dataset"], rec["summarizer"]), {}).setdefault(rec["system"], {})[
            rec["paper_id"]
        ] = rec["final_summary"]
    for (dataset, summarizer), systems in sorted(finals.items()):
        names = sorted(systems)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                common = systems[a].keys() & systems[b].keys()
                rows.append(
                    {
                        "dataset": dataset,
                        "summarizer": summarizer,
                        "a": a,
                        "b": b,
                        "identical": sum(systems[a][p] == systems[b][p] for p in common),
                        "papers": len(common),
                    }
                )
    first: dict[tuple[str, str, str], list[bool]] = {}
    for rec in records:
        s1 = _first_summary(rec)
        if s1 is not None:
            first.setdefault((rec["dataset"], rec["summarizer"], rec["system"]), []).append(
                rec["final_summary"] == s1
            )
    for (dataset, summarizer, system), same in sorted(first.items()):
        rows.append(
            {
                "dataset": dataset,
                "summarizer": summarizer,
                "a": system,
                "b": "s_1",
                "identical": sum(same),
                "papers": len(same),
            }
        )
    return pd.DataFrame(rows, columns=[*GROUP, "a", "b", "identical", "papers"])


def feedback_use(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Per (dataset, summarizer, system): ``feedback_steps`` (steps whose summary was asked
    about), ``steps_without_feedback`` (of those, the ones that gave no fact and no non-fact)
    and ``empty_prompt_summaries`` (summaries generated from the act-on-feedback prompt with
    no fact and no non-fact: a prompt change, not feedback)."""
    rows = []
    for rec in records:
        asked = [st for st in rec.get("steps") or [] if st.get("feedback")]
        empty = [
            st
            for st in asked
            if not any(f.get("decision") in FEEDBACK_DECISIONS for f in st["feedback"])
        ]
        prompt_only = [
            st
            for st in rec.get("steps") or []
            if st["step"] > 1 and not st.get("skipped") and not st["facts"] and not st["non_facts"]
        ]
        rows.append(
            {
                "dataset": rec["dataset"],
                "summarizer": rec["summarizer"],
                "system": rec["system"],
                "feedback_steps": len(asked),
                "steps_without_feedback": len(empty),
                "empty_prompt_summaries": len(prompt_only),
            }
        )
    columns = [
        *GROUP,
        "system",
        "feedback_steps",
        "steps_without_feedback",
        "empty_prompt_summaries",
    ]
    if not rows:
        return pd.DataFrame(columns=columns).set_index(columns[:3])
    return pd.DataFrame(rows, columns=columns).groupby(columns[:3]).sum()


def identity_note(records: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> str:
    """The caption sentences of a table whose rows include the ISQA variants ``labels``
    (system -> its label in the table): the variants whose final summaries are identical to
    another's or to s_1, and those whose steps had no feedback at all ("" when none)."""
    chosen = [rec for rec in records if rec["system"] in labels]
    if not chosen:
        return ""
    parts = []
    for row in identical_pairs(chosen).itertuples(index=False):
        if not row.identical:
            continue
        other = (
            "its first summary s_1 (the initial prompt's, w/o ISQA)"
            if row.b == "s_1"
            else labels[row.b]
        )
        parts.append(
            f"{row.dataset}/{row.summarizer}: {labels[row.a]} = {other} on {row.identical} of "
            f"{row.papers} papers"
        )
    sentences = []
    if parts:
        sentences.append("Identical final summaries: " + "; ".join(parts) + ".")
    use = feedback_use(chosen).reset_index()
    none = use[
        (use["feedback_steps"] > 0) & (use["steps_without_feedback"] == use["feedback_steps"])
    ]
    if not none.empty:

        def run(r: Any) -> str:
            text = f"{r.dataset}/{r.summarizer} {labels[r.system]} ({r.feedback_steps} steps"
            if r.empty_prompt_summaries:
                text += (
                    f"; {r.empty_prompt_summaries} summaries from the act-on-feedback prompt with empty "
                    "lists: a prompt change, not feedback"
                )
            return text + ")"

        sentences.append(
            "No feedback at all (no fact and no non-fact on any step): "
            + "; ".join(run(r) for r in none.itertuples(index=False))
            + "."
        )
    partial = use[
        (use["steps_without_feedback"] > 0)
        & (use["steps_without_feedback"] < use["feedback_steps"])
    ]
    if not partial.empty:
        sentences.append(
            "Steps without feedback: "
            + "; ".join(
                f"{r.dataset}/{r.summarizer} {labels[r.system]} {r.steps_without_feedback} of {r.feedback_steps}"
                for r in partial.itertuples(index=False)
            )
            + "."
        )
    return (" " + " ".join(sentences)) if sentences else ""
