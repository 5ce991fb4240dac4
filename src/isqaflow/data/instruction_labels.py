"""People's YES/NO labels of the DRFR's decomposed questions, in InFoBench's evaluation format.

One file per responder (``datasets.instructions.<dataset>.human_labels: {responder: path}``),
JSON Lines as InFoBench's ``evaluation.py`` writes them (:mod:`isqaflow.data.peers.infobench_eval`):
per line an instruction's ``id``, its ``decomposed_questions``, the ``output`` that was labelled
(the responder's response, as the judge saw it) and ``eval``, one value per decomposed question --
true for a YES, false for a NO and null for a question that nobody labelled (InFoBench's null is a
reply the judge could not read; here, a question left out of the human sample).  Extra fields
(``instruction``, ``input``, ...) are allowed and not read.

Checked by rule ``check_drfr_human_labels`` right after the instructions are converted
(:func:`check_instruction_labels`; ``drfr_tables`` waits for it), each problem a
:class:`~isqaflow.io.RecordError` naming the file, the line, the instruction and the field: the
file's JSON, the fields' types, an id given twice, an ``eval`` whose length is not the number of
decomposed questions, a value that is not true/false/null, a file without any label; against the
converted instructions: an id that is not one of the dataset's instructions, decomposed questions
that are not that instruction's (the labels would be of other questions).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from isqaflow.data.raw import Raw
from isqaflow.data.schema import Instruction
from isqaflow.io import RecordError, read_jsonl, read_records, write_json
from isqaflow.text.matching import match_key

__all__ = ["LABEL_COLUMNS", "check_instruction_labels", "read_instruction_labels"]

#: One row per labelled question: the instruction, the question's index, the response labelled
#: (spaces collapsed, as the table compares it with the judged response) and 1.0 / 0.0.
LABEL_COLUMNS = ("instruction_id", "question_index", "output", "human")


def _lines(
    path: str | os.PathLike, instructions: Mapping[str, Instruction] | None = None
) -> Iterable[tuple[int, dict[str, Any]]]:
    """Each labelled question of the file as ``(line, row)``, checked (module docstring)."""
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        raw = Raw(path, obj.get("id") if isinstance(obj, dict) else None, obj, line=line)
        iid = raw.id("id")
        if iid in seen:
            raise raw.error(f"instruction labelled twice (first on line {seen[iid]})", "id")
        seen[iid] = line
        questions = raw.strings("decomposed_questions")
        output = raw.get("output", str)
        verdicts = raw.get("eval", list)
        if len(verdicts) != len(questions):
            raise raw.error(
                f"{len(verdicts)} values for {len(questions)} decomposed questions: one each "
                "(true, false, or null where no person labelled the question)",
                "eval",
            )
        if instructions is not None:
            known = instructions.get(iid)
            if known is None:
                raise raw.error("not an instruction of the converted dataset", "id")
            theirs = [r.question for r in known.requirements]
            if len(theirs) != len(questions):
                raise raw.error(
                    f"{len(questions)} decomposed questions, the instruction has {len(theirs)}",
                    "decomposed_questions",
                )
            for index, (mine, wanted) in enumerate(zip(questions, theirs, strict=True)):
                if match_key(mine) != match_key(wanted):
                    raise raw.error(
                        f"not the instruction's question {index} ({wanted[:80]!r}): the label "
                        "would be of another question",
                        f"decomposed_questions[{index}]",
                    )
        for index, verdict in enumerate(verdicts):
            if verdict is None:
                continue
            if not isinstance(verdict, bool):
                raise raw.error(
                    f"expected true, false or null, got {type(verdict).__name__}",
                    f"eval[{index}]",
                )
            yield (
                line,
                {
                    "instruction_id": iid,
                    "question_index": index,
                    "output": match_key(output),
                    "human": 1.0 if verdict else 0.0,
                },
            )
    if not seen:
        raise RecordError(path, "the file holds no labelled instruction", line=1)


def read_instruction_labels(
    path: str | os.PathLike, instructions: Mapping[str, Instruction] | None = None
) -> pd.DataFrame:
    """The labelled questions of one file (:data:`LABEL_COLUMNS`), checked; with
    ``instructions`` (id -> record) also against the converted dataset."""
    rows = [row for _, row in _lines(path, instructions)]
    if not rows:
        raise RecordError(
            path,
            "every eval value is null: no human label (leave the responder out of "
            "human_labels for a run without them)",
            field="eval",
        )
    return pd.DataFrame(rows, columns=list(LABEL_COLUMNS))


def check_instruction_labels(
    label_paths: Mapping[str, str | os.PathLike],
    instructions_path: str | os.PathLike,
    out_path: str | os.PathLike,
) -> dict[str, Any]:
    """Entry point of rule check_drfr_human_labels: every responder's file checked against the
    converted instructions; writes the counts (what drfr_tables waits for).  ``label_paths``
    holds the pool's responders only (the rule's input function leaves the others unread, and
    a name close to a responder's is a config-check problem before any job), so the job's
    params do not change with the pool: an overlay that adds a responder reruns nothing here."""
    instructions = {i.id: i for i in read_records(Path(instructions_path), Instruction)}
    counts = {}
    for responder, path in label_paths.items():
        labels = read_instruction_labels(path, instructions)
        counts[responder] = {
            "file": str(path),
            "instructions": int(labels["instruction_id"].nunique()),
            "questions": len(labels),
            "yes": int(labels["human"].sum()),
        }
    record = {"instructions": str(instructions_path), "responders": counts}
    write_json(out_path, record)
    return record
