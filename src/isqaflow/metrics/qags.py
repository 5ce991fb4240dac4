"""QAGS (Wang et al. 2020): do a summary's own questions get the same answers from the source?

Per summary (the shared question pipeline is :mod:`isqaflow.metrics.qa_metrics`):

1. answer candidates from the summary (spaCy entities and noun chunks), K sampled
   with a seed derived from the summary text;
2. a question for each candidate;
3. filters: the question ends with "?", has at least three words, is not a
   duplicate, and the QA model on the summary gives back the candidate (token F1
   with the candidate >= ``candidate_min_f1``; 1.0 = exact after normalization);
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
    kept: bool = False  # passed every QAGS filter

    @property
    def usable(self) -> bool:
        return self.valid and not self.duplicate

    def as_dict(self) -> dict[str, Any]:
        out = {"question": self.question, "candidate": self.candidate, "valid": self.valid,
               "duplicate": self.duplicate, "kept": self.kept}
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


def qags_score(questions: Sequence[Question], candidate_min_f1: float) -> tuple[float, int]:
    """QAGS of one summary and the number of questions kept (its questions must be answered)."""
    for q in questions:
        q.kept = (q.usable and q.on_summary is not None
                  and token_f1(q.on_summary.answer, q.candidate) >= candidate_min_f1)
    kept = [q for q in questions if q.kept]
    if not kept:
        return NAN, 0
    return fmean(token_f1(q.on_summary.answer, q.on_source.answer) for q in kept), len(kept)
