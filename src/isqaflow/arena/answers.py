"""RAG answers: each model answers each query from its top-k passages (RAG-QA Arena, Table 11).

The instruction is the paper's: answer helpfully and faithfully from the passages
only, without one's own knowledge, and reply "I couldn't find an answer." when the
passages hold nothing helpful.  With the chain-of-thought suffix the model first
thinks inside ``<thinking>`` tags (under 50 words); the thinking is removed from the
final answer, and a thinking block that is never closed is counted.  Each answer is
flagged when it is the no-answer reply (:mod:`isqaflow.arena.no_answer`); the ratio
per model is the paper's Table 9.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from isqaflow.arena.no_answer import NO_ANSWER, is_no_answer
from isqaflow.data.schema import Passage, RagQuery
from isqaflow.io import read_jsonl, read_records, write_jsonl
from isqaflow.models.base import GenerationParams

log = logging.getLogger(__name__)

INSTRUCTION = (
    "Based on the passages, provide a helpful answer to the query. Your answer must be faithful to the "
    "content in the passages. Do not use your own knowledge to answer the query. If you couldn't find any "
    f'helpful information in the passages, respond "{NO_ANSWER}"'
)
COT_SUFFIX = (
    "First, think step by step, and put your thinking in <thinking> tags. Your thinking must be shorter "
    "than 50 words. Then, provide your answer."
)
_THINKING = re.compile(r"<thinking>.*?</thinking>", re.IGNORECASE | re.DOTALL)
_OPEN = re.compile(r"<thinking>", re.IGNORECASE)


def answer_request(query: str, passages: list[Passage], cot: bool) -> list[dict[str, str]]:
    blocks = "\n".join(
        f"<passage {i}>\n{p.text}\n</passage {i}>" for i, p in enumerate(passages, start=1)
    )
    parts = [
        INSTRUCTION,
        "Passages are inside <passage> tags. The query is inside <query> tags.",
        blocks,
        f"<query>\n{query}\n</query>",
        INSTRUCTION,
    ]
    if cot:
        parts.append(COT_SUFFIX)
    return [{"role": "user", "content": "\n\n".join(parts)}]


def final_answer(raw: str) -> tuple[str, dict[str, Any]]:
    """The answer without its thinking, and what was removed."""
    thinking = [m.group(0) for m in _THINKING.finditer(raw)]
    text = _THINKING.sub("", raw)
    unclosed = bool(_OPEN.search(text))
    if unclosed:  # an opened, never-closed block: drop the tag, keep the text
        text = _OPEN.sub("", text)
    return text.strip(), {"thinking_blocks": len(thinking), "thinking_unclosed": unclosed}


@dataclass(frozen=True)
class AnswersJob:
    """What one ``rag_answers`` job runs: the answerer (name, model spec, LoRA adapter, chain of
    thought), the retrieval setting (retriever and depth k) and the decoding."""

    answerer: str
    model_spec: Mapping[str, Any]
    adapter: str | None
    cot: bool
    retriever: str
    k: int
    generation: GenerationParams

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any) -> AnswersJob:
        """From the rule's params (model, adapter, cot, generation) and wildcards (answerer, retriever, k)."""
        return cls(
            answerer=wildcards.answerer,
            model_spec=params.model,
            adapter=params.adapter,
            cot=params.cot,
            retriever=wildcards.retriever,
            k=int(wildcards.k),
            generation=GenerationParams.from_dict(params.generation),
        )


def run_answers(
    query_paths,
    passage_paths,
    retrieval_paths,
    out_path,
    job: AnswersJob,
    cache_path,
    threads: int | None = None,
) -> int:
    """Entry point of rule rag_answers: one answerer, one retrieval setting, every domain."""
    from isqaflow.models.registry import load_model

    queries: list[RagQuery] = [q for path in query_paths for q in read_records(path, RagQuery)]
    passages = {p.id: p for path in passage_paths for p in read_records(path, Passage)}
    retrieved = {
        (obj["domain"], obj["query_id"]): obj
        for path in retrieval_paths
        for _, obj in read_jsonl(path)
    }
    requests, rows = [], []
    for q in queries:
        hits = retrieved[(q.domain, q.id)]["passages"][: job.k]
        chosen = [passages[h["id"]] for h in hits]
        requests.append(answer_request(q.question, chosen, job.cot))
        rows.append(
            {
                "domain": q.domain,
                "qid": q.id,
                "answerer": job.answerer,
                "retriever": job.retriever,
                "k": job.k,
                "cot": job.cot,
                "passages": [p.id for p in chosen],
            }
        )
    model = load_model(
        dict(job.model_spec),
        cache=cache_path,
        adapter=job.adapter,
        name=job.answerer,
        threads=threads,
    )
    outs = model.generate(requests, job.generation)
    for row, out in zip(rows, outs, strict=True):
        answer, removed = final_answer(out.text)
        row.update(
            raw=out.text,
            answer=answer,
            no_answer=is_no_answer(answer),
            new_tokens=out.n_new_tokens,
            finish_reason=out.finish_reason,
            **removed,
        )
    log.info(
        "%s: %d answers, %d say no answer",
        job.answerer,
        len(rows),
        sum(r["no_answer"] for r in rows),
    )
    return write_jsonl(out_path, rows)
