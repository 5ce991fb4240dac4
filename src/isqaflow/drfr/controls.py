"""Known-answer controls of the DRFR judge: requirements asked of responses that cannot meet them.

For a seeded sample of instructions the judge is asked the instruction's questions
about two responses whose answer is known by construction:

* ``empty_response`` -- the empty text;
* ``other_response`` -- a response written for a different instruction (a seeded
  pick among the responders' non-empty responses to the other instructions).

Only the questions :func:`certain_no` selects are scored, expected NO; the control
conversation still asks the instruction's questions in order, exactly as a real
response's conversation does (same prompt, turns, mode and parsing, in the same
batched calls: :func:`isqaflow.drfr.judge.judge_items`), and ends after the last
scored question (later turns cannot change an earlier one).  A content-blind
judge (always YES, always NO, or a coin) is right on a YES/NO question half the
time at best, so the chance level is 0.5.

Every control expects NO: they measure whether the judge refuses a requirement a
response cannot meet (specificity), not whether it grants one that is met.  A judge
that always says NO passes them, and so does a constant judge under the calibrated
rule (its response and content-free log-odds are equal, and 0 is not above the
threshold); the DRFR tables themselves show how often the judge says YES.

``empty_response`` cannot test the calibrated rule (:data:`UNTESTABLE`): the empty
text and the calibration's content-free "N/A" are both content-free, so even a perfect
judge's calibrated log-odds on it are about 0 and its verdict says nothing about the
judge.  Its calibrated records carry ``untestable`` with that reason; the validity
table shows it and counts the group as evidence neither way.

Records follow the project's control-record contract (one per control item and
verdict rule; "raw" always, "calibrated" too in logprob mode) and are read by
:mod:`isqaflow.report.validity`.  An unparseable reply (INVALID) has
``correct: null``: it is counted as invalid and not correct, never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from isqaflow.seeds import keyed_rng
from isqaflow.suites.drfr import JUDGE

__all__ = [
    "CHANCE",
    "CONTROLS",
    "EXPECTED",
    "INSTRUMENT",
    "certain_no",
    "control_items",
    "control_records",
    "other_response",
    "sample_instructions",
]

INSTRUMENT = JUDGE  # the suite descriptor's name of the instrument
CONTROLS = ("empty_response", "other_response")
EXPECTED = "NO"
CHANCE = 0.5
# (control, rule) pairs that cannot show separation, with the reason shown in the table.
UNTESTABLE = {
    ("empty_response", "calibrated"): (
        "the empty text is content-free like the calibration's 'N/A', so a perfect judge's "
        "calibrated log-odds on it are about 0"
    ),
}

# The label of requirements on what the text says (InFoBench's "Content").
CERTAIN_NO_LABEL = "Content"
# Wording under which a requirement can hold for an empty or unrelated text, so NO is
# not certain.  Each group, with an example that an empty text satisfies:
_NOT_CERTAIN = re.compile(
    r"\b(?:"
    # prohibitions and negative constraints: "Does the text avoid jargon?"
    r"not|no|none|never|nor|neither|nothing|without|\w+n[’']t|"
    r"avoid\w*|exclud\w*|omit\w*|refrain\w*|lack\w*|free|prohibit\w*|forbid\w*|"
    # restrictions: "Does the text contain only the JSON?"
    r"only|solely|except|"
    # universal quantifiers, vacuously true of nothing: "Is each snack quick to make?"
    r"each|every|all|any|whichever|whatever|"
    # upper bounds: "Does the answer use under 50 words?"
    r"at\s+most|fewer|less|under|below|maximum|max|up\s+to|within|limit\w*|short\w*|brief\w*|"
    r"concise\w*|"
    # preservation: "Does the text keep the original meaning?" (a text that changes nothing)
    r"keep\w*|kept|maintain\w*|preserv\w*|retain\w*|remain\w*|stay\w*|"
    # qualities of whatever is there: "Is the information in the text accurate?"
    r"accura\w+|factual\w*|true|truthful\w*|consistent\w*|appropriate\w*|safe\w*|"
    r"respectful\w*|neutral\w*|objective\w*|unbiased|error\w*|mistake\w*"
    r")\b",
    re.IGNORECASE,
)


def certain_no(requirement: Mapping[str, Any]) -> bool:
    """Whether NO is certain for this requirement on an empty or unrelated response.

    The rule: the requirement carries the Content label (it asks for something the
    text must say: "Does the generated text mention the order number #4471?"), and
    its question holds none of the words of :data:`_NOT_CERTAIN` -- prohibitions and
    negative constraints ("does not", "avoid", "without", "no ...", "never",
    "exclude"), restrictions ("only"), universal quantifiers ("each", "every",
    "all", "any"), upper bounds ("at most", "under", "fewer", "short"),
    preservation ("keep", "maintain") and qualities of whatever is there
    ("accurate", "consistent", "appropriate", "free of errors"): each can hold
    for an empty text, vacuously.  Whole words, any case.  The rule errs towards
    leaving a requirement out: a smaller sample is harmless, an uncertain expected
    answer is not.  (Residual risk for ``other_response``: a response to another
    instruction on the same topic can meet a Content requirement; the instructions
    of InFoBench are on distinct topics.)
    """
    return CERTAIN_NO_LABEL in requirement["labels"] and not _NOT_CERTAIN.search(
        requirement["question"]
    )


def _requirement_list(instruction: Any) -> list[dict[str, Any]]:
    return [{"question": r.question, "labels": list(r.labels)} for r in instruction.requirements]


def sample_instructions(instructions: Sequence[Any], n: int | None, seed: int) -> list[Any]:
    """A seeded sample of ``n`` instructions (all when None) with a certain-NO requirement.

    Each instruction's place in the draw comes from ``keyed_rng(seed, id)``, so the
    sample does not change when other instructions are added or removed, except by
    their own entry.  The sample keeps the dataset's order.
    """
    eligible = [i for i in instructions if any(certain_no(r) for r in _requirement_list(i))]
    draw = sorted(
        eligible, key=lambda i: keyed_rng(seed, f"drfr control instruction:{i.id}").random()
    )
    chosen = {i.id for i in (draw if n is None else draw[:n])}
    return [i for i in eligible if i.id in chosen]


def other_response(
    instruction_id: str, responses: Sequence[Mapping[str, Any]], seed: int
) -> Mapping[str, Any]:
    """A seeded pick among the non-empty responses to instructions other than ``instruction_id``.

    ``responses`` are response rows (``instruction_id``, ``model``, ``response``);
    the candidates are taken in (instruction, responder) order, so the pick depends
    on the seed and the responses, not on the order of the files.
    """
    candidates = sorted(
        (r for r in responses if r["instruction_id"] != instruction_id and r["response"].strip()),
        key=lambda r: (r["instruction_id"], r["model"]),
    )
    if not candidates:
        raise ValueError(
            f"control other_response for instruction {instruction_id!r}: no non-empty response to "
            "another instruction to take (need at least two instructions with responses)"
        )
    rng = keyed_rng(seed, f"drfr control other_response:{instruction_id}")
    return candidates[int(rng.integers(len(candidates)))]


def control_items(
    instructions: Sequence[Any],
    responses: Sequence[Mapping[str, Any]],
    controls: Sequence[str],
    n_instructions: int | None,
    seed: int,
) -> list[dict[str, Any]]:
    """Judge items of the controls: per sampled instruction and control, its questions up to
    the last scored one.

    Items have the fields :func:`isqaflow.drfr.judge.judge` reads, with ``model``
    set to the control's name, plus ``control``, ``scored`` (indices of the
    certain-NO questions) and ``source`` (for ``other_response``: the instruction and
    responder the response was written by and for; None otherwise).
    """
    unknown = [c for c in controls if c not in CONTROLS]
    if unknown:
        raise ValueError(f"unknown DRFR controls {unknown}; known: {list(CONTROLS)}")
    items = []
    for instruction in sample_instructions(instructions, n_instructions, seed):
        requirements = _requirement_list(instruction)
        scored = [k for k, r in enumerate(requirements) if certain_no(r)]
        requirements = requirements[: scored[-1] + 1]
        for control in controls:
            source = None
            response = ""
            if control == "other_response":
                picked = other_response(instruction.id, responses, seed)
                source = {"instruction_id": picked["instruction_id"], "responder": picked["model"]}
                response = picked["response"]
            items.append(
                {
                    "instruction_id": instruction.id,
                    "model": control,
                    "subset": instruction.subset,
                    "category": instruction.category,
                    "input": instruction.input,
                    "response": response,
                    "requirements": requirements,
                    "control": control,
                    "scored": scored,
                    "source": source,
                }
            )
    return items


def _outcome_record(
    judge_name: str,
    scope: str,
    item: Mapping[str, Any],
    judged: Mapping[str, Any],
    rule: str,
    outcome: str,
) -> dict[str, Any]:
    return {
        "instrument": INSTRUMENT,
        "name": judge_name,
        "scope": scope,
        "control": item["control"],
        "rule": rule,
        "item": f"{item['instruction_id']}#{judged['question_index']}",
        "expected": EXPECTED,
        "outcome": outcome,
        "correct": None if outcome == "INVALID" else outcome == EXPECTED,
        "chance": CHANCE,
        "baseline_correct": None,
        "untestable": UNTESTABLE.get((item["control"], rule)),
        "detail": {
            "question": judged["question"],
            "source": item["source"],
            "raw": judged["raw"],
            "logprob_yes": judged["logprob_yes"],
            "logprob_no": judged["logprob_no"],
            "content_free_log_odds": judged["content_free_log_odds"],
            "calibrated_log_odds": judged["calibrated_log_odds"],
        },
    }


def control_records(
    judge_name: str,
    scope: str,
    items: Sequence[Mapping[str, Any]],
    judged: Sequence[Sequence[Mapping[str, Any]]],
    mode: str,
) -> list[dict[str, Any]]:
    """Control records of judged control items (``judged[i]``: item i's judge records).

    One record per scored question and rule: "raw" (the parsed reply or the likelier
    word) and, in logprob mode, "calibrated".
    """
    rules = ("raw", "calibrated") if mode == "logprob" else ("raw",)
    records = []
    for item, item_records in zip(items, judged, strict=True):
        for index in item["scored"]:
            record = item_records[index]
            for rule in rules:
                outcome = (
                    record["answer_calibrated"] if rule == "calibrated" else record["answer_raw"]
                )
                records.append(_outcome_record(judge_name, scope, item, record, rule, outcome))
    return records
