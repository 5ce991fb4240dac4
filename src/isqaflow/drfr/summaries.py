"""DRFR of ISQA summaries: each paper's QA pairs become YES/NO requirements for its summary.

A view of summary factuality and completeness in none of the three papers: for each
answerable QA pair of a paper, the judge is asked (same protocol and machinery as
InFoBench) "Does the summary correctly state that the answer to: <question> is:
<gold answer>?" about each system's final summary.  Unanswerable questions are
skipped (a summary cannot be expected to state that something is not in the paper).
The summary DRFR is the share of YES, pooled over a system's papers, with a 95%
bootstrap interval over papers.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

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
        reqs.append({"question": REQUIREMENT.format(question=qa.question.rstrip("?"), answer=answer),
                     "labels": ["Content"], "qa_id": qa.id})
    return reqs


def run_summary_judge(papers_path, summary_paths, systems: list[str], out_path, judge_spec: dict[str, Any],
                      judge_name: str, mode: str, generation: dict[str, Any] | None, cache_path,
                      threads: int | None = None, prompt_files: list[str] | tuple[str, ...] = ()) -> int:
    """Entry point of rule drfr_summaries: judge the final summaries of the chosen systems."""
    from isqaflow.drfr.judge import judge
    from isqaflow.drfr.responses import load_judge_prompt
    from isqaflow.models.registry import load_model

    papers = {p.id: p for p in read_records(papers_path, Paper)}
    items = []
    for path in summary_paths:
        for _, row in read_jsonl(path):
            if row["system"] not in systems or not row.get("final", True):
                continue
            reqs = paper_requirements(papers[row["paper_id"]])
            if reqs:
                items.append({"instruction_id": row["paper_id"], "model": row["system"], "subset": "Summary",
                              "category": row["dataset"], "input": "", "response": row["summary"],
                              "requirements": reqs, "summarizer": row["summarizer"]})
    model = load_model(judge_spec, cache=cache_path, name=judge_name, threads=threads)
    records = judge(model, items, mode, GenerationParams.from_dict(generation) if generation else None,
                    prompt=load_judge_prompt(prompt_files))
    summarizer = {(it["instruction_id"], it["model"]): it["summarizer"] for it in items}
    for record in records:
        record.update(judge=judge_name, paper_id=record["instruction_id"], system=record["model"],
                      dataset=record["category"], summarizer=summarizer[(record["instruction_id"], record["model"])])
    return write_jsonl(out_path, records)


def summary_drfr(judgments: pd.DataFrame, rounds: int = 1000, alpha: float = 0.05, seed: int = 0) -> pd.DataFrame:
    """Pooled DRFR per (dataset, summarizer, system) with a bootstrap interval over papers."""
    rows = []
    for keys, df in judgments.groupby(["dataset", "summarizer", "system"]):
        per_paper = df.groupby("paper_id")["answer"].agg(yes=lambda a: int((a == "YES").sum()), n="size")
        yes, n = per_paper["yes"].to_numpy(float), per_paper["n"].to_numpy(float)
        idx = np.random.default_rng(seed).integers(0, len(yes), size=(rounds, len(yes)))
        boot = yes[idx].sum(1) / n[idx].sum(1)
        rows.append({
            "dataset": keys[0], "summarizer": keys[1], "system": keys[2], "drfr": yes.sum() / n.sum(),
            "lower": float(np.quantile(boot, alpha / 2)), "upper": float(np.quantile(boot, 1 - alpha / 2)),
            "n_papers": len(yes), "n_questions": int(n.sum()), "n_invalid": int((df["answer"] == "INVALID").sum()),
        })
    return pd.DataFrame(rows)
