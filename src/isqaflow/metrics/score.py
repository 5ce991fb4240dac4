"""Entry point of the scoring job: every summary of a (dataset, summarizer), every metric.

Summaries come from the baseline, generic-feedback and ISQA files (every refinement
step).  Identical texts are scored once (ISQA's step 0 is the baseline prompt's
summary).  ROUGE is against the paper's abstract; QAGS and QuestEval against the
paper's body.  One row per summary record, with its metrics; the questions and
answers behind QAGS and QuestEval go to a details file.
"""

from __future__ import annotations

import logging

from isqaflow.data.schema import Paper
from isqaflow.io import read_records, write_jsonl
from isqaflow.isqa.summarize import SummaryRecord
from isqaflow.metrics.qa_metrics import score_summaries
from isqaflow.metrics.scorers import MetricModels
from isqaflow.models.cache import CallCache
from isqaflow.text.rouge import rouge

log = logging.getLogger(__name__)


def run_scoring(
    papers_path,
    summary_paths,
    scores_out,
    details_out,
    models: MetricModels,
    cache_path,
    threads: int | None = None,
) -> int:
    """Score every summary of the files with the metrics' models and settings (``models``)."""
    papers = {p.id: p for p in read_records(papers_path, Paper)}
    rows = [
        r for path in summary_paths for r in read_records(path, SummaryRecord, id_field="paper_id")
    ]
    unknown = sorted({r.paper_id for r in rows} - set(papers))
    if unknown:
        raise ValueError(f"summaries of papers not in {papers_path}: {unknown[:5]}")
    unique = list(dict.fromkeys((r.paper_id, r.summary) for r in rows))
    log.info("%d summary records, %d distinct summaries", len(rows), len(unique))
    metric_settings = models.settings
    generator, answerer, query_weighter = models.build(CallCache(cache_path), threads)
    scores = score_summaries(
        [(text, papers[pid].body()) for pid, text in unique],
        generator,
        answerer,
        metric_settings,
        weighter=query_weighter,
    )
    by_text = {}
    details = []
    for (pid, text), score in zip(unique, scores, strict=True):
        metrics = {k: v for k, v in vars(score).items() if k != "details"}
        metrics.update(rouge(text, papers[pid].abstract))
        by_text[(pid, text)] = metrics
        details.append({"paper_id": pid, "summary": text, **metrics, **score.details})
    out = [{**r.model_dump(), **by_text[(r.paper_id, r.summary)]} for r in rows]
    write_jsonl(details_out, details)
    return write_jsonl(scores_out, out)
