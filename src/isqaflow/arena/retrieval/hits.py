"""What every retriever's job shares: its inputs' checks, the corpus hash an index depends
on, the recall of the gold documents, and the hits and recall files of rules retrieve
and retrieve_colbert.  Kept apart from the backends so that a change to one backend
(BM25 and MiniLM in :mod:`isqaflow.arena.retrieval.bm25_dense`, ColBERT in
:mod:`isqaflow.arena.retrieval.colbert`) reruns no other backend's jobs."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from isqaflow.data.schema import Passage, RagQuery
from isqaflow.io import write_json, write_jsonl

log = logging.getLogger(__name__)


def query_pairs(queries: Sequence[RagQuery] | Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Queries as (id, text) pairs; a RagQuery's text is its question."""
    return [(q.id, q.question) if isinstance(q, RagQuery) else (q[0], q[1]) for q in queries]


def check_inputs(passages: Sequence[Passage], k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be positive, got {k}")
    if not passages:
        raise ValueError("no passages to retrieve from")
    ids = [p.id for p in passages]
    if len(set(ids)) != len(ids):
        raise ValueError("passage ids must be unique")


def corpus_hash(passages: Iterable[Passage]) -> str:
    """SHA-256 of the passages' ids and texts in order: what an index depends on."""
    digest = hashlib.sha256()
    for p in passages:
        digest.update(json.dumps([p.id, p.text], ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def recall_at_k(results: Sequence[dict], gold: Mapping[str, Iterable[str]]) -> dict:
    """Retriever quality against gold documents, over the queries that have some.

    ``hit_rate`` is the share of queries whose top-k holds at least one gold document;
    ``gold_recall`` the mean share of each query's gold documents that were retrieved
    (a document counts once, however many of its passages were retrieved).
    """
    ks = {r["k"] for r in results}
    if len(ks) > 1:
        raise ValueError(f"results mix several k: {sorted(ks)}")
    hits: list[float] = []
    recalls: list[float] = []
    without_gold = 0
    for result in results:
        gold_docs = set(gold.get(result["query_id"], ()))
        if not gold_docs:
            without_gold += 1
            continue
        found = gold_docs & {p["doc_id"] for p in result["passages"]}
        hits.append(float(bool(found)))
        recalls.append(len(found) / len(gold_docs))
    if not hits:
        raise ValueError("no result belongs to a query with gold documents")
    return {
        "k": ks.pop(),
        "n_queries": len(hits),
        "n_without_gold": without_gold,
        "hit_rate": float(np.mean(hits)),
        "gold_recall": float(np.mean(recalls)),
    }


def write_retrieval(
    results: list[dict],
    queries: Sequence[RagQuery],
    out_path,
    recall_path,
    ks: list[int],
    domain: str,
    backend: str,
) -> dict[str, dict[str, float]]:
    """The hits of every query (tagged with the domain) and the recall at every k, as files."""
    for r in results:
        r["domain"] = domain
    write_jsonl(out_path, results)
    gold = {q.id: set(q.gold_doc_ids) for q in queries}
    recall = {}
    for k in sorted(ks):
        at_k = [{**r, "k": k, "passages": r["passages"][:k]} for r in results]
        recall[f"k={k}"] = recall_at_k(at_k, gold)
        log.info("%s %s@%d: %s", domain, backend, k, recall[f"k={k}"])
    write_json(recall_path, recall)
    return recall
