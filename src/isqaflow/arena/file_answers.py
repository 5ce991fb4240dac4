"""Answers of one's own RAG system, from a file (``arena.answerers.<name>: {file: ...}``).

The file is checked against the queries of the arena's domains
(:mod:`isqaflow.data.outputs`) and written as the answers file of each retrieval
setting, in the records of :mod:`isqaflow.arena.answers`: from there on the system is
judged like a model the workflow runs (the same pairs against LFRQA and among the
models, both orders, ratings, controls).  The system used its own retrieval, so
``passages`` is empty, and its text is its answer as given (no thinking is removed).
"""

from __future__ import annotations

import logging

from isqaflow.arena.no_answer import is_no_answer
from isqaflow.data.outputs import rag_items, read_system_outputs
from isqaflow.data.schema import RagQuery
from isqaflow.io import read_records, write_json, write_jsonl

log = logging.getLogger(__name__)


def run_file_answers(query_paths, system_file, out_path, check_path, answerer: str, retriever: str, k: int,
                     fmt: str = "auto", coverage: str = "full") -> int:
    """Entry point of rule file_answers: check the file, write the setting's answers file."""
    queries = [q for path in query_paths for q in read_records(path, RagQuery)]
    outputs = read_system_outputs(system_file, "arena", rag_items(queries), fmt, coverage)
    rows = []
    for q in queries:
        text = outputs.outputs.get(f"{q.domain}:{q.id}")
        if text is None:
            continue
        answer = text.strip()
        rows.append({"domain": q.domain, "qid": q.id, "answerer": answerer, "retriever": retriever, "k": k,
                     "cot": None, "passages": [], "raw": text, "answer": answer, "no_answer": is_no_answer(answer),
                     "new_tokens": None, "finish_reason": None, "thinking_blocks": 0, "thinking_unclosed": False,
                     "source": "file"})
    log.info("%s: %d answers from %s (%s), %d of %d queries", answerer, len(rows), system_file, outputs.format,
             len(rows), len(queries))
    write_json(check_path, {"suite": "arena", "system": answerer, **outputs.summary()})
    return write_jsonl(out_path, rows)
