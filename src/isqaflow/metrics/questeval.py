"""QuestEval (Scialom et al. 2021), with an optional query weighter.

* precision: the summary's questions answered on the source; mean token F1 against
  the summary's answer (the candidate);
* recall: questions generated from the source, answered on the summary; the mean
  answerability, weighted by each question's query weight W(q, D) as in the paper
  (sum of W * answerability / sum of W), or unweighted (every W = 1) without a
  weighter -- the default, as in QuestEval's public code (``do_weighter=False``);
* QuestEval = the harmonic mean of precision and recall, as in the paper;
* ``questeval_v024``: the public v0.2.4 code instead averages arithmetically over
  both directions and its answer scores (F1, answerability and BERTScore; BERTScore
  is not computed here), and with its weighter multiplies each recall score by W
  without renormalizing; reported under its own name (an appendix table).

v0.2.4's choices are the defaults, each with the earlier behaviour as an option
(:class:`QuestEvalSettings`, ``metrics.questeval`` in the config; docs/fidelity.md):
answer candidates (all entities and noun chunks of the first five sentences),
no question filters, a side with no questions scored 0 (``_base_score``: "if no
questions, return a score set to 0"), and answerability ``1 - P(first token
"unanswerable")`` (its QA model's ``keep_score_idx`` 73).

The query weight says how important a source question is -- whether a summary should
answer it.  :class:`QueryWeighter` computes it with a configured model, one of:

* ``questeval_v024`` -- QuestEval's released weighter (``ThomasNLG/t5-weighter_cnndm-en``)
  read as the v0.2.4 code reads it: input ``"{answer} </s> {question} </s> {source}"``,
  W = ``1 - softmax[1176]`` of the first output token, where 1176 is T5's "true"
  (``questeval_metric.py`` L717-718, ``utils.py`` L113) -- so W is the probability of
  *not* "true".  Its README warns that this input format "is no longer correct" for
  the released weighter;
* ``questeval_v011`` -- the same weighter read as v0.1.1 reads it: input
  ``"{sentence index} </s> {answer} </s> {question} </s> {source}"`` (the index of the
  answer's sentence in the source), W = P("true") as the first output token
  (``questeval_metric.py`` v0.1.1 L278-285);
* ``prompted`` -- a chat model asked whether a summary of the text should answer the
  question: W = P(Yes) / (P(Yes) + P(No)) from the log-probabilities of the replies
  (for a run without the released weighter, e.g. offline).

P("true") is the probability of the reply "true" (for the released weighter one T5
token, id 1176, read at the first step as both versions do); the source is cut to
``max_input_tokens`` (512 in both versions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

import numpy as np

from isqaflow.text.f1 import token_f1

NAN = float("nan")
WEIGHTER_MODES = ("prompted", "questeval_v024", "questeval_v011")
CANDIDATE_MODES = ("v024", "sampled")
EMPTY_SIDE = ("zero", "drop")
ANSWERABILITY_READINGS = ("first_token", "odds")
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


@dataclass(frozen=True)
class QuestEvalSettings:
    """QuestEval's options; the defaults are the published v0.2.4 code's behaviour.

    ``candidates``: ``v024`` = every entity and noun chunk of the first five sentences
    (``max_candidates`` caps them per text, first ones first; null = all), ``sampled`` =
    QAGS's K sampled candidates of the whole text (``questions_per_summary`` /
    ``source_questions``); ``filters``: QAGS's "?"/length/duplicate filters on QuestEval's
    questions (v0.2.4 applies none); ``empty_side``: a direction without questions
    scores ``zero`` (v0.2.4) or is ``drop``-ped (the score is NaN); ``answerability``:
    ``first_token`` = 1 - P(the reply's first token is that of "unanswerable") (v0.2.4),
    ``odds`` = P(answer) / (P(answer) + P("unanswerable")).
    """

    candidates: str = "v024"
    max_candidates: int | None = None
    filters: bool = False
    empty_side: str = "zero"
    answerability: str = "first_token"

    def __post_init__(self) -> None:
        for name, allowed in (
            ("candidates", CANDIDATE_MODES),
            ("empty_side", EMPTY_SIDE),
            ("answerability", ANSWERABILITY_READINGS),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"metrics.questeval.{name} must be one of {list(allowed)}, "
                    f"got {getattr(self, name)!r}"
                )
        if self.max_candidates is not None and self.max_candidates < 1:
            raise ValueError(
                f"metrics.questeval.max_candidates must be at least 1 or null, got {self.max_candidates}"
            )


def answerability(result, reading: str = "first_token") -> float:
    """A QA result's answerability as QuestEval reads it (see :class:`QuestEvalSettings`)."""
    if reading == "odds" or result.no_answer_first != result.no_answer_first:  # NaN: not measured
        return result.answerability
    return 1.0 - result.no_answer_first


def harmonic(p: float, r: float) -> float:
    if np.isnan(p) or np.isnan(r):
        return NAN
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def questeval_scores(
    summary_questions, source_questions, empty_side: str = "zero", reading: str = "first_token"
) -> dict[str, float]:
    """``summary_questions``: QuestEval's questions of the summary, answered on the source;
    ``source_questions``: the source's questions, answered on the summary, each with
    its query ``weight`` (1.0 without a weighter); ``empty_side``, ``reading``: see
    :class:`QuestEvalSettings` (a side without questions: every score of that side 0, or NaN)."""
    precision = _mean([token_f1(q.on_source.answer, q.candidate) for q in summary_questions])
    precision_answ = _mean([answerability(q.on_source, reading) for q in summary_questions])
    weights = [q.weight for q in source_questions]
    answerability_values = [answerability(q.on_summary, reading) for q in source_questions]
    recall_f1s = [token_f1(q.on_summary.answer, q.candidate) for q in source_questions]
    recall = _weighted_mean(answerability_values, weights)
    recall_f1 = _weighted_mean(recall_f1s, weights)
    # v0.2.4: each recall score times its weight, averaged without renormalizing
    v024_recall = _mean([a * w for a, w in zip(answerability_values, weights, strict=True)])
    v024_recall_f1 = _mean([f * w for f, w in zip(recall_f1s, weights, strict=True)])
    if empty_side == "zero":  # v0.2.4's _base_score: "if no questions, return a score set to 0"
        if not summary_questions:
            precision = precision_answ = 0.0
        if not source_questions:
            recall = recall_f1 = v024_recall = v024_recall_f1 = 0.0
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
        if mode == "questeval":
            raise ValueError(
                "query-weighter mode 'questeval' is ambiguous: 'questeval_v024' reads QuestEval's "
                "weighter as v0.2.4 does (1 - P(true), '{answer} </s> {question} </s> {source}'), "
                "'questeval_v011' as v0.1.1 does (P(true), with the sentence index first)"
            )
        if mode not in WEIGHTER_MODES:
            raise ValueError(
                f"unknown query-weighter mode {mode!r}; expected one of {list(WEIGHTER_MODES)}"
            )
        if max_input_tokens < 32:
            raise ValueError(
                f"the query weighter's max_input_tokens must be at least 32, got {max_input_tokens}"
            )
        self.model, self.mode, self.max_input_tokens = model, mode, max_input_tokens

    def request(self, question: str, answer: str, source: str, sentence_index: int = 0):
        from isqaflow.models.fit import fit_document

        if self.mode == "questeval_v024":
            build = lambda doc: f"{answer} {WEIGHTER_SEP} {question} {WEIGHTER_SEP} {doc}"  # noqa: E731
        elif self.mode == "questeval_v011":
            build = lambda doc: (  # noqa: E731
                f"{sentence_index} {WEIGHTER_SEP} {answer} {WEIGHTER_SEP} {question} {WEIGHTER_SEP} {doc}"
            )
        else:
            build = lambda doc: [
                {
                    "role": "user",
                    "content": WEIGHTER_PROMPT.format(  # noqa: E731
                        source=doc, question=question, answer=answer
                    ),
                }
            ]
        return fit_document(self.model, build, source, self.max_input_tokens)[0]

    def weigh(
        self, items: Sequence[tuple[str, str, str]], sentence_indices: Sequence[int] | None = None
    ) -> list[float]:
        """A weight in [0, 1] for each ``(question, answer, source)``; ``sentence_indices``: the
        position of each answer's sentence in its source (``questeval_v011``'s input)."""
        if not items:
            return []
        indices = list(sentence_indices) if sentence_indices is not None else [0] * len(items)
        requests = [self.request(q, a, s, i) for (q, a, s), i in zip(items, indices, strict=True)]
        if self.mode.startswith("questeval"):
            scored = self.model.score_batch([(r, ["true"]) for r in requests])
            p_true = [min(1.0, math.exp(t)) for (t,) in scored]
            return [1.0 - p for p in p_true] if self.mode == "questeval_v024" else p_true
        scored = self.model.score_batch([(r, ["Yes", "No"]) for r in requests])
        return [1.0 / (1.0 + math.exp(min(50.0, no - yes))) for yes, no in scored]
