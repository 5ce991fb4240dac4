"""Answers of one's own RAG system, from a file (``arena.answerers.<name>: {file: ...}``).

The file is checked against the queries of the arena's domains
(:mod:`isqaflow.data.outputs`) and written as the answers file of each retrieval
setting, in the records of :mod:`isqaflow.arena.answers`: from there on the system is
judged like a model the workflow runs (the same pairs against LFRQA and among the
models, both orders, ratings, controls).  The system used its own retrieval, so
``passages`` is empty.  Its answer is the text as given, except in RAG-QA Arena's own
format, which is read as RAG-QA Arena reads it (its ``process_response``: a thought before the
answer and the answer tags removed, :mod:`isqaflow.data.ragqa_files`) unless the system says
``process_response: false``.
"""

from __future__ import annotations

import logging

from isqaflow.arena.no_answer import is_no_answer
from isqaflow.data.outputs import rag_items, read_system_outputs
from isqaflow.data.schema import RagQuery
from isqaflow.io import read_records, write_json, write_jsonl

log = logging.getLogger(__name__)


def run_file_answers(
    query_paths,
    system_file,
    out_path,
    check_path,
    answerer: str,
    retriever: str,
    k: int,
    fmt: str = "auto",
    coverage: str = "full",
    process: bool = True,
    name: str | None = None,
) -> int:
    """Entry point of rule file_answers: check the file (or RAG-QA Arena's per-domain files),
    write the setting's answers file.  ``process``: RAG-QA Arena's ``process_response`` on a
    ``ragqa_arena`` file's predictions (``raw`` keeps the text as given)."""
    queries = [q for path in query_paths for q in read_records(path, RagQuery)]
    outputs = read_system_outputs(
        system_file, "arena", rag_items(queries), fmt, coverage, process=process, name=name
    )
    rows = []
    for q in queries:
        key = f"{q.domain}:{q.id}"
        if key not in outputs.outputs:
            continue
        answer = outputs.outputs[key].strip()
        rows.append(
            {
                "domain": q.domain,
                "qid": q.id,
                "answerer": answerer,
                "retriever": retriever,
                "k": k,
                "cot": None,
                "passages": [],
                "raw": outputs.raw[key],
                "answer": answer,
                "no_answer": is_no_answer(answer),
                "new_tokens": None,
                "finish_reason": None,
                "thinking_blocks": 0,
                "thinking_unclosed": False,
                "source": "file",
            }
        )
    log.info(
        "%s: %d answers from %s (%s%s), %d of %d queries",
        answerer,
        len(rows),
        outputs.path,
        outputs.format,
        ", process_response" if outputs.processed else "",
        len(rows),
        len(queries),
    )
    write_json(check_path, {"suite": "arena", "system": answerer, **outputs.summary()})
    return write_jsonl(out_path, rows)
