"""ColBERTv2 retrieval for RAG-QA Arena (the paper's retriever, top 5), behind a small interface.

The paper retrieves with ColBERTv2 over a PLAID index.  That is served here through
PyLate (``pylate`` with ``fast-plaid``), which cannot share the workflow's main
environment (it pins its own torch, transformers and sentence-transformers): its jobs
run in ``envs/colbert.yaml``.  Everything the workflow needs from it is the
:class:`LateInteraction` protocol below -- build a PLAID index of (id, text) pairs in a
folder, open it again, search it -- and its one implementation,
:class:`isqaflow.arena.retrieval.colbert_pylate.PylateEngine`, is imported only inside the two
colbert jobs.  This module (what the jobs do around the engine: the index's
``meta.json``, the check that an index belongs to the corpus, rankings, recall) is
tested in the main environment with a test double of the protocol.

Two rules, one job each:

* ``colbert_index`` (:func:`run_colbert_index`): the PLAID index of one domain's
  passages, built once into ``resources/indexes/{domain}/{retriever}/colbert``, with a
  ``meta.json`` (model, PLAID options, a hash of the passage ids and texts) written
  last, so an interrupted build is never mistaken for a finished one.
* ``retrieve_colbert`` (:func:`run_colbert_retrieval`): the top max(k) passages per
  query from that index, and the recall of the gold documents at every k, in the same
  files as rule ``retrieve`` writes for BM25 and MiniLM.  An index whose ``meta.json``
  does not match the corpus or the model is refused (it is rebuilt by its own rule,
  never silently here).

Rankings: PLAID returns each query's k best passages with their late-interaction
scores; they are sorted by descending score, ties by passage id, as for the other
backends.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from isqaflow.arena.retrieval.hits import check_inputs, corpus_hash, query_pairs, write_retrieval
from isqaflow.data.schema import Passage, RagQuery
from isqaflow.io import read_json, read_records, write_json
from isqaflow.runtime import job_device

log = logging.getLogger(__name__)

META = "meta.json"
DEFAULT_MODEL = "colbert-ir/colbertv2.0"  # the ColBERTv2 checkpoint of Santhanam et al. (2022)
# PLAID settings that change the index (and so its meta.json); the engine's defaults otherwise.
INDEX_OPTIONS = ("nbits", "kmeans_niters", "document_length", "query_length", "batch_size")


class LateInteraction(Protocol):
    """What the colbert jobs need from a late-interaction engine (PyLate's in the colbert env)."""

    def build(self, folder: Path, ids: Sequence[str], texts: Sequence[str]) -> None:
        """Encode ``texts`` and write a searchable index of them, keyed by ``ids``, into ``folder``."""

    def search(self, folder: Path, texts: Sequence[str], k: int) -> list[list[tuple[str, float]]]:
        """For each query text, its at most ``k`` best (passage id, score) pairs from ``folder``."""

    def identity(self) -> dict[str, Any]:
        """What the index depends on besides the corpus: model, library versions, options."""


def pylate_engine(
    model: str = DEFAULT_MODEL, device: str | None = None, **options
) -> LateInteraction:
    """The PyLate implementation (importable only where ``envs/colbert.yaml`` is installed)."""
    try:
        from isqaflow.arena.retrieval.colbert_pylate import PylateEngine
    except ImportError as err:
        raise ImportError(
            f"the colbert backend needs PyLate ({err}): its jobs run in envs/colbert.yaml "
            "(Snakemake --sdm conda; without conda: bash benchmarks/colbert_env.sh VENV)"
        ) from err
    return PylateEngine(model, device=device, **options)


def _engine(
    engine: LateInteraction | None, model: str, device: str | None, options: dict
) -> LateInteraction:
    unknown = sorted(set(options) - set(INDEX_OPTIONS))
    if unknown:
        raise ValueError(
            f"unknown colbert option(s) {unknown}; known: {', '.join(INDEX_OPTIONS)}, model, device"
        )
    if engine is not None:
        return engine
    # the device explicitly: auto is CUDA when present; a job given GPUs that sees none fails (runtime.job_device)
    return pylate_engine(
        model, job_device(device, model=model, key="arena.retrievers.<name>.device"), **options
    )


def _meta(engine: LateInteraction, passages: Sequence[Passage]) -> dict[str, Any]:
    return {
        "backend": "colbert",
        **engine.identity(),
        "n_passages": len(passages),
        "corpus_sha256": corpus_hash(passages),
    }


def _index_folder(index_dir: str | Path) -> Path:
    return Path(index_dir) / "colbert"


def build_colbert_index(
    passages: Sequence[Passage],
    index_dir: str | Path,
    *,
    model: str = DEFAULT_MODEL,
    device: str | None = None,
    engine: LateInteraction | None = None,
    **options,
) -> dict[str, Any]:
    """The PLAID index of ``passages`` in ``index_dir/colbert`` (kept when it already matches)."""
    check_inputs(passages, 1)
    engine = _engine(engine, model, device, options)
    folder = _index_folder(index_dir)
    meta = _meta(engine, passages)
    if (folder / META).is_file() and read_json(folder / META) == meta:
        log.info("colbert: the index of %d passages in %s is current", len(passages), folder)
        return meta
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    log.info("colbert: indexing %d passages into %s (%s)", len(passages), folder, meta.get("model"))
    start = time.perf_counter()
    engine.build(folder, [p.id for p in passages], [p.text for p in passages])
    write_json(folder / META, meta)
    log.info("colbert: indexed in %.1f s", time.perf_counter() - start)
    return meta


def retrieve_colbert(
    queries: Sequence[RagQuery] | Sequence[tuple[str, str]],
    passages: Sequence[Passage],
    k: int,
    index_dir: str | Path,
    *,
    model: str = DEFAULT_MODEL,
    device: str | None = None,
    engine: LateInteraction | None = None,
    **options,
) -> list[dict]:
    """Top-``k`` passages per query from the PLAID index in ``index_dir`` (see retrieval.retrieve).

    The index must have been built from exactly ``passages`` with the same model and
    options (its ``meta.json`` says so); otherwise a ``ValueError`` names what differs.
    """
    check_inputs(passages, k)
    engine = _engine(engine, model, device, options)
    folder = _index_folder(index_dir)
    if not (folder / META).is_file():
        raise ValueError(
            f"{folder}: no finished ColBERT index (no {META}); rule colbert_index builds it"
        )
    stored, expected = read_json(folder / META), _meta(engine, passages)
    differs = sorted(
        key for key in set(stored) | set(expected) if stored.get(key) != expected.get(key)
    )
    if differs:
        raise ValueError(
            f"{folder / META}: the index was built from another corpus or model "
            f"(differs in {', '.join(differs)}); rebuild it with rule colbert_index"
        )
    by_id = {p.id: p for p in passages}
    pairs = query_pairs(queries)
    rows = engine.search(folder, [text for _, text in pairs], min(k, len(passages)))
    if len(rows) != len(pairs):
        raise ValueError(f"colbert engine answered {len(rows)} rankings for {len(pairs)} queries")
    results = []
    for (query_id, _), row in zip(pairs, rows, strict=True):
        unknown = sorted({pid for pid, _ in row} - set(by_id))
        if unknown:
            raise ValueError(
                f"{folder}: the index returned passage ids not in the corpus: {unknown[:5]}"
            )
        ranked = sorted(row, key=lambda hit: (-hit[1], hit[0]))[:k]
        hits = [
            {"id": pid, "doc_id": by_id[pid].doc_id, "rank": rank, "score": float(score)}
            for rank, (pid, score) in enumerate(ranked, start=1)
        ]
        results.append({"query_id": query_id, "backend": "colbert", "k": k, "passages": hits})
    return results


# ------------------------------------------------------------------------ the jobs
def run_colbert_index(passage_path, index_dir, options: dict[str, Any], *, engine=None) -> dict:
    """Entry point of rule colbert_index: one domain's PLAID index."""
    passages = read_records(passage_path, Passage)
    return build_colbert_index(passages, index_dir, engine=engine, **options)


def run_colbert_retrieval(
    query_path,
    passage_path,
    index_dir,
    out_path,
    recall_path,
    ks: list[int],
    options: dict[str, Any],
    domain: str,
    *,
    engine=None,
) -> dict[str, dict[str, float]]:
    """Entry point of rule retrieve_colbert: as rule retrieve's, from a PLAID index."""
    queries = read_records(query_path, RagQuery)
    passages = read_records(passage_path, Passage)
    results = retrieve_colbert(queries, passages, max(ks), index_dir, engine=engine, **options)
    return write_retrieval(results, queries, out_path, recall_path, ks, domain, "colbert")
