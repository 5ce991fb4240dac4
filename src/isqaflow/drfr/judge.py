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

Two rules read a logprob-mode verdict (the judge's ``rule``; both are stored):

* ``"raw"`` -- YES when log P(YES) > log P(NO), i.e. the log-odds are above 0.
* ``"calibrated"`` -- contextual calibration (Zhao et al., 2021, "Calibrate before
  use"): the response's YES-vs-NO log-odds minus the log-odds the same question gets
  for the content-free response :data:`CONTENT_FREE_RESPONSE` ("N/A") in the same
  multi-turn conversation.  YES when the difference is above 0, i.e. when the
  response makes YES likelier than a response with no content does; the threshold is
  fixed at 0 by this construction, not fitted to any data.  The content-free
  conversation depends only on the input and the questions (its earlier assistant
  turns are its own raw answers), so it is judged once per instruction, whichever
  responders are judged (and whatever control conversations ask a prefix of its
  questions).  The content-free text is
  never the empty response the known-answer controls ask about
  (:mod:`isqaflow.drfr.controls`): calibrating on a control's own text and then
  testing on it would be circular.

The conversation a judge sees does not depend on the rule: its earlier assistant
turns are the judge's own replies (the parsed text in text mode, the likelier word in
logprob mode), so the raw and the calibrated verdict come from the same model calls
and switching the rule repeats none of them.  Text-mode judges only have a reply to
parse: ``rule="calibrated"`` with ``mode="text"`` is an error.

Turn t of every item (and of every content-free conversation) is judged in one
batched model call (turn t only depends on the same conversation's earlier answers).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from isqaflow.models.base import GenerationParams, LanguageModel, Message

if TYPE_CHECKING:
    from isqaflow.data.prompts import InfoBenchPrompt

__all__ = [
    "CONTENT_FREE_RESPONSE",
    "RULES",
    "VERDICT_RULES",
    "calibrated_log_odds",
    "check_rule",
    "conversation",
    "first_turn",
    "invalid_count",
    "judge",
    "judge_items",
    "parse_answer",
    "verdict",
]

RULES = (
    "You will read a piece of generated text, together with the input it was written "
    "for when there is one, and then answer questions about that text one at a time. "
    "Each question checks a single requirement. Reply YES only when the generated text "
    "satisfies the requirement completely; if it falls short in any way, however "
    "small, reply NO. Also reply NO when the text does not give you enough to decide. "
    "Reply with the single word YES or NO and nothing else."
)

# The content-free response of contextual calibration (Zhao et al. use "N/A" too).
CONTENT_FREE_RESPONSE = "N/A"
VERDICT_RULES = ("raw", "calibrated")

DEFAULT_PARAMS = GenerationParams(max_new_tokens=16)  # greedy; a YES/NO reply is short

# Text that may precede the answer word: whitespace, punctuation, markdown (**, #, _).
_LEADING_NOISE = re.compile(r"[\W_]*")
_LEADING_ANSWER = re.compile(r"(yes|no)\b", re.IGNORECASE)
# The first clause of a reply ends at sentence punctuation, a bracket or a dash.
_CLAUSE_END = re.compile(r"[.,;:!?()\n\-–—]")
_ANY_CASE_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_UPPERCASE_WORD = re.compile(r"\b(YES|NO)\b")


def first_turn(
    response: str, input_text: str, question: str, prompt: InfoBenchPrompt | None = None
) -> str:
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
    response: str,
    input_text: str,
    questions: Sequence[str],
    answers: Sequence[str],
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
        messages.append(
            {"role": "user", "content": prompt.later_turn(question) if prompt else question}
        )
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


def verdict(log_odds: float) -> Literal["YES", "NO"]:
    """YES when the log-odds are above 0; an exact 0 is NO (the strict reading of the rules)."""
    return "YES" if log_odds > 0 else "NO"


def calibrated_log_odds(
    logprob_yes: float, logprob_no: float, content_free_yes: float, content_free_no: float
) -> float:
    """Contextual calibration: the response's YES-vs-NO log-odds minus the content-free response's.

    Positive when the response makes YES likelier (relative to NO) than the
    content-free response does at the same turn of the same questions.
    """
    return (logprob_yes - logprob_no) - (content_free_yes - content_free_no)


def check_rule(mode: str, rule: str) -> None:
    """Raise ValueError for an unknown mode or rule, or a calibrated rule without log-probs."""
    if mode not in ("text", "logprob"):
        raise ValueError(f"mode must be 'text' or 'logprob', got {mode!r}")
    if rule not in VERDICT_RULES:
        raise ValueError(f"rule must be one of {VERDICT_RULES}, got {rule!r}")
    if rule == "calibrated" and mode != "logprob":
        raise ValueError(
            "rule 'calibrated' compares YES/NO log-probabilities and needs mode 'logprob'; "
            "a text-mode judge only has its reply to parse (use rule 'raw')"
        )


def _requirements(item: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    requirements = list(item["requirements"])
    if not requirements:
        raise ValueError(f"instruction {item['instruction_id']!r} has no questions to judge")
    return requirements


def _content_free_plan(
    items: Sequence[Mapping[str, Any]],
) -> tuple[list[tuple[str, list[str]]], list[int]]:
    """The content-free conversations to judge, and which one each item reads.

    Turn t of a content-free conversation depends only on the input and the first
    t + 1 questions, so an item whose (input, questions) is a prefix of another's --
    a control conversation cut after its last scored question -- reads the longer
    conversation: one per distinct input and longest question list.
    """
    keys = [
        (item.get("input") or "", tuple(req["question"] for req in item["requirements"]))
        for item in items
    ]

    def covers(longer: tuple[str, tuple[str, ...]], key: tuple[str, tuple[str, ...]]) -> bool:
        return longer[0] == key[0] and longer[1][: len(key[1])] == key[1]

    chosen: list[tuple[str, tuple[str, ...]]] = []
    for key in sorted(set(keys), key=lambda k: (-len(k[1]), k)):
        if not any(covers(c, key) for c in chosen):
            chosen.append(key)
    reads = [next(n for n, c in enumerate(chosen) if covers(c, key)) for key in keys]
    return [(input_text, list(questions)) for input_text, questions in chosen], reads


def _run_conversations(
    model: LanguageModel,
    conversations: Sequence[tuple[str, str, Sequence[str]]],
    mode: Literal["text", "logprob"],
    params: GenerationParams,
    prompt: InfoBenchPrompt | None = None,
) -> list[list[tuple[str, str, float | None, float | None]]]:
    """Per (response, input, questions): per turn (raw answer, reply text, logprob YES, logprob NO).

    Turn t of every conversation is one batched model call.
    """
    turns: list[list[str]] = [[] for _ in conversations]  # each conversation's assistant turns
    results: list[list[tuple[str, str, float | None, float | None]]] = [[] for _ in conversations]
    for turn in range(max((len(q) for _, _, q in conversations), default=0)):
        active = [i for i, (_, _, questions) in enumerate(conversations) if turn < len(questions)]
        requests = [conversation(*conversations[i], turns[i], prompt) for i in active]
        if mode == "text":
            replies = [g.text for g in model.generate(requests, params)]
            judged = [(parse_answer(reply), reply, None, None) for reply in replies]
        else:
            scores = model.score_batch([(request, ["YES", "NO"]) for request in requests])
            judged = [(verdict(yes - no), "", yes, no) for yes, no in scores]
        for i, result in zip(active, judged, strict=True):
            answer, reply = result[0], result[1]
            turns[i].append(reply if mode == "text" else answer)
            results[i].append(result)
    return results


def judge_items(
    model: LanguageModel,
    items: Sequence[Mapping[str, Any]],
    mode: Literal["text", "logprob"],
    params: GenerationParams | None = None,
    rule: Literal["raw", "calibrated"] = "raw",
    prompt: InfoBenchPrompt | None = None,
) -> list[list[dict[str, Any]]]:
    """Like :func:`judge`, but one list of records per item (in question order)."""
    check_rule(mode, rule)
    params = params or DEFAULT_PARAMS
    questions = [[req["question"] for req in _requirements(item)] for item in items]
    conversations = [
        (item["response"], item.get("input") or "", item_questions)
        for item, item_questions in zip(items, questions, strict=True)
    ]
    # Logprob mode: the content-free conversations, judged in the same batches as the responses.
    reads: list[int] = []
    if mode == "logprob":
        content_free, reads = _content_free_plan(items)
        reads = [len(items) + n for n in reads]
        conversations += [(CONTENT_FREE_RESPONSE, text, qs) for text, qs in content_free]
    judged = _run_conversations(model, conversations, mode, params, prompt)
    records: list[list[dict[str, Any]]] = []
    for i, item in enumerate(items):
        reference = judged[reads[i]] if mode == "logprob" else None
        item_records = []
        for turn, (answer_raw, reply, logprob_yes, logprob_no) in enumerate(judged[i]):
            requirement = item["requirements"][turn]
            scores: dict[str, Any] = dict.fromkeys(
                (
                    "log_odds",
                    "content_free_logprob_yes",
                    "content_free_logprob_no",
                    "content_free_log_odds",
                    "calibrated_log_odds",
                    "answer_calibrated",
                )
            )
            if reference is not None:
                _, _, free_yes, free_no = reference[turn]
                calibrated = calibrated_log_odds(logprob_yes, logprob_no, free_yes, free_no)
                scores = {
                    "log_odds": logprob_yes - logprob_no,
                    "content_free_logprob_yes": free_yes,
                    "content_free_logprob_no": free_no,
                    "content_free_log_odds": free_yes - free_no,
                    "calibrated_log_odds": calibrated,
                    "answer_calibrated": verdict(calibrated),
                }
            item_records.append(
                {
                    "instruction_id": item["instruction_id"],
                    "model": item["model"],
                    "subset": item["subset"],
                    "category": item["category"],
                    "question_index": turn,
                    "question": requirement["question"],
                    "labels": list(requirement["labels"]),
                    "rule": rule,
                    "answer": scores["answer_calibrated"] if rule == "calibrated" else answer_raw,
                    "answer_raw": answer_raw,
                    "raw": reply,
                    "logprob_yes": logprob_yes,
                    "logprob_no": logprob_no,
                    **scores,
                }
            )
        records.append(item_records)
    return records


def judge(
    model: LanguageModel,
    items: Sequence[Mapping[str, Any]],
    mode: Literal["text", "logprob"],
    params: GenerationParams | None = None,
    rule: Literal["raw", "calibrated"] = "raw",
    prompt: InfoBenchPrompt | None = None,
) -> list[dict[str, Any]]:
    """Judge every decomposed question of every item; one record per (item, question).

    An item is ``{"instruction_id", "model" (the responder), "subset", "category",
    "input", "response", "requirements": [{"question", "labels"}, ...]}``.  Records
    come item by item in question order, with ``question_index``, ``question``,
    ``labels``, ``rule``, ``answer`` (YES/NO/INVALID under ``rule``: the column
    :mod:`isqaflow.drfr.aggregate` reads), ``answer_raw``, ``raw`` (the reply text; ""
    in logprob mode) and ``logprob_yes``/``logprob_no``.  Logprob mode adds
    ``log_odds`` (YES minus NO), the content-free response's
    ``content_free_logprob_yes``/``_no`` and ``content_free_log_odds``,
    ``calibrated_log_odds`` and ``answer_calibrated``; these are None in text mode.
    ``params`` (text mode only) defaults to greedy decoding of at most 16 new tokens;
    ``prompt``: the published InFoBench prompt instead of ours.
    """
    per_item = judge_items(model, items, mode, params, rule, prompt)
    return [record for item_records in per_item for record in item_records]


def load_judge_prompt(prompt_files: Sequence[str]) -> InfoBenchPrompt | None:
    """The published InFoBench prompt from a rule's prompt input (its evaluation.py), or None:
    our own prompt."""
    from isqaflow.data.prompts import load_infobench_prompt

    return load_infobench_prompt(prompt_files[0]) if prompt_files else None


def invalid_count(records: Iterable[Mapping[str, Any]]) -> int:
    """How many judgments could not be parsed (they count as NO in the DRFR)."""
    return sum(1 for record in records if record["answer"] == "INVALID")
