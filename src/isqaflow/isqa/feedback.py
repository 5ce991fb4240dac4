"""ISQA feedback: one QA pair answered on the current summary, turned into a fact or a non-fact.

Algorithm 1, lines 7-13: the feedback model answers the question with the summary as
context and returns an answer and an evidence sentence; the answer's token F1 against
the gold answers (SQuAD normalization) decides: F1 >= epsilon makes the evidence a fact,
otherwise a non-fact.

What the paper leaves open, made explicit and configurable:

* A reply adds nothing unless it is complete and grounded: a reply cut at
  ``max_new_tokens``, one that does not parse, one that says the question is
  unanswerable, one whose answer mentions "unanswerable" (the authors' code drops
  those) and one whose evidence is not a sentence of the summary each get their own
  status (:func:`isqaflow.finetune.formats.check_feedback`); the status is the
  decision, recorded with the raw text and counted.
* Several gold answers (the paper speaks of one, a*_i): the authors' code averages the
  F1 over the golds with F1 > 0 (0 when none has; ``iter_refine_on_feedback.py``
  L165-173), the default (``gold_f1: mean_positive``); ``max`` = the maximum over the
  golds (SQuAD's and QASPER's evaluators).
* F1 = 0: the paper's text makes the evidence a non-fact (``zero_f1: non_fact``, the
  default); the authors' public code drops it (``zero_f1: drop``).
* The evidence: the sentence the model generated (``evidence: generated``, the paper),
  or the summary sentence the model finds most likely in the evidence slot of its own
  reply (``evidence: likelihood``), see :func:`likelihood_evidence`.

:func:`ask_feedback` is the one path from (question, context) to a decided
:class:`FeedbackItem`; the refinement loop and the feedback model's known-answer
control both use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

from isqaflow.data.schema import QAPair
from isqaflow.finetune.formats import (
    STATUSES,
    ParsedFeedback,
    check_feedback,
    evidence_slot,
    feedback_request,
    parse_feedback,
)
from isqaflow.models.base import GenerationParams, LanguageModel
from isqaflow.models.fit import fit_document
from isqaflow.models.refusals import naming_records
from isqaflow.text.f1 import max_f1, token_f1

Decision = Literal[
    "fact",
    "non_fact",
    "dropped_zero_f1",
    "truncated",
    "unparsed",
    "unanswerable",
    "unanswerable_answer",
    "evidence_not_in_summary",
]
# Every decision, in the order the feedback statistics show them.
DECISIONS: tuple[str, ...] = (
    "fact",
    "non_fact",
    "dropped_zero_f1",
    *(s for s in STATUSES if s != "ok"),
)
ZERO_F1_POLICIES = ("non_fact", "drop")
GOLD_F1_READINGS = ("mean_positive", "max")


def gold_f1(prediction: str, golds: Sequence[str], reading: str = "mean_positive") -> float:
    """Token F1 of ``prediction`` against several gold answers: the mean over the golds with
    F1 > 0 (the authors' code; 0 when none) or the maximum."""
    if reading not in GOLD_F1_READINGS:
        raise ValueError(f"gold_f1 must be one of {GOLD_F1_READINGS}, got {reading!r}")
    if reading == "max":
        return max_f1(prediction, golds)
    positive = [f for f in (token_f1(prediction, g) for g in golds) if f > 0]
    return sum(positive) / len(positive) if positive else 0.0


EVIDENCE_MODES = ("generated", "likelihood")


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
    finish_reason: str | None = (
        None  # the feedback call's: "stop", or "length" (cut at max_new_tokens)
    )
    input_tokens: int = 0  # of the feedback request
    new_tokens: int = 0  # of the reply
    context_tokens_cut: int = 0  # of the summary, to fit the feedback model's input budget
    generated_evidence: str | None = None  # evidence: likelihood -- the evidence the model wrote
    evidence_scores: list[float] | None = None  # evidence: likelihood -- per summary sentence
    added: bool = False  # False when a near-duplicate was already collected
    duplicate_of: dict | None = field(default=None)

    def as_dict(self) -> dict:
        return asdict(self)


def decide(
    parsed: ParsedFeedback,
    gold_answers: list[str],
    epsilon: float,
    zero_f1: str = "non_fact",
    gold_reading: str = "mean_positive",
) -> tuple[float | None, Decision]:
    """(F1, decision) of a checked reply.

    Any status but "ok" is the decision itself (the reply adds nothing); F1 is still
    computed when the reply has an answer, for the record.  F1 >= ``epsilon`` is a
    fact, below a non-fact; F1 = 0 is dropped under ``zero_f1="drop"``.
    """
    if zero_f1 not in ZERO_F1_POLICIES:
        raise ValueError(f"zero_f1 must be one of {ZERO_F1_POLICIES}, got {zero_f1!r}")
    f1 = gold_f1(parsed.answer, gold_answers, gold_reading) if parsed.answer else None
    if parsed.status != "ok":
        return f1, parsed.status  # type: ignore[return-value]
    assert f1 is not None
    if f1 >= epsilon:
        return f1, "fact"
    if f1 == 0.0 and zero_f1 == "drop":
        return f1, "dropped_zero_f1"
    return f1, "non_fact"


def likelihood_evidence(
    model: LanguageModel,
    requests: Sequence,
    answers: Sequence[str],
    sentence_lists: Sequence[Sequence[str]],
    style: str,
) -> list[tuple[int, list[float]]]:
    """For each request, the index of the context sentence most likely as the reply's evidence.

    Each sentence ``s`` is scored as the continuation ``<answer part><evidence label> s``
    of the feedback request (the reply format of the prompt style, with the model's
    own answer), and the answer part alone is scored too; a sentence's score is its
    mean log-probability per token, ``(log P(prefix + s) - log P(prefix)) / tokens(s)``,
    so that short sentences are not favoured.  Returns (best index, the per-sentence
    scores) per request; ties go to the earlier sentence.
    """
    items = []
    for request, answer, sentences in zip(requests, answers, sentence_lists, strict=True):
        slot = evidence_slot(answer, style)
        items.append((request, [slot.rstrip(), *(slot + s for s in sentences)]))
    try:
        scores = model.score_batch(items)
    except NotImplementedError as err:
        raise ValueError(
            f"isqa.refine.evidence: likelihood needs a feedback model that scores "
            f"continuations (a local hf model): {err}"
        ) from None
    out = []
    for sentences, row in zip(sentence_lists, scores, strict=True):
        prefix = row[0]
        per_token = [
            (score - prefix) / max(1, model.count_tokens(s))
            for s, score in zip(sentences, row[1:], strict=True)
        ]
        best = max(range(len(per_token)), key=lambda i: (per_token[i], -i))
        out.append((best, per_token))
    return out


def ask_feedback(
    model: LanguageModel,
    questions: Sequence[tuple[QAPair, str]],
    params: GenerationParams,
    epsilon: float,
    zero_f1: str = "non_fact",
    style: str = "isqa",
    evidence: str = "generated",
    gold_reading: str = "mean_positive",
) -> list[FeedbackItem]:
    """Ask every (QA pair, context) in one batch; returns one decided item per pair.

    The context (a summary) is cut at its end when the request exceeds
    ``params.max_input_tokens``; the reply is parsed, checked against the context the
    model read (:func:`~isqaflow.finetune.formats.check_feedback`) and decided.
    """
    from isqaflow.text.sentences import split_sentences

    if evidence not in EVIDENCE_MODES:
        raise ValueError(f"evidence must be one of {EVIDENCE_MODES}, got {evidence!r}")
    requests, contexts, cuts = [], [], []
    for qa, context in questions:
        seen: list[str] = []

        def build(text: str, question: str = qa.question, seen: list[str] = seen):
            seen.append(text)
            return feedback_request(question, text, style)

        request, cut = fit_document(model, build, context, params.max_input_tokens)
        requests.append(request)
        contexts.append(seen[-1])  # the context of the request returned: the last one built
        cuts.append(cut)
    with naming_records(requests, [qa.id for qa, _ in questions]):
        outs = model.generate(requests, params.replace(max_input_tokens=None)) if requests else []
    checked = [
        check_feedback(
            parse_feedback(out.text),
            out.finish_reason,
            context,
            check_evidence=evidence == "generated",
        )
        for out, context in zip(outs, contexts, strict=True)
    ]
    generated: dict[int, str] = {}
    scores: dict[int, list[float]] = {}
    if evidence == "likelihood":
        todo = [i for i, c in enumerate(checked) if c.status == "ok"]
        sentence_lists = {i: split_sentences(contexts[i]) for i in todo}
        for i in todo:
            generated[i] = checked[i].evidence
            if not sentence_lists[i]:  # an empty summary has no sentence to choose
                checked[i] = replace(checked[i], status="evidence_not_in_summary")
        todo = [i for i in todo if sentence_lists[i]]
        chosen = likelihood_evidence(
            model,
            [requests[i] for i in todo],
            [checked[i].answer for i in todo],
            [sentence_lists[i] for i in todo],
            style,
        )
        for i, (best, row) in zip(todo, chosen, strict=True):
            checked[i] = replace(checked[i], evidence=sentence_lists[i][best])
            scores[i] = [round(s, 4) for s in row]
    items = []
    for i, ((qa, _), out, parsed) in enumerate(zip(questions, outs, checked, strict=True)):
        f1, decision = decide(parsed, qa.gold_answers, epsilon, zero_f1, gold_reading)
        items.append(
            FeedbackItem(
                qa.id,
                qa.question,
                qa.gold_answers,
                out.text,
                parsed.status,
                parsed.answer,
                parsed.evidence,
                f1,
                decision,
                finish_reason=out.finish_reason,
                input_tokens=out.n_input_tokens,
                new_tokens=out.n_new_tokens,
                context_tokens_cut=cuts[i],
                generated_evidence=generated.get(i),
                evidence_scores=scores.get(i),
            )
        )
    return items
