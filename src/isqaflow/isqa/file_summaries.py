"""Summaries of one's own summarizer, from a file (``isqa.file_summaries.<name>: {file: ...,
dataset: ...}``).

The file is checked against the dataset's papers (:mod:`isqaflow.data.outputs`) and
written as a summaries file (:class:`isqaflow.isqa.summarize.SummaryRecord`, one final
summary per paper, system and summarizer both the system's name): QAGS, QuestEval and
ROUGE score it, and the DRFR and arena judges judge it, as any system's summaries.
"""

from __future__ import annotations

import logging

from isqaflow.data.outputs import paper_items, read_system_outputs
from isqaflow.data.schema import Paper
from isqaflow.io import read_records, write_json, write_jsonl
from isqaflow.isqa.summarize import SummaryRecord

log = logging.getLogger(__name__)


def run_file_summaries(
    papers_path,
    system_file,
    out_path,
    check_path,
    system: str,
    dataset: str,
    fmt: str = "auto",
    coverage: str = "full",
) -> int:
    """Entry point of rule file_summaries."""
    papers = read_records(papers_path, Paper)
    outputs = read_system_outputs(system_file, "isqa", paper_items(papers), fmt, coverage)
    rows = [
        SummaryRecord(
            paper_id=p.id,
            dataset=dataset,
            summarizer=system,
            system=system,
            summary=outputs.outputs[p.id].strip(),
        ).model_dump()
        for p in papers
        if p.id in outputs.outputs
    ]
    log.info("%s: %d summaries from %s (%s)", system, len(rows), system_file, outputs.format)
    write_json(
        check_path, {"suite": "isqa", "system": system, "dataset": dataset, **outputs.summary()}
    )
    return write_jsonl(out_path, rows)
