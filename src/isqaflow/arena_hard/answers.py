"""Arena-Hard-Auto's questions answered by the workflow's models, in arena-hard's answer format.

The request is the question's prompt as the one user turn (arena-hard's ``gen_answer.py``
with no system prompt); decoding is the suite's ``arena_hard.generation`` (greedy: arena-hard
answers at temperature 0).  Each answer is written as ``gen_answer.py`` writes one (from
commit 196f6b8 on): ``uid``, ``ans_id``, ``model``, ``messages`` with the answer in
``messages[-1].content.answer`` -- so :func:`isqaflow.data.peers.read_arena_hard_answers`
reads our answers and the released ones alike.  No ``tstamp`` (a rerun writes the same
bytes); ``ans_id`` is the answerer and question id, not arena-hard's random shortuuid.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from isqaflow.data.peers import read_arena_hard_answers, read_arena_hard_questions
from isqaflow.io import write_jsonl
from isqaflow.models.base import GenerationParams

log = logging.getLogger(__name__)

__all__ = ["answer_record", "question_request", "read_questions", "run_answers"]


def read_questions(path: str | Path, limit: int | None = None) -> pd.DataFrame:
    """The questions (``question_id``, ``category``, ``cluster``, ``prompt``), the first
    ``limit`` in file order (None: all)."""
    table = read_arena_hard_questions(path).table
    if limit is not None:
        if limit < 1:
            raise ValueError(f"arena_hard.limit must be at least 1, got {limit}")
        table = table.head(limit)
    return table.reset_index(drop=True)


def question_request(prompt: str) -> list[dict[str, str]]:
    """The chat request of one question: its prompt as the only user turn."""
    return [{"role": "user", "content": prompt}]


def answer_record(question_id: str, prompt: str, model: str, answer: str) -> dict[str, Any]:
    """One answer in arena-hard's ``model_answer`` format (commit 196f6b8 on)."""
    return {
        "uid": question_id,
        "ans_id": f"{model}:{question_id}",
        "model": model,
        "messages": [
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": {"answer": answer}},
        ],
    }


def run_answers(
    questions_path: str | Path,
    out_path: str | Path,
    model_spec: Mapping[str, Any],
    model_name: str,
    generation: Mapping[str, Any],
    cache_path: str | Path,
    limit: int | None = None,
    adapter: str | None = None,
    threads: int | None = None,
) -> int:
    """Entry point of rule arena_hard_answers: the answerer answers every question."""
    from isqaflow.models.registry import load_model

    questions = read_questions(questions_path, limit)
    params = GenerationParams.from_dict(dict(generation))
    if params.do_sample:
        raise ValueError("arena_hard.generation: answers are decoded greedily (do_sample: false)")
    model = load_model(
        dict(model_spec), cache=cache_path, name=model_name, adapter=adapter, threads=threads
    )
    outs = model.generate([question_request(p) for p in questions["prompt"]], params)
    records = [
        answer_record(qid, prompt, model_name, out.text)
        for qid, prompt, out in zip(
            questions["question_id"], questions["prompt"], outs, strict=True
        )
    ]
    n = write_jsonl(out_path, records)
    log.info("%s answered %d questions", model_name, n)
    read_arena_hard_answers(out_path)  # the file reads back in arena-hard's format
    return n
