"""Responses of one's own model to the InFoBench instructions, from a file
(``drfr.responders.<name>: {file: ...}``).

The file is checked against the instructions (:mod:`isqaflow.data.outputs`) and
written in the records of :mod:`isqaflow.drfr.responses`; the DRFR judge then asks
its YES/NO questions about them as about any model's responses.
"""

from __future__ import annotations

import logging

from isqaflow.data.outputs import instruction_items, read_system_outputs
from isqaflow.data.schema import Instruction
from isqaflow.io import read_records, write_json, write_jsonl

log = logging.getLogger(__name__)


def run_file_responses(
    instructions_path,
    system_file,
    out_path,
    check_path,
    responder: str,
    fmt: str = "auto",
    coverage: str = "full",
) -> int:
    """Entry point of rule file_responses."""
    instructions = read_records(instructions_path, Instruction)
    outputs = read_system_outputs(
        system_file, "drfr", instruction_items(instructions), fmt, coverage
    )
    rows = [
        {
            "instruction_id": i.id,
            "model": responder,
            "subset": i.subset,
            "category": i.category,
            "response": outputs.outputs[i.id],
            "new_tokens": None,
            "finish_reason": None,
            "source": "file",
        }
        for i in instructions
        if i.id in outputs.outputs
    ]
    log.info("%s: %d responses from %s (%s)", responder, len(rows), system_file, outputs.format)
    write_json(check_path, {"suite": "drfr", "system": responder, **outputs.summary()})
    return write_jsonl(out_path, rows)
