"""The feedback model's known-answer control (issue 12): does inserted gold evidence help it answer?

For each paper, ``per_paper`` of its QA pairs that have gold evidence are drawn with
``keyed_rng(seed, "feedback-control:<paper id>")``.  For each pair the feedback model
answers the question on the paper's first summary s_1 (the one ISQA starts from)
twice, through the refinement loop's own path (:func:`~isqaflow.isqa.feedback.
ask_feedback`: request, fitting, decoding, parsing, checks, decision):

* without the evidence -- the summary as it is;
* with the evidence -- the gold evidence sentence inserted between two of the
  summary's sentences, at a position drawn by the same generator (before the first
  sentence, between any two, or after the last: all equally likely).

The gold evidence sentence is the sentence of the pair's evidence (QASPER's
evidence paragraphs, split into sentences) that holds the largest share of a gold
answer's tokens (the first such sentence on a tie).

Record per pair (the shared contract of ``results/validity/``): ``correct`` is
whether the answer with the evidence matches a gold answer (token F1 >= epsilon, the
loop's threshold), ``baseline_correct`` the same without it, and ``chance`` repeats
``baseline_correct`` as a number (the table's chance column is the share answered right
without the evidence).  The design is paired, so the validity table tests it with the
one-sided exact McNemar test against that baseline
(:func:`isqaflow.stats.mcnemar_test`): it separates only when enough items are gained
(right only with the evidence) against those lost -- 5 gained and none lost at least.  A reply that does not parse
or was cut at ``max_new_tokens`` has ``correct`` None (invalid, counted as not
correct); a reply that says "Unanswerable" or whose answer mentions it is a wrong
answer (``False``).  ``outcome`` is the answer given with the evidence, or the reply's
status when it has none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from isqaflow.data.schema import Paper, QAPair
from isqaflow.isqa.feedback import FeedbackItem, ask_feedback
from isqaflow.models.base import GenerationParams, LanguageModel
from isqaflow.seeds import keyed_rng
from isqaflow.suites.isqa import FEEDBACK_MODEL
from isqaflow.text.f1 import answer_tokens

if TYPE_CHECKING:
    from isqaflow.isqa.refine import RefineSettings

INSTRUMENT = FEEDBACK_MODEL  # the suite descriptor's name of the instrument
CONTROLS = ("gold_evidence",)
# Replies that cannot be read: the control's "invalid" (correct None).
INVALID_STATUSES = ("unparsed", "truncated")


def gold_evidence_sentence(qa: QAPair) -> str | None:
    """The evidence sentence holding the largest share of a gold answer's tokens (None: no evidence)."""
    from isqaflow.text.sentences import split_sentences

    sentences = [s for ev in qa.evidence for s in split_sentences(ev)]
    if not sentences:
        return None
    golds = [set(answer_tokens(g)) for g in qa.gold_answers]

    def share(sentence: str) -> float:
        tokens = set(answer_tokens(sentence))
        return max((len(g & tokens) / len(g) for g in golds if g), default=0.0)

    return max(sentences, key=lambda s: (share(s), -sentences.index(s)))


def insert_sentence(summary: str, sentence: str, position: int) -> str:
    """``summary`` with ``sentence`` inserted before its sentence number ``position`` (0-based)."""
    from isqaflow.text.sentences import split_sentences

    sentences = split_sentences(summary)
    return " ".join([*sentences[:position], sentence.strip(), *sentences[position:]])


def build_controls(
    papers: Sequence[Paper],
    first_summaries: Mapping[str, str],
    per_paper: int,
    seed: int,
    eligible: Mapping[str, Sequence[QAPair]] | None = None,
) -> list[dict[str, Any]]:
    """The control items: per paper, ``per_paper`` seeded answerable QA pairs with gold evidence.

    ``eligible`` restricts the pairs per paper id (the loop's usable pairs); papers
    without a first summary are skipped.  Deterministic in (papers, summaries, seed).
    """
    from isqaflow.text.sentences import split_sentences

    items = []
    for paper in papers:
        if paper.id not in first_summaries:
            continue
        pool = eligible[paper.id] if eligible is not None else paper.qas
        candidates = [
            (qa, ev) for qa in pool if not qa.unanswerable and (ev := gold_evidence_sentence(qa))
        ]
        if not candidates or per_paper <= 0:
            continue
        rng = keyed_rng(seed, f"feedback-control:{paper.id}")
        chosen = sorted(
            rng.choice(len(candidates), size=min(per_paper, len(candidates)), replace=False)
        )
        summary = first_summaries[paper.id]
        n_sentences = len(split_sentences(summary))
        for index in chosen:
            qa, evidence = candidates[int(index)]
            position = int(rng.integers(0, n_sentences + 1))
            items.append(
                {
                    "paper_id": paper.id,
                    "qa": qa,
                    "evidence": evidence,
                    "position": position,
                    "summary": summary,
                    "with_evidence": insert_sentence(summary, evidence, position),
                }
            )
    return items


def _correct(item: FeedbackItem, epsilon: float) -> bool | None:
    if item.status in INVALID_STATUSES:
        return None
    return item.f1 is not None and item.f1 >= epsilon


def _outcome(item: FeedbackItem) -> str:
    return item.answer if item.answer and item.status not in INVALID_STATUSES else item.status


def run_feedback_control(
    feedback_model: LanguageModel,
    items: Sequence[dict[str, Any]],
    params: GenerationParams,
    settings: RefineSettings,
    name: str,
    scope: str,
) -> list[dict[str, Any]]:
    """Ask every control item without and with its evidence (one batch), with the refinement
    loop's own settings (threshold, zero-F1 policy, prompt style, evidence mode, gold F1 reading);
    one record per item."""
    questions = [(c["qa"], c["summary"]) for c in items] + [
        (c["qa"], c["with_evidence"]) for c in items
    ]
    epsilon = settings.epsilon
    asked = ask_feedback(
        feedback_model,
        questions,
        params,
        epsilon,
        settings.zero_f1,
        settings.feedback_style,
        settings.evidence,
        settings.gold_f1,
    )
    without, with_evidence = asked[: len(items)], asked[len(items) :]
    records = []
    for control, plain, helped in zip(items, without, with_evidence, strict=True):
        baseline = _correct(plain, epsilon)
        records.append(
            {
                "instrument": INSTRUMENT,
                "name": name,
                "scope": scope,
                "control": "gold_evidence",
                "rule": "raw",
                "item": f"{control['paper_id']}:{control['qa'].id}",
                "expected": " | ".join(control["qa"].gold_answers),
                "outcome": _outcome(helped),
                "correct": _correct(helped, epsilon),
                "chance": float(bool(baseline)),
                "baseline_correct": baseline,
                "detail": {
                    "evidence": control["evidence"],
                    "position": control["position"],
                    "gold_answers": control["qa"].gold_answers,
                    "with_evidence": {
                        "status": helped.status,
                        "answer": helped.answer,
                        "f1": helped.f1,
                        "raw": helped.raw,
                        "context_tokens_cut": helped.context_tokens_cut,
                    },
                    "without_evidence": {
                        "status": plain.status,
                        "answer": plain.answer,
                        "f1": plain.f1,
                        "raw": plain.raw,
                    },
                },
            }
        )
    return records
