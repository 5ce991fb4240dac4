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
4. answer the kept questions on the summary and on the source (all its windows);
5. QAGS = mean token F1 between the two answers (NaN when no question is kept);
   the corpus score is the mean over documents, x 100.
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

    @property
    def usable(self) -> bool:
        return self.valid and not self.duplicate

    def as_dict(self) -> dict[str, Any]:
        out = {"question": self.question, "candidate": self.candidate, "valid": self.valid,
               "duplicate": self.duplicate, "kept": self.kept, "round": self.round, "weight": self.weight}
        for name in ("on_summary", "on_source"):
            r = getattr(self, name)
            out[name] = None if r is None else {"answer": r.answer, "answerability": r.answerability}
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
    return (question.valid and question.on_summary is not None
            and token_f1(question.on_summary.answer, question.candidate) >= candidate_min_f1)


def qags_score(questions: Sequence[Question], candidate_min_f1: float,
               max_kept: int | None = None) -> tuple[float, int]:
    """QAGS of one summary and the number of questions kept: those that pass the filters
    and whose text was not kept before, the first ``max_kept`` in order (all when None).
    Kept questions must be answered on the source."""
    kept = 0
    seen: set[str] = set()
    for q in questions:
        key = normalize_answer(q.question)
        q.kept = (passes_filters(q, candidate_min_f1) and key not in seen
                  and (max_kept is None or kept < max_kept))
        if q.kept:
            seen.add(key)
        kept += q.kept
    if not kept:
        return NAN, 0
    return fmean(token_f1(q.on_summary.answer, q.on_source.answer) for q in questions if q.kept), kept
