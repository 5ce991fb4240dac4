"""PyLate for real: a tiny randomly initialised ColBERT indexes passages and retrieves.

Runs in the colbert environment (envs/colbert.yaml; ``bash benchmarks/colbert_env.sh
VENV`` builds one), never in the main one:

    PYTHONPATH=src VENV/bin/python benchmarks/colbert_pylate_smoke.py WORKDIR

Nothing is downloaded: a 2-layer BERT (hidden size 32) with a WordPiece vocabulary of
the passages' words is made in code and saved to WORKDIR/model; PyLate wraps it as a
ColBERT (its [Q]/[D] markers and a 128-dimensional projection, randomly initialised
with a fixed seed).  The workflow's own jobs then run on it through the project's
interface: rule colbert_index's (a PLAID index with meta.json) and rule
retrieve_colbert's (hits and recall files), with the PyLate engine.  Checked: every
query gets its top k of corpus passages, ranked by descending score; a second build
keeps the index; a second retrieval gives identical rankings; PLAID's scores and
ranking agree with brute-force MaxSim over the same token embeddings (PyLate's
``rank.rerank``), which 8-bit residuals make near exact on this corpus.  Prints one
JSON line of what ran and how long each step took.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import torch
from transformers import BertConfig, BertModel, BertTokenizerFast

from isqaflow.arena.retrieval.colbert import run_colbert_index, run_colbert_retrieval
from isqaflow.arena.retrieval.colbert_pylate import PylateEngine
from isqaflow.io import read_json, read_jsonl, write_jsonl

TEXTS = [
    "volcanic lava flows cool into basalt rock",
    "the stock market fell sharply after the interest rate decision",
    "bake the bread at high heat until the crust is golden",
    "a neural network learns weights by gradient descent",
    "glaciers carve deep valleys in the mountains over millennia",
    "index funds spread money across many companies at low cost",
    "knead the dough and let it rise for one hour",
    "transformers attend to every token of the input sequence",
    "earthquakes happen where tectonic plates meet and slip",
    "a bond pays interest until it matures",
    "sourdough needs a starter of wild yeast",
    "retrieval systems rank passages by their relevance to a query",
]
PASSAGE_IDS = [f"d{i // 2}-{i % 2}" for i in range(len(TEXTS))]  # two passages per document
QUERIES = [
    ("q-volcano", "what rock does cooled lava become", ["d0"]),
    ("q-bread", "how long should dough rise", ["d3"]),
    ("q-rank", "how are passages ranked for a query", ["d5"]),
    ("q-plates", "where do earthquakes happen", ["d4"]),
]


def tiny_colbert(folder: Path) -> Path:
    """A randomly initialised 2-layer BERT and a WordPiece tokenizer over the corpus' words."""
    words = sorted(
        {w for text in TEXTS + [q for _, q, _ in QUERIES] for w in re.findall(r"\w+", text)}
    )
    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
    )
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def main(workdir: Path) -> dict:
    timings = {}
    start = time.perf_counter()
    model_dir = tiny_colbert(workdir / "model")
    passages = workdir / "passages.jsonl"
    queries = workdir / "queries.jsonl"
    write_jsonl(
        passages,
        [
            {"id": pid, "doc_id": pid.split("-")[0], "domain": "smoke", "text": text}
            for pid, text in zip(PASSAGE_IDS, TEXTS, strict=True)
        ],
    )
    write_jsonl(
        queries,
        [
            {
                "id": qid,
                "domain": "smoke",
                "question": q,
                "reference": "-",
                "reference_with_citation": "- [1]",
                "citations": [[1]],
                "gold_doc_ids": gold,
            }
            for qid, q, gold in QUERIES
        ],
    )
    torch.manual_seed(0)
    engine = PylateEngine(str(model_dir), device="cpu", nbits=8)
    timings["model_s"] = time.perf_counter() - start

    index_dir = workdir / "index"
    start = time.perf_counter()
    meta = run_colbert_index(passages, index_dir, {}, engine=engine)
    timings["index_s"] = time.perf_counter() - start
    assert (index_dir / "colbert" / "meta.json").is_file()
    assert meta["n_passages"] == len(TEXTS) and meta["params"]["nbits"] == 8, meta
    index_files = sorted(p.name for p in (index_dir / "colbert").rglob("*") if p.is_file())
    stamp = (index_dir / "colbert" / "meta.json").stat().st_mtime_ns
    assert run_colbert_index(passages, index_dir, {}, engine=engine) == meta
    assert (index_dir / "colbert" / "meta.json").stat().st_mtime_ns == stamp, (
        "a current index was rebuilt"
    )

    k = 3
    start = time.perf_counter()
    recall = run_colbert_retrieval(
        queries,
        passages,
        index_dir,
        workdir / "hits.jsonl",
        workdir / "recall.json",
        [1, k],
        {},
        "smoke",
        engine=engine,
    )
    timings["retrieve_s"] = time.perf_counter() - start
    hits = [row for _, row in read_jsonl(workdir / "hits.jsonl")]
    assert [h["query_id"] for h in hits] == [qid for qid, _, _ in QUERIES]
    ids = set(PASSAGE_IDS)
    for row in hits:
        ranked = row["passages"]
        assert len(ranked) == k and {p["id"] for p in ranked} <= ids, row
        assert [p["rank"] for p in ranked] == list(range(1, k + 1))
        scores = [p["score"] for p in ranked]
        assert scores == sorted(scores, reverse=True), row
    assert read_json(workdir / "recall.json") == recall and set(recall) == {"k=1", f"k={k}"}
    again = run_colbert_retrieval(
        queries,
        passages,
        index_dir,
        workdir / "hits2.jsonl",
        workdir / "recall2.json",
        [1, k],
        {},
        "smoke",
        engine=engine,
    )
    assert again == recall and [row for _, row in read_jsonl(workdir / "hits2.jsonl")] == hits

    # PLAID against brute-force MaxSim over the same embeddings.
    from pylate import rank

    query_embeddings = engine._encode([q for _, q, _ in QUERIES], is_query=True)
    document_embeddings = engine._encode(TEXTS, is_query=False)
    exact = rank.rerank(
        documents_ids=[PASSAGE_IDS] * len(QUERIES),
        queries_embeddings=query_embeddings,
        documents_embeddings=[document_embeddings] * len(QUERIES),
    )
    agree = 0
    for row, brute in zip(hits, exact, strict=True):
        top_exact = [hit["id"] for hit in brute[:k]]
        agree += [p["id"] for p in row["passages"]][0] == top_exact[0]
        for p in row["passages"]:
            brute_score = next(hit["score"] for hit in brute if hit["id"] == p["id"])
            assert abs(brute_score - p["score"]) <= 0.05 * max(1.0, abs(brute_score)), (
                p,
                brute_score,
            )
    assert agree == len(QUERIES), (
        f"PLAID's top passage differs from exact MaxSim on {len(QUERIES) - agree} queries"
    )

    return {
        "ran": "isqaflow.arena.retrieval.colbert run_colbert_index + run_colbert_retrieval with PylateEngine",
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda": torch.cuda.is_available(),
        "passages": len(TEXTS),
        "queries": len(QUERIES),
        "index_files": index_files,
        "recall": recall,
        "top1_agrees_with_exact_maxsim": f"{agree}/{len(QUERIES)}",
        **{name: round(value, 2) for name, value in timings.items()},
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
