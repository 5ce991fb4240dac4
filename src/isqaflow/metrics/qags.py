"""QAGS (Wang et al. 2020): do a summary's own questions get the same answers from the source?

Per summary (the shared question pipeline is :mod:`isqaflow.metrics.qa_metrics`):

1. answer candidates from the summary (spaCy entities and noun chunks), K sampled
   with a seed derived from the summary text;
2. a question for each candidate;
3. filters: the question ends with "?", has at least three words, the QA model on
   the summary gives back the candidate (token F1 with the candidate >=
   ``candidate_min_f1``; 1.0 = exact after normalization), and no question with the
   same text was kept before (a question asked for two candidates has one answer, so
   it can give back at most one of them: the duplicate filter keeps that one, not
   simply the first);
   like QAGS, which generates questions for 10 answer candidates with 10 beams each
   and keeps up to K that pass, further candidates of the summary are tried, K at a
   time, while fewer than K questions pass and the pool (``candidate_pool``
   candidates in all) is not exhausted; at most K questions are kept;
   among the questions that pass, those the question generator found likelier come
   first (``order: generator_probability``, W4ngatang/qags ``qa_utils.py`` L156: the
   questions sorted by their probability before the filters; option ``candidate``: the
   candidates' order);
4. fewer than K kept: QAGS pads to exactly K with questions sampled from all the
   summary's generated questions, filtered or not (``pad_to_k``, ``qa_utils.py``
   L172-176: ``random.sample(qsts, n_qsts - n_clean_qsts)``; seeded here); without
   padding QAGS is the mean over the kept questions, NaN when none is kept;
5. answer the kept (and padding) questions on the summary and on the source (all its
   windows); an answer that is a span of its question is not given
   (``exclude_question_copies``, :mod:`isqaflow.qa.answering`);
6. QAGS = mean token F1 between the two answers; the corpus score is the mean over
   documents, x 100.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from statistics import fmean

from isqaflow.qa.answering import QAResult
from isqaflow.qa.generation import valid_question
from isqaflow.text.f1 import normalize_answer, token_f1

NAN = float("nan")
QAGS_ORDERS = ("generator_probability", "candidate")


@dataclass
class Question:
    question: str
    candidate: str
    valid: bool = True
    duplicate: bool = False
    on_summary: QAResult | None = None
    on_source: QAResult | None = None
    kept: bool = False  # passed every QAGS filter (and is among the first K that did)
    round: int = 1  # 1: the K sampled candidates; 2, 3, ...: QAGS's further candidates
    weight: float = 1.0  # QuestEval's query weight (source questions; 1 without a weighter)
    probability: float = 0.0  # the question generator's mean token log-probability of the question
    padded: int = 0  # times QAGS sampled it to pad to K
    sentence_index: int = (
        0  # its candidate's sentence in the text (QuestEval v0.1.1's weighter input)
    )

    @property
    def usable(self) -> bool:
        return self.valid and not self.duplicate

    def as_dict(self) -> dict[str, Any]:
        out = {
            "question": self.question,
            "candidate": self.candidate,
            "valid": self.valid,
            "duplicate": self.duplicate,
            "kept": self.kept,
            "padded": self.padded,
            "round": self.round,
            "weight": self.weight,
            "probability": self.probability,
        }
        for name in ("on_summary", "on_source"):
            r = getattr(self, name)
            out[name] = (
                None
                if r is None
                else {
                    "answer": r.answer,
                    "answerability": r.answerability,
                    "copies_excluded": r.copies_excluded,
                }
            )
        return out


def filter_questions(questions: list[Question]) -> None:
    """Mark invalid (no "?" or < 3 words) and duplicate questions of one summary."""
    seen: set[str] = set()
    for q in questions:
        q.valid = valid_question(q.question)
        key = normalize_answer(q.question)
        q.duplicate = q.valid and key in seen
        if q.valid:
            seen.add(key)


def share_duplicate_answers(questions: Sequence[Question]) -> None:
    """Give each duplicate question the answers of the first question with the same text
    (the same question about the same text has the same answer; only the first is asked)."""
    first: dict[str, Question] = {}
    for q in questions:
        key = normalize_answer(q.question)
        if not q.valid:
            continue
        if not q.duplicate:
            first.setdefault(key, q)
        elif key in first:
            q.on_summary = first[key].on_summary
            q.on_source = first[key].on_source


def passes_filters(question: Question, candidate_min_f1: float) -> bool:
    """Valid, answered on the summary, and the summary's answer gives back the candidate
    (the duplicate filter is applied among the questions that pass: :func:`qags_score`)."""
    return (
        question.valid
        and question.on_summary is not None
        and token_f1(question.on_summary.answer, question.candidate) >= candidate_min_f1
    )


def select_questions(
    questions: Sequence[Question],
    candidate_min_f1: float,
    max_kept: int | None = None,
    order: str = "candidate",
    pad_to_k: bool = False,
    rng=None,
) -> list[Question]:
    """QAGS's questions of one summary, repeats included: the kept ones (marked ``kept``: they
    pass the filters, their text was not kept before, the first ``max_kept`` in ``order``)
    and, with ``pad_to_k``, the questions sampled (``rng``) from all of ``questions`` to pad
    to ``max_kept`` (marked ``padded``).  Needs the answers on the summary of the
    questions that may pass; the selected ones need answers on both texts."""
    if order not in QAGS_ORDERS:
        raise ValueError(
            f"unknown QAGS question order {order!r}; expected one of {list(QAGS_ORDERS)}"
        )
    ranked = (
        sorted(questions, key=lambda q: -q.probability)
        if order == "generator_probability"
        else questions
    )
    _mark_kept(ranked, candidate_min_f1, max_kept)
    selected = [q for q in ranked if q.kept]
    for q in questions:
        q.padded = 0
    if pad_to_k and max_kept is not None and len(selected) < max_kept and questions:
        need = min(max_kept - len(selected), len(questions))
        for i in sorted(int(i) for i in rng.choice(len(questions), size=need, replace=False)):
            questions[i].padded += 1
            selected.append(questions[i])
    return selected


def qags_value(selected: Sequence[Question]) -> float:
    """Mean token F1 between the summary's and the source's answers (NaN without questions)."""
    if not selected:
        return NAN
    return fmean(token_f1(_answer(q.on_summary), _answer(q.on_source)) for q in selected)


def _answer(result: QAResult | None) -> str:
    return "" if result is None else result.answer


def qags_score(
    questions: Sequence[Question], candidate_min_f1: float, max_kept: int | None = None
) -> tuple[float, int]:
    """QAGS of one summary without padding, in the candidates' order, and the number of
    questions kept: those that pass the filters and whose text was not kept before, the
    first ``max_kept`` (all when None).  Kept questions must be answered on the source."""
    kept = _mark_kept(questions, candidate_min_f1, max_kept)
    if not kept:
        return NAN, 0
    return fmean(
        token_f1(q.on_summary.answer, q.on_source.answer) for q in questions if q.kept
    ), kept


def _mark_kept(questions: Sequence[Question], candidate_min_f1: float, max_kept: int | None) -> int:
    kept = 0
    seen: set[str] = set()
    for q in questions:
        key = normalize_answer(q.question)
        q.kept = (
            passes_filters(q, candidate_min_f1)
            and key not in seen
            and (max_kept is None or kept < max_kept)
        )
        if q.kept:
            seen.add(key)
        kept += q.kept
    return kept
