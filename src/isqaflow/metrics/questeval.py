"""QuestEval (Scialom et al. 2021), with an optional query weighter.

* precision: the summary's questions (after the "?"/length/duplicate filters),
  answered on the source; mean token F1 against the summary's answer (the candidate);
* recall: questions generated from the source, answered on the summary; the mean
  answerability, weighted by each question's query weight W(q, D) as in the paper
  (sum of W * answerability / sum of W), or unweighted (every W = 1) without a
  weighter -- the default, as in QuestEval's public code (``do_weighter=False``);
* QuestEval = the harmonic mean of precision and recall, as in the paper;
* ``questeval_v024``: the public v0.2.4 code instead averages arithmetically over
  both directions and its answer scores (F1, answerability and BERTScore; BERTScore
  is not computed here), and with its weighter multiplies each recall score by W
  without renormalizing; reported under its own name (an appendix table).

The query weight says how important a source question is -- whether a summary should
answer it.  :class:`QueryWeighter` computes it with a configured model, one of:

* ``questeval`` -- QuestEval's released weighter (``ThomasNLG/t5-weighter_cnndm-en``,
  a T5 classifier trained on CNN/DM): input ``"{answer} </s> {question} </s>
  {source}"`` cut to ``max_input_tokens``, W = P("true") as the first output token,
  exactly as the v0.2.4 code reads it;
* ``prompted`` -- a chat model asked whether a summary of the text should answer the
  question: W = P(Yes) / (P(Yes) + P(No)) from the log-probabilities of the replies
  (for a run without the released weighter, e.g. offline).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import fmean
from typing import Any

import numpy as np

from isqaflow.text.f1 import token_f1

NAN = float("nan")
WEIGHTER_MODES = ("prompted", "questeval")
WEIGHTER_SEP = "</s>"  # QuestEval's separator between the weighter's input fields
WEIGHTER_PROMPT = (
    "Text: {source}\n\nQuestion: {question}\nAnswer: {answer}\n"
    "Should a summary of the text answer this question? Reply Yes or No."
)


def _mean(values) -> float:
    return fmean(values) if values else NAN


def _weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    total = math.fsum(weights)
    if not values or total <= 0:
        return NAN
    return math.fsum(v * w for v, w in zip(values, weights, strict=True)) / total


def harmonic(p: float, r: float) -> float:
    if np.isnan(p) or np.isnan(r):
        return NAN
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def questeval_scores(summary_questions, source_questions) -> dict[str, float]:
    """``summary_questions``: usable questions of the summary, answered on the source;
    ``source_questions``: the source's questions, answered on the summary, each with
    its query ``weight`` (1.0 without a weighter)."""
    precision = _mean([token_f1(q.on_source.answer, q.candidate) for q in summary_questions])
    precision_answ = _mean([q.on_source.answerability for q in summary_questions])
    weights = [q.weight for q in source_questions]
    answerability = [q.on_summary.answerability for q in source_questions]
    recall_f1s = [token_f1(q.on_summary.answer, q.candidate) for q in source_questions]
    recall = _weighted_mean(answerability, weights)
    recall_f1 = _weighted_mean(recall_f1s, weights)
    # v0.2.4: each recall score times its weight, averaged without renormalizing
    v024_recall = _mean([a * w for a, w in zip(answerability, weights, strict=True)])
    v024_recall_f1 = _mean([f * w for f, w in zip(recall_f1s, weights, strict=True)])
    parts = [x for x in (precision, precision_answ, v024_recall, v024_recall_f1) if not np.isnan(x)]
    return {
        "questeval": harmonic(precision, recall),
        "questeval_precision": precision,
        "questeval_recall": recall,
        "questeval_v024": fmean(parts) if parts else NAN,
        "precision_answerability": precision_answ,
        "recall_f1": recall_f1,
    }


class QueryWeighter:
    """QuestEval's query weights W(q, D) of source questions (see the module docstring).

    ``model``: a language model (through the call cache); ``mode``: ``questeval`` or
    ``prompted``; ``max_input_tokens``: the budget the source is cut to (its tail is
    cut, as the released weighter's 512-token input is).
    """

    def __init__(self, model: Any, mode: str = "prompted", max_input_tokens: int = 512) -> None:
        if mode not in WEIGHTER_MODES:
            raise ValueError(f"unknown query-weighter mode {mode!r}; expected one of {list(WEIGHTER_MODES)}")
        if max_input_tokens < 32:
            raise ValueError(f"the query weighter's max_input_tokens must be at least 32, got {max_input_tokens}")
        self.model, self.mode, self.max_input_tokens = model, mode, max_input_tokens

    def request(self, question: str, answer: str, source: str):
        from isqaflow.models.fit import fit_document

        if self.mode == "questeval":
            build = lambda doc: f"{answer} {WEIGHTER_SEP} {question} {WEIGHTER_SEP} {doc}"  # noqa: E731
        else:
            build = lambda doc: [{"role": "user", "content": WEIGHTER_PROMPT.format(  # noqa: E731
                source=doc, question=question, answer=answer)}]
        return fit_document(self.model, build, source, self.max_input_tokens)[0]

    def weigh(self, items: Sequence[tuple[str, str, str]]) -> list[float]:
        """A weight in [0, 1] for each ``(question, answer, source)``."""
        if not items:
            return []
        requests = [self.request(q, a, s) for q, a, s in items]
        if self.mode == "questeval":
            scored = self.model.score_batch([(r, ["true"]) for r in requests])
            return [min(1.0, math.exp(true)) for (true,) in scored]
        scored = self.model.score_batch([(r, ["Yes", "No"]) for r in requests])
        return [1.0 / (1.0 + math.exp(min(50.0, no - yes))) for yes, no in scored]
