"""InFoBench responses: each model of the pool answers each instruction, greedily.

The request is the instruction, followed by the input when there is one (the
InFoBench generation protocol).  Calls are cached, so adding a model to the pool
computes only its responses.
"""

from __future__ import annotations

import logging
from typing import Any

from isqaflow.data.schema import Instruction
from isqaflow.io import read_records, write_jsonl
from isqaflow.models.base import GenerationParams

log = logging.getLogger(__name__)


def instruction_request(instruction: Instruction) -> list[dict[str, str]]:
    text = instruction.instruction
    if instruction.input.strip():
        text = f"{text}\n\n{instruction.input}"
    return [{"role": "user", "content": text}]


def run_responses(
    instructions_path,
    out_path,
    model_spec: dict[str, Any],
    model_name: str,
    generation: dict[str, Any],
    cache_path,
    adapter: str | None = None,
    threads: int | None = None,
) -> int:
    """Entry point of rule drfr_responses."""
    from isqaflow.models.registry import load_model

    instructions = read_records(instructions_path, Instruction)
    params = GenerationParams.from_dict(generation)
    if params.do_sample:
        raise ValueError("InFoBench responses are decoded greedily (do_sample must be false)")
    model = load_model(
        model_spec, cache=cache_path, name=model_name, adapter=adapter, threads=threads
    )
    outs = model.generate([instruction_request(i) for i in instructions], params)
    rows = [
        {
            "instruction_id": i.id,
            "model": model_name,
            "subset": i.subset,
            "category": i.category,
            "response": o.text,
            "new_tokens": o.n_new_tokens,
            "finish_reason": o.finish_reason,
        }
        for i, o in zip(instructions, outs, strict=True)
    ]
    log.info(
        "%s: %d responses, %d new tokens", model_name, len(rows), sum(r["new_tokens"] for r in rows)
    )
    return write_jsonl(out_path, rows)
