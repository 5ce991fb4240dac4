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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from isqaflow.data.schema import UNANSWERABLE, QAExample

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
        return [{"role": "user", "content": ISQA_FEEDBACK_PROMPT.format(question=question, context=context)}]
    if style == "gpt35":
        return [
            {"role": "system", "content": GPT35_SYSTEM},
            {"role": "user", "content": GPT35_USER.format(context=context, question=question)},
        ]
    raise ValueError(f"unknown feedback prompt style {style!r}; expected one of {FEEDBACK_PROMPT_STYLES}")


Status = Literal["ok", "unanswerable", "unparsed"]

_LABELLED = re.compile(
    r"^\s*(?:1\s*[.):]?\s*)?(?:the\s+)?answer\s*(?:is)?\s*[:\-]\s*(?P<answer>.*?)\s*"
    r"(?:\n|\s)(?:2\s*[.):]?\s*)?(?:the\s+)?(?:most\s+relevant\s+)?evidence(?:\s+sentence)?\s*[:\-]\s*(?P<evidence>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_NUMBERED = re.compile(r"^\s*1\s*[.)]\s*(?P<answer>.+?)\s*\n\s*2\s*[.)]\s*(?P<evidence>.+)$", re.DOTALL)
# Replies that echo the prompt's own labels ("The answer to this question is: ... The most
# relevant evidence sentence in the context ...: ..."), with "1."/"1)"/"1-" markers or none.
_ANSWER_LABEL = re.compile(r"^\s*(?:1\s*[.)\-:]\s*)?(?:the\s+)?answer\b[^\n:]{0,60}:\s*", re.IGNORECASE)
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
    answer = _NESTED_ANSWER.sub("", text[label.end() : found.start() if found else len(text)].strip())
    evidence = text[found.end() :].strip().split("\n\n")[0] if found else ""
    return answer, evidence


def parse_feedback(raw: str) -> ParsedFeedback:
    text = raw.strip()
    candidates = [(m["answer"], m["evidence"]) for p in (_LABELLED, _NUMBERED) if (m := p.match(text))]
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


def fit_request(model, question: str, context_parts: list[str], max_input_tokens: int | None,
                style: str = "isqa", required: int = 0) -> tuple[list[dict[str, str]], int, list[int]]:
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
        if len(model.encode_request(build([context_parts[j] for j in [*kept, i]]))) <= max_input_tokens:
            kept.append(i)
    request = build([context_parts[j] for j in kept])
    overflow = len(model.encode_request(request)) - max_input_tokens
    if overflow <= 0:
        return request, 0, kept
    context = "\n".join(context_parts[j] for j in kept)
    budget = max(0, model.count_tokens(context) - overflow)
    context, cut = model.truncate_text(context, budget)
    return feedback_request(question, context, style), cut, kept


def example_request(model, example: QAExample, max_input_tokens: int | None, style: str = "isqa",
                    drop_gold: bool = False) -> tuple[list[dict[str, str]], int]:
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
    request, cut, kept = fit_request(model, example.question, [paragraphs[i][1] for i in order],
                                     max_input_tokens, style, required=n_gold)
    if not cut:  # restore the original order of the paragraphs kept
        chosen = sorted(order[j] for j in kept)
        request = feedback_request(example.question, "\n".join(paragraphs[i][1] for i in chosen), style)
    return request, cut
