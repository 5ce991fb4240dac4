"""The feedback model's task format: prompt, training target, and the parser of its output.

The prompt is ISQA's feedback prompt (Appendix E.3).  The target answers in the two
numbered parts the prompt asks for::

    1. Answer: <answer>
    2. Evidence: <evidence sentence(s)>

or ``Unanswerable``.  The parser reads every format seen in practice -- the numbered
form, ``Answer: ... Evidence: ...`` (GPT-3.5's format, Appendix E.5), a bare
numbered list, replies that echo the prompt's own labels ("The answer to this
question is: ... The most relevant evidence sentence ...: ..."), ``Unanswerable`` --
and reports anything else as unparsed, with its raw text, so it is counted and never
guessed at.

:func:`check_feedback` then vets a parsed reply for ISQA's refinement loop (and the
feedback model's known-answer control), where a reply may only add a fact or a
non-fact when it is complete and grounded.  Each failure has its own status, and
the first that applies wins:

=========================  ============================================================
status                     the reply
=========================  ============================================================
``truncated``              was cut at ``max_new_tokens`` (finish reason "length"): its
                           evidence may be cut mid-sentence, so it is not trusted
``unparsed``               does not follow the format (from :func:`parse_feedback`)
``unanswerable``           says the question is unanswerable (from :func:`parse_feedback`)
``unanswerable_answer``    has an answer that mentions "unanswerable" ("2. Unanswerable",
                           "Unanswerable questions"): the authors' code drops every reply
                           whose answer mentions it
``evidence_not_in_summary``  gives an evidence that is not a sentence of the context
                           (see :func:`match_evidence`), e.g. "The"
``ok``                     none of the above: the answer decides fact or non-fact
=========================  ============================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from isqaflow.data.schema import UNANSWERABLE, QAExample
from isqaflow.text.f1 import answer_tokens, token_f1

# The feedback model's prompt: ISQA's (Appendix E.3) or GPT-3.5's (Appendix E.5), word for word.
ISQA_FEEDBACK_PROMPT = (
    "Below is a question paired with context. Please return your response in two parts:\n"
    "1. The answer to the question\n"
    "2. The most relevant evidence sentence in the context to your answer.\n"
    "If the question is unanswerable, directly return 'Unanswerable'.\n"
    "Question: {question}\n"
    "Context: {context}"
)

GPT35_SYSTEM = "You are good at answering reading comprehension questions and extracting corresponding evidence."
GPT35_USER = (
    "Read the context\n"
    "Context: {context}\n"
    "Please answer the following question by:\n"
    "1. Provide the answer\n"
    "2. Provide the evidence sentence in the context.\n"
    'Please use "Answer:" and "Evidence:" to denote these two parts when generating your response: {question}'
)

FEEDBACK_PROMPT_STYLES = ("isqa", "gpt35")


def feedback_request(question: str, context: str, style: str = "isqa") -> list[dict[str, str]]:
    """The feedback model's request: ISQA's prompt (E.3) or GPT-3.5's system/user pair (E.5)."""
    if style == "isqa":
        return [
            {
                "role": "user",
                "content": ISQA_FEEDBACK_PROMPT.format(question=question, context=context),
            }
        ]
    if style == "gpt35":
        return [
            {"role": "system", "content": GPT35_SYSTEM},
            {"role": "user", "content": GPT35_USER.format(context=context, question=question)},
        ]
    raise ValueError(
        f"unknown feedback prompt style {style!r}; expected one of {FEEDBACK_PROMPT_STYLES}"
    )


Status = Literal[
    "ok", "unanswerable", "unparsed", "truncated", "unanswerable_answer", "evidence_not_in_summary"
]
# Statuses in the order check_feedback() tests them; every one but "ok" adds nothing.
STATUSES: tuple[str, ...] = (
    "truncated",
    "unparsed",
    "unanswerable",
    "unanswerable_answer",
    "evidence_not_in_summary",
    "ok",
)

_LABELLED = re.compile(
    r"^\s*(?:1\s*[.):]?\s*)?(?:the\s+)?answer\s*(?:is)?\s*[:\-]\s*(?P<answer>.*?)\s*"
    r"(?:\n|\s)(?:2\s*[.):]?\s*)?(?:the\s+)?(?:most\s+relevant\s+)?evidence(?:\s+sentence)?\s*[:\-]\s*(?P<evidence>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_NUMBERED = re.compile(
    r"^\s*1\s*[.)]\s*(?P<answer>.+?)\s*\n\s*2\s*[.)]\s*(?P<evidence>.+)$", re.DOTALL
)
# Replies that echo the prompt's own labels ("The answer to this question is: ... The most
# relevant evidence sentence in the context ...: ..."), with "1."/"1)"/"1-" markers or none.
_ANSWER_LABEL = re.compile(
    r"^\s*(?:1\s*[.)\-:]\s*)?(?:the\s+)?answer\b[^\n:]{0,60}:\s*", re.IGNORECASE
)
_EVIDENCE_LABEL = re.compile(
    r"(?:^|\n)\s*(?:2\s*[.)\-:]\s*)?[^\n:]{0,40}\bevidence\b[^\n:]{0,60}:\s*"
    r"|(?<=\s)2[ \t]*[.)\-][ \t]*(?:the\s+)?(?:most\s+relevant\s+)?evidence\b[^\n:]{0,60}:\s*",
    re.IGNORECASE,
)
_NESTED_ANSWER = re.compile(r"^(?:the\s+)?answer\s+is\s*:?\s*", re.IGNORECASE)
# "Unanswerable" as the whole reply, or followed by punctuation or a line break
# ("Unanswerable questions ..." is an answer, not a refusal).
_UNANSWERABLE = re.compile(
    r"^\W*(?:1\s*[.)]\s*)?(?:answer\s*:\s*)?(?:the\s+question\s+is\s+)?unanswerable(?:\W*$|[.!,:;]|\s*\n)",
    re.IGNORECASE,
)


def format_target(answer: str, evidence: list[str] | str, unanswerable: bool = False) -> str:
    if unanswerable:
        return UNANSWERABLE
    if isinstance(evidence, list):
        evidence = " ".join(e.strip() for e in evidence)
    return f"1. Answer: {answer.strip()}\n2. Evidence: {evidence.strip()}"


def evidence_slot(answer: str, style: str = "isqa") -> str:
    """The start of a well-formed reply up to its evidence: what an evidence sentence continues.

    ISQA's format is the fine-tuning target's (:func:`format_target`); GPT-3.5's is
    the "Answer:"/"Evidence:" pair its prompt asks for.
    """
    if style == "isqa":
        return f"1. Answer: {answer.strip()}\n2. Evidence: "
    if style == "gpt35":
        return f"Answer: {answer.strip()}\nEvidence: "
    raise ValueError(
        f"unknown feedback prompt style {style!r}; expected one of {FEEDBACK_PROMPT_STYLES}"
    )


@dataclass(frozen=True)
class ParsedFeedback:
    status: Status
    answer: str = ""
    evidence: str = ""
    raw: str = ""

    @property
    def consistent(self) -> bool:
        """The output follows the required format (answer + evidence, or Unanswerable)."""
        return self.status != "unparsed"


def _clean(text: str) -> str:
    text = text.strip().lstrip("-*• ").strip().strip('"“”‘’`').strip()
    return re.sub(r"\s+", " ", text)


def _echoed_labels(text: str) -> tuple[str, str] | None:
    """(answer, evidence) from a reply that repeats the prompt's labels, or None."""
    label = _ANSWER_LABEL.match(text)
    if not label:
        return None
    found = _EVIDENCE_LABEL.search(text, label.end())
    answer = _NESTED_ANSWER.sub(
        "", text[label.end() : found.start() if found else len(text)].strip()
    )
    evidence = text[found.end() :].strip().split("\n\n")[0] if found else ""
    return answer, evidence


def parse_feedback(raw: str) -> ParsedFeedback:
    text = raw.strip()
    candidates = [
        (m["answer"], m["evidence"]) for p in (_LABELLED, _NUMBERED) if (m := p.match(text))
    ]
    echoed = _echoed_labels(text)
    if echoed:
        candidates.append(echoed)
    for answer, evidence in candidates:
        answer, evidence = _clean(answer), _clean(evidence)
        if re.match(r"unanswerable\b", answer, re.IGNORECASE) and _UNANSWERABLE.match(answer):
            return ParsedFeedback("unanswerable", raw=raw)
        if answer and evidence:
            return ParsedFeedback("ok", answer=answer, evidence=evidence, raw=raw)
    if _UNANSWERABLE.match(text):
        return ParsedFeedback("unanswerable", raw=raw)
    return ParsedFeedback("unparsed", raw=raw)


_MENTIONS_UNANSWERABLE = re.compile(r"unanswerable", re.IGNORECASE)

# Evidence matching (match_evidence): a clause must cover at least half of its sentence,
# a near-copy must reach a token F1 of 0.8 with it.
EVIDENCE_MIN_COVERAGE = 0.5
EVIDENCE_MIN_F1 = 0.8


@dataclass(frozen=True)
class EvidenceMatch:
    """Where an evidence sits in the context: the sentence(s) it matches, how, and how well."""

    sentences: tuple[int, ...]  # indices into split_sentences(context)
    how: Literal["containment", "overlap"]
    score: float  # the lowest coverage (containment) or token F1 (overlap) over its sentences

    def as_dict(self) -> dict:
        return {"sentences": list(self.sentences), "how": self.how, "score": round(self.score, 4)}


def _contained(needle: list[str], haystack: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def _rank(match: tuple[int, str, float]) -> tuple[bool, float]:
    """Containment beats overlap, then the higher score; the first sentence wins ties."""
    return match[1] == "containment", match[2]


def _match_sentence(
    evidence: str, sentences: list[str], normalized: list[list[str]]
) -> tuple[int, str, float] | None:
    tokens = answer_tokens(evidence)
    if not tokens:
        return None
    best: tuple[int, str, float] | None = None
    for index, (sentence, sent_tokens) in enumerate(zip(sentences, normalized, strict=True)):
        if not sent_tokens:
            continue
        if (
            _contained(tokens, sent_tokens)
            and len(tokens) / len(sent_tokens) >= EVIDENCE_MIN_COVERAGE
        ):
            candidate = (index, "containment", len(tokens) / len(sent_tokens))
        elif (f1 := token_f1(evidence, sentence)) >= EVIDENCE_MIN_F1:
            candidate = (index, "overlap", f1)
        else:
            continue
        if best is None or _rank(candidate) > _rank(best):
            best = candidate
    return best


def match_evidence(evidence: str, context: str) -> EvidenceMatch | None:
    """The sentence(s) of ``context`` that ``evidence`` is, or None: "is a sentence of the summary".

    Both texts are split into sentences (NLTK Punkt, :func:`~isqaflow.text.sentences.
    split_sentences`) and compared after SQuAD normalization (lowercase, no
    punctuation or articles, single spaces), so quotes, case and punctuation the
    model changed do not matter.  An evidence sentence matches a context sentence when

    * containment: its normalized tokens occur contiguously in the sentence and cover at
      least ``EVIDENCE_MIN_COVERAGE`` (half) of it -- the sentence itself, or a clause
      of it; or
    * overlap: its token F1 with the sentence is at least ``EVIDENCE_MIN_F1`` (0.8) --
      the sentence copied with a word changed or dropped.

    An evidence of several sentences (models often return two adjacent ones) matches
    when every one of its sentences does; the evidence as a whole is tried too, for a
    sentence split differently.  Evidence that normalizes to nothing ("The", "...")
    never matches, nor does a fragment ("The model" of "The model has 12 layers.").
    """
    from isqaflow.text.sentences import split_sentences

    sentences = split_sentences(context)
    normalized = [answer_tokens(s) for s in sentences]
    whole = _match_sentence(evidence, sentences, normalized)
    if whole is not None:
        return EvidenceMatch((whole[0],), whole[1], whole[2])  # type: ignore[arg-type]
    parts = split_sentences(evidence)
    if len(parts) < 2:
        return None
    matches = [_match_sentence(part, sentences, normalized) for part in parts]
    if any(m is None for m in matches):
        return None
    how = "containment" if all(m[1] == "containment" for m in matches) else "overlap"  # type: ignore[index]
    return EvidenceMatch(
        tuple(dict.fromkeys(m[0] for m in matches)),
        how,  # type: ignore[index]
        min(m[2] for m in matches),
    )  # type: ignore[index]


def check_feedback(
    parsed: ParsedFeedback, finish_reason: str | None, context: str, check_evidence: bool = True
) -> ParsedFeedback:
    """The parsed reply with the status ISQA's loop acts on (module docstring: the first that applies).

    ``finish_reason`` is the model's ("length" = cut at ``max_new_tokens``);
    ``context`` is the text the feedback model read (the summary, as fitted).
    ``check_evidence=False`` skips the evidence check (when the evidence will be
    chosen among the context's sentences instead).  The answer and evidence are kept
    for the record whatever the status.
    """
    if finish_reason == "length":
        return replace(parsed, status="truncated")
    if parsed.status != "ok":
        return parsed
    if _MENTIONS_UNANSWERABLE.search(parsed.answer):
        return replace(parsed, status="unanswerable_answer")
    if check_evidence and match_evidence(parsed.evidence, context) is None:
        return replace(parsed, status="evidence_not_in_summary")
    return parsed


def fit_request(
    model,
    question: str,
    context_parts: list[str],
    max_input_tokens: int | None,
    style: str = "isqa",
    required: int = 0,
) -> tuple[list[dict[str, str]], int, list[int]]:
    """The feedback request with as much context as fits in ``max_input_tokens``.

    ``context_parts`` are added in order; the first ``required`` parts are always
    kept (the gold paragraphs of a training example), later ones only while the
    request stays within the budget.  If the required parts alone are too long, the
    context is cut at the end.  Returns the request, the number of tokens cut and the
    indices of the parts kept.
    """

    def build(parts: list[str]) -> list[dict[str, str]]:
        return feedback_request(question, "\n".join(parts), style)

    if max_input_tokens is None:
        return build(context_parts), 0, list(range(len(context_parts)))
    kept = list(range(min(required, len(context_parts))))
    for i in range(required, len(context_parts)):
        if (
            len(model.encode_request(build([context_parts[j] for j in [*kept, i]])))
            <= max_input_tokens
        ):
            kept.append(i)
    request = build([context_parts[j] for j in kept])
    overflow = len(model.encode_request(request)) - max_input_tokens
    if overflow <= 0:
        return request, 0, kept
    context = "\n".join(context_parts[j] for j in kept)
    budget = max(0, model.count_tokens(context) - overflow)
    context, cut = model.truncate_text(context, budget)
    return feedback_request(question, context, style), cut, kept


def example_request(
    model,
    example: QAExample,
    max_input_tokens: int | None,
    style: str = "isqa",
    drop_gold: bool = False,
) -> tuple[list[dict[str, str]], int]:
    """A HotpotQA example as a feedback request: the gold paragraphs always fit first.

    Paragraphs keep their original order.  ``drop_gold`` removes the paragraphs that
    hold the evidence, which makes the example unanswerable.
    """
    paragraphs = []
    for para in example.context:
        is_gold = any(s.strip() in example.evidence for s in para.sentences)
        if not (drop_gold and is_gold):
            paragraphs.append((is_gold, " ".join(s.strip() for s in para.sentences)))
    # the gold paragraphs are offered first, so a tight budget drops distractors only
    order = sorted(range(len(paragraphs)), key=lambda i: not paragraphs[i][0])
    n_gold = sum(1 for is_gold, _ in paragraphs if is_gold)
    request, cut, kept = fit_request(
        model,
        example.question,
        [paragraphs[i][1] for i in order],
        max_input_tokens,
        style,
        required=n_gold,
    )
    if not cut:  # restore the original order of the paragraphs kept
        chosen = sorted(order[j] for j in kept)
        request = feedback_request(
            example.question, "\n".join(paragraphs[i][1] for i in chosen), style
        )
    return request, cut
