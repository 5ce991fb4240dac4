"""ISQA feedback: one QA pair answered on the current summary, turned into a fact or a non-fact.

Algorithm 1, lines 7-13: the feedback model answers the question with the summary as
context and returns an answer and an evidence sentence; the answer's token F1 against
the gold answers (SQuAD normalization, maximum over the gold answers) decides: F1 >=
epsilon makes the evidence a fact, otherwise a non-fact.

What the paper leaves open, made explicit and configurable:

* A reply that says the question is unanswerable, or that does not parse into answer
  + evidence, adds nothing; it is recorded with its raw text and counted.
* F1 = 0: the paper's text makes the evidence a non-fact (``zero_f1: non_fact``, the
  default); the authors' public code drops it (``zero_f1: drop``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from isqaflow.finetune.formats import ParsedFeedback
from isqaflow.text.f1 import max_f1

Decision = Literal["fact", "non_fact", "unanswerable", "unparsed", "dropped_zero_f1"]
ZERO_F1_POLICIES = ("non_fact", "drop")


@dataclass
class FeedbackItem:
    question_id: str
    question: str
    gold_answers: list[str]
    raw: str
    status: str
    answer: str
    evidence: str
    f1: float | None
    decision: Decision
    added: bool = False  # False when a near-duplicate was already collected
    duplicate_of: dict | None = field(default=None)

    def as_dict(self) -> dict:
        return asdict(self)


def decide(parsed: ParsedFeedback, gold_answers: list[str], epsilon: float, zero_f1: str = "non_fact"
           ) -> tuple[float | None, Decision]:
    if zero_f1 not in ZERO_F1_POLICIES:
        raise ValueError(f"zero_f1 must be one of {ZERO_F1_POLICIES}, got {zero_f1!r}")
    if parsed.status == "unanswerable":
        return None, "unanswerable"
    if parsed.status != "ok":
        return None, "unparsed"
    f1 = max_f1(parsed.answer, gold_answers)
    if f1 >= epsilon:
        return f1, "fact"
    if f1 == 0.0 and zero_f1 == "drop":
        return f1, "dropped_zero_f1"
    return f1, "non_fact"
