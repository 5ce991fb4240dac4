"""InFoBench's multi-turn YES/NO judge: one conversation per (instruction, response).

The first user turn holds the judging rules, the instruction's input (left out when
it is empty), the generated text and the first decomposed question; each further
question is the next user turn, with the judge's earlier answers kept as assistant
turns.  The judge never sees the instruction itself: the questions are meant to
capture its requirements (InFoBench, Appendix A.2).

Two modes:

* ``"text"`` -- API judges (GPT-4 behind an OpenAI-compatible endpoint): the reply is
  generated and parsed by :func:`parse_answer`; an unparseable reply is INVALID (it
  counts as NO in :mod:`isqaflow.drfr.aggregate` and is reported there).  Every
  question is asked, also after an INVALID answer; the reference code stops asking
  the rest of that instance, which silently shrinks the denominator.
* ``"logprob"`` -- local (hf) judges: at each turn the log-probabilities of "YES"
  and "NO" as the start of the assistant reply decide; deterministic, never INVALID.

Turn t of every item is judged in one batched model call (turn t only depends on
the same item's earlier answers).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from isqaflow.models.base import GenerationParams, LanguageModel, Message

if TYPE_CHECKING:
    from isqaflow.data.prompts import InfoBenchPrompt

__all__ = ["RULES", "conversation", "first_turn", "invalid_count", "judge", "parse_answer"]

RULES = (
    "You will read a piece of generated text, together with the input it was written "
    "for when there is one, and then answer questions about that text one at a time. "
    "Each question checks a single requirement. Reply YES only when the generated text "
    "satisfies the requirement completely; if it falls short in any way, however "
    "small, reply NO. Also reply NO when the text does not give you enough to decide. "
    "Reply with the single word YES or NO and nothing else."
)

DEFAULT_PARAMS = GenerationParams(max_new_tokens=16)  # greedy; a YES/NO reply is short

# Text that may precede the answer word: whitespace, punctuation, markdown (**, #, _).
_LEADING_NOISE = re.compile(r"[\W_]*")
_LEADING_ANSWER = re.compile(r"(yes|no)\b", re.IGNORECASE)
# The first clause of a reply ends at sentence punctuation, a bracket or a dash.
_CLAUSE_END = re.compile(r"[.,;:!?()\n\-–—]")
_ANY_CASE_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_UPPERCASE_WORD = re.compile(r"\b(YES|NO)\b")


def first_turn(response: str, input_text: str, question: str, prompt: InfoBenchPrompt | None = None) -> str:
    """The opening user message: rules, the input (when not empty), the text, the first question.

    ``prompt``: the published InFoBench prompt (:mod:`isqaflow.data.prompts`) instead of ours.
    """
    if prompt is not None:
        return prompt.first_turn(response, input_text, question)
    blocks = [RULES]
    if input_text.strip():
        blocks.append(f"Input:\n{input_text}")
    blocks.append(f"Generated Text:\n{response}")
    blocks.append(f"Question:\n{question}")
    return "\n\n".join(blocks)


def conversation(
    response: str, input_text: str, questions: Sequence[str], answers: Sequence[str],
    prompt: InfoBenchPrompt | None = None,
) -> list[Message]:
    """Messages up to and including the user turn that asks ``questions[len(answers)]``.

    ``answers`` are the judge's earlier replies, kept verbatim as assistant turns.
    """
    if len(answers) >= len(questions):
        raise ValueError(f"{len(answers)} answers leave none of {len(questions)} questions to ask")
    messages = [{"role": "user", "content": first_turn(response, input_text, questions[0], prompt)}]
    for answer, question in zip(answers, questions[1:]):
        messages.append({"role": "assistant", "content": answer})
        messages.append({"role": "user", "content": prompt.later_turn(question) if prompt else question})
    return messages


def parse_answer(text: str) -> Literal["YES", "NO", "INVALID"]:
    """YES, NO or INVALID from a judge's free-text reply.

    1. A leading answer word, in any case, after whitespace, punctuation or markdown:
       "Yes.", "**NO**", "YES, because ...".  Only whole words count ("Not fully" and
       "NOTE: ..." are not "No").  A first clause that holds both words ("yes and
       no", "Yes/No") is a hedge: INVALID.
    2. Otherwise a lone answer word anywhere, counted only in UPPERCASE -- the form
       the rules ask for -- because a lowercase "no" is ordinary English ("no errors
       were found") and would read as an answer.  Exactly one of YES and NO must
       occur ("The answer is YES"); both, or neither, is INVALID.  The reference
       code's fallback also looks for uppercase YES/NO.
    """
    rest = text[_LEADING_NOISE.match(text).end() :]
    leading = _LEADING_ANSWER.match(rest)
    if leading:
        first_clause = _CLAUSE_END.split(rest, maxsplit=1)[0]
        words = {word.upper() for word in _ANY_CASE_WORD.findall(first_clause)}
        return "INVALID" if len(words) > 1 else leading.group(1).upper()
    words = set(_UPPERCASE_WORD.findall(text))
    return words.pop() if len(words) == 1 else "INVALID"


def _requirements(item: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    requirements = list(item["requirements"])
    if not requirements:
        raise ValueError(f"instruction {item['instruction_id']!r} has no questions to judge")
    return requirements


def judge(
    model: LanguageModel,
    items: Sequence[Mapping[str, Any]],
    mode: Literal["text", "logprob"],
    params: GenerationParams | None = None,
    prompt: InfoBenchPrompt | None = None,
) -> list[dict[str, Any]]:
    """Judge every decomposed question of every item; one record per (item, question).

    An item is ``{"instruction_id", "model" (the responder), "subset", "category",
    "input", "response", "requirements": [{"question", "labels"}, ...]}``.  Records
    come item by item in question order, with ``question_index``, ``question``,
    ``labels``, ``answer`` (YES/NO/INVALID), ``raw`` (the reply text; "" in logprob
    mode) and ``logprob_yes``/``logprob_no`` (None in text mode): the rows
    :mod:`isqaflow.drfr.aggregate` reads.  ``params`` (text mode only) defaults to
    greedy decoding of at most 16 new tokens.
    """
    if mode not in ("text", "logprob"):
        raise ValueError(f"mode must be 'text' or 'logprob', got {mode!r}")
    params = params or DEFAULT_PARAMS
    questions = [[req["question"] for req in _requirements(item)] for item in items]
    turns: list[list[str]] = [[] for _ in items]  # each item's assistant turns so far
    records: list[list[dict[str, Any]]] = [[] for _ in items]
    for turn in range(max((len(q) for q in questions), default=0)):
        active = [i for i, item_questions in enumerate(questions) if turn < len(item_questions)]
        requests = [
            conversation(items[i]["response"], items[i].get("input") or "", questions[i], turns[i], prompt)
            for i in active
        ]
        if mode == "text":
            replies = [g.text for g in model.generate(requests, params)]
            judged = [(parse_answer(reply), reply, None, None) for reply in replies]
        else:
            scores = model.score_batch([(request, ["YES", "NO"]) for request in requests])
            # YES needs the higher log-probability; an exact tie is NO (the strict reading).
            judged = [("YES" if yes > no else "NO", "", yes, no) for yes, no in scores]
        for i, (answer, raw, logprob_yes, logprob_no) in zip(active, judged, strict=True):
            item = items[i]
            requirement = item["requirements"][turn]
            turns[i].append(raw if mode == "text" else answer)
            records[i].append(
                {
                    "instruction_id": item["instruction_id"],
                    "model": item["model"],
                    "subset": item["subset"],
                    "category": item["category"],
                    "question_index": turn,
                    "question": requirement["question"],
                    "labels": list(requirement["labels"]),
                    "answer": answer,
                    "raw": raw,
                    "logprob_yes": logprob_yes,
                    "logprob_no": logprob_no,
                }
            )
    return [record for item_records in records for record in item_records]


def invalid_count(records: Iterable[Mapping[str, Any]]) -> int:
    """How many judgments could not be parsed (they count as NO in the DRFR)."""
    return sum(1 for record in records if record["answer"] == "INVALID")
