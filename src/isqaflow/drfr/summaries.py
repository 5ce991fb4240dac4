"""DRFR of ISQA summaries: each paper's QA pairs become YES/NO requirements for its summary.

A view of summary factuality and completeness in none of the three papers: for each
answerable QA pair of a paper, the judge is asked (same protocol and machinery as
InFoBench) "Does the summary correctly state that the answer to: <question> is:
<gold answer>?" about each system's final summary.  Unanswerable questions are
skipped (a summary cannot be expected to state that something is not in the paper).
The summary DRFR (:func:`isqaflow.drfr.aggregate.summary_drfr`) is the share of YES,
pooled over a system's papers, with a 95% bootstrap interval over papers.  The
judge's verdict rule applies as for InFoBench (:mod:`isqaflow.drfr.judge`): in
logprob mode every judgment stores the raw and the contextually calibrated verdict
(one content-free "N/A" conversation per paper, shared by its systems), and
``answer`` is the configured rule's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from isqaflow.data.schema import Paper
from isqaflow.io import read_jsonl, read_records, write_jsonl
from isqaflow.models.base import GenerationParams

log = logging.getLogger(__name__)

REQUIREMENT = "Does the summary correctly state that the answer to: {question} is: {answer}?"


def paper_requirements(paper: Paper) -> list[dict[str, Any]]:
    reqs = []
    for qa in paper.qas:
        if qa.unanswerable:
            continue
        answer = " / ".join(dict.fromkeys(qa.gold_answers))
        reqs.append(
            {
                "question": REQUIREMENT.format(question=qa.question.rstrip("?"), answer=answer),
                "labels": ["Content"],
                "qa_id": qa.id,
            }
        )
    return reqs


def summary_items(
    papers: Mapping[str, Any], rows: Iterable[Mapping[str, Any]], systems: Sequence[str]
) -> list[dict[str, Any]]:
    """The judged items: each final summary of a chosen system with its paper's answerable QA pairs as
    requirements (a paper without one gives none).  ``papers``: id -> :class:`Paper` (or any object with
    its ``qas``); ``rows``: the summaries files' records.  The spend plan counts the same items."""
    items = []
    for row in rows:
        if row["system"] not in systems or not row.get("final", True):
            continue
        reqs = paper_requirements(papers[row["paper_id"]])
        if reqs:
            items.append(
                {
                    "instruction_id": row["paper_id"],
                    "model": row["system"],
                    "subset": "Summary",
                    "category": row["dataset"],
                    "input": "",
                    "response": row["summary"],
                    "requirements": reqs,
                    "summarizer": row["summarizer"],
                }
            )
    return items


@dataclass(frozen=True)
class SummaryJudgeJob:
    """What one ``drfr_summaries`` job runs: the judge (name, model spec, mode, verdict rule,
    decoding) and the systems whose final summaries it judges."""

    judge_name: str
    judge_spec: Mapping[str, Any]
    mode: str
    rule: str
    generation: GenerationParams | None
    systems: tuple[str, ...]

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any) -> SummaryJudgeJob:
        """From the rule's params (systems, model, mode, rule, generation) and the wildcard ``judge``."""
        return cls(
            judge_name=wildcards.judge,
            judge_spec=params.model,
            mode=params.mode,
            rule=params.rule,
            generation=GenerationParams.from_dict(params.generation) if params.generation else None,
            systems=tuple(params.systems),
        )


def run_summary_judge(
    papers_path,
    summary_paths,
    out_path,
    job: SummaryJudgeJob,
    cache_path,
    threads: int | None = None,
    prompt_files: Sequence[str] = (),
) -> int:
    """Entry point of rule drfr_summaries: judge the final summaries of the chosen systems.

    ``prompt_files``: InFoBench's published evaluation.py (judges with ``prompts: published``).
    """
    from isqaflow.drfr.judge import check_rule, judge, load_judge_prompt

    check_rule(job.mode, job.rule)  # before the model is loaded
    from isqaflow.models.registry import load_model

    papers = {p.id: p for p in read_records(papers_path, Paper)}
    items = summary_items(
        papers, (row for path in summary_paths for _, row in read_jsonl(path)), job.systems
    )
    model = load_model(dict(job.judge_spec), cache=cache_path, name=job.judge_name, threads=threads)
    records = judge(
        model, items, job.mode, job.generation, job.rule, load_judge_prompt(prompt_files)
    )
    summarizer = {(it["instruction_id"], it["model"]): it["summarizer"] for it in items}
    for record in records:
        record.update(
            judge=job.judge_name,
            paper_id=record["instruction_id"],
            system=record["model"],
            dataset=record["category"],
            summarizer=summarizer[(record["instruction_id"], record["model"])],
        )
    return write_jsonl(out_path, records)
