"""Entry point of rule drfr_judge: every responder's responses and the known-answer controls.

The real items (each response to each instruction), the control items
(:mod:`isqaflow.drfr.controls`) and, in logprob mode, the content-free
conversations of contextual calibration go through one call of
:func:`isqaflow.drfr.judge.judge_items`: the same prompt, turns, mode and parsing,
in the same batched model calls, with the model loaded once.  Judgments of the
responses go to the first output, control records to the second.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from isqaflow.data.schema import Instruction
from isqaflow.io import RecordError, read_jsonl, read_records, write_jsonl
from isqaflow.models.base import GenerationParams

log = logging.getLogger(__name__)

RESPONSE_FIELDS = ("instruction_id", "model", "response")
#: what each repetition of a repeated judgment keeps (``repetitions`` of the record)
REPEATED_KEYS = (
    "answer",
    "answer_raw",
    "answer_calibrated",
    "log_odds",
    "calibrated_log_odds",
    "raw",
)


def read_responses(
    paths: Sequence[str | Path], instructions: dict[str, Instruction]
) -> list[dict[str, Any]]:
    """Response rows of every file, checked: the fields the judge reads, known instruction ids."""
    rows = []
    for path in paths:
        for line, row in read_jsonl(path):
            for field in RESPONSE_FIELDS:
                if not isinstance(row.get(field), str):
                    raise RecordError(path, "missing or not a string", line=line, field=field)
            if row["instruction_id"] not in instructions:
                raise RecordError(
                    path,
                    f"unknown instruction {row['instruction_id']!r}",
                    line=line,
                    field="instruction_id",
                )
            rows.append(row)
    return rows


def run_judge(
    instructions_path,
    response_paths,
    out_path,
    controls_path,
    judge_spec: dict[str, Any],
    judge_name: str,
    dataset: str,
    mode: str,
    generation: dict[str, Any] | None,
    cache_path,
    rule: str = "raw",
    controls: Sequence[str] = (),
    control_instructions: int | None = None,
    seed: int = 0,
    threads: int | None = None,
    prompt_files: Sequence[str] = (),
    repeats: int = 1,
) -> int:
    """Judge every response and every control item; write judgments and control records.

    ``controls`` are keys of :data:`isqaflow.drfr.controls.CONTROLS`, asked for
    ``control_instructions`` seeded instructions (None: all); ``dataset`` is the
    control records' scope; ``prompt_files``: InFoBench's published evaluation.py (judges with
    ``prompts: published``).  Returns the number of judgments written.

    ``repeats`` = k > 1 judges every response's conversation k times (judge noise), as the
    arena judges do: each repetition's calls carry its index in their call-cache key (k = 1
    keeps the keys and the records as they always were) and, with sampling, the seed plus the
    index.  A record's answer is the first repetition's (the one the controls are judged in);
    ``repetitions`` lists every repetition's answers and log-odds (:data:`REPEATED_KEYS`).
    """
    from isqaflow.drfr.controls import control_items, control_records
    from isqaflow.drfr.judge import check_rule, judge_items, load_judge_prompt
    from isqaflow.models.registry import load_model

    check_rule(mode, rule)  # before the model is loaded
    instructions = {i.id: i for i in read_records(instructions_path, Instruction)}
    responses = read_responses(response_paths, instructions)
    items = []
    for row in responses:
        inst = instructions[row["instruction_id"]]
        items.append(
            {
                "instruction_id": inst.id,
                "model": row["model"],
                "subset": inst.subset,
                "category": inst.category,
                "input": inst.input,
                "response": row["response"],
                "requirements": [
                    {"question": r.question, "labels": r.labels} for r in inst.requirements
                ],
            }
        )
    controls_items = control_items(
        list(instructions.values()), responses, controls, control_instructions, seed
    )
    if repeats < 1:
        raise ValueError(f"judge {judge_name!r}: repeats must be at least 1, got {repeats}")
    model = load_model(judge_spec, cache=cache_path, name=judge_name, threads=threads)
    params = GenerationParams.from_dict(generation) if generation else None
    prompt = load_judge_prompt(prompt_files)
    model.repetition = 0 if repeats > 1 else None
    judged = judge_items(model, items + controls_items, mode, params, rule, prompt)
    records = [record for item_records in judged[: len(items)] for record in item_records]
    runs = [records]
    for repetition in range(1, repeats):
        model.repetition = repetition
        again = judge_items(
            model, items, mode, params and params.for_repetition(repetition), rule, prompt
        )
        runs.append([record for item_records in again for record in item_records])
    model.repetition = None
    for i, record in enumerate(records):
        record["judge"] = judge_name
        if repeats > 1:
            record["repetitions"] = [{key: run[i][key] for key in REPEATED_KEYS} for run in runs]
    checks = control_records(judge_name, dataset, controls_items, judged[len(items) :], mode)
    invalid = sum(r["answer"] == "INVALID" for r in records)
    if repeats > 1:
        flipped = sum(len({rep["answer"] for rep in r["repetitions"]}) > 1 for r in records)
        log.info(
            "%s: %d of %d judgments changed answer across %d repetitions",
            judge_name,
            flipped,
            len(records),
            repeats,
        )
    log.info(
        "%s judged %d questions of %d responses (%d INVALID, rule %s); "
        "%d control records from %d control "
        "items",
        judge_name,
        len(records),
        len(items),
        invalid,
        rule,
        len(checks),
        len(controls_items),
    )
    write_jsonl(controls_path, checks)
    return write_jsonl(out_path, records)
