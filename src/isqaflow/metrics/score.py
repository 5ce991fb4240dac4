"""Entry point of the scoring job: every summary of a (dataset, summarizer), every metric.

Summaries come from the baseline, generic-feedback and ISQA files (every refinement
step).  Identical texts are scored once (ISQA's step 0 is the baseline prompt's
summary).  ROUGE is against the paper's abstract; QAGS and QuestEval against the
paper's body.  One row per summary record, with its metrics; the questions and
answers behind QAGS and QuestEval go to a details file.
"""

from __future__ import annotations

import logging
from typing import Any

from isqaflow.data.schema import Paper
from isqaflow.io import read_records, write_jsonl
from isqaflow.isqa.summarize import SummaryRecord
from isqaflow.metrics.qa_metrics import QAMetricSettings, score_summaries
from isqaflow.qa.answering import DEFAULT_SPACY_PIPELINE, ExtractiveQA, QuestionAnswerer
from isqaflow.qa.generation import QuestionGenerator
from isqaflow.text.rouge import rouge
from isqaflow.models.base import GenerationParams
from isqaflow.models.cache import CallCache

log = logging.getLogger(__name__)


def build_scorers(qg: dict[str, Any], qa: dict[str, Any], cache: CallCache, threads: int | None,
                  spacy_pipeline: str = DEFAULT_SPACY_PIPELINE):
    """The QG and QA models of the config (one model is loaded once when both use it).

    ``qa`` holds ``model``, ``mode`` and optionally ``window_tokens``, ``generation``,
    ``spans``, ``snap_max_words`` and ``likelihood_shortlist`` (see
    :class:`QuestionAnswerer`); the answer
    candidates of ``spans: likelihood`` come from ``spacy_pipeline``.
    """
    from isqaflow.models.registry import load_model

    qg_model = load_model(qg["model"], cache=cache, name="question-generator", threads=threads)
    generator = QuestionGenerator(qg_model, qg["mode"], GenerationParams.from_dict(qg.get("generation")))
    if qa["mode"] == "extractive":
        qa_backend: Any = ExtractiveQA(qa["model"], cache=cache, threads=threads)
    elif qa["model"] == qg["model"]:
        qa_backend = qg_model
    else:
        qa_backend = load_model(qa["model"], cache=cache, name="question-answerer", threads=threads)
    answerer = QuestionAnswerer(qa_backend, qa["mode"], GenerationParams.from_dict(qa.get("generation")),
                                window_tokens=qa.get("window_tokens", 384), spans=qa.get("spans", "likelihood"),
                                snap_max_words=qa.get("snap_max_words", 10), spacy_pipeline=spacy_pipeline,
                                likelihood_shortlist=qa.get("likelihood_shortlist", 4))
    return generator, answerer


def run_scoring(papers_path, summary_paths, scores_out, details_out, qg: dict[str, Any], qa: dict[str, Any],
                settings: dict[str, Any], cache_path, threads: int | None = None) -> int:
    papers = {p.id: p for p in read_records(papers_path, Paper)}
    rows = [r for path in summary_paths for r in read_records(path, SummaryRecord, id_field="paper_id")]
    unknown = sorted({r.paper_id for r in rows} - set(papers))
    if unknown:
        raise ValueError(f"summaries of papers not in {papers_path}: {unknown[:5]}")
    unique = list(dict.fromkeys((r.paper_id, r.summary) for r in rows))
    log.info("%d summary records, %d distinct summaries", len(rows), len(unique))
    metric_settings = QAMetricSettings.from_dict(settings)
    generator, answerer = build_scorers(qg, qa, CallCache(cache_path), threads, metric_settings.spacy_pipeline)
    scores = score_summaries([(text, papers[pid].body()) for pid, text in unique], generator, answerer,
                             metric_settings)
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
