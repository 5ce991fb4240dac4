"""ColBERT retrieval (isqaflow.arena.retrieval.colbert) in the main environment, with a test double of
its engine protocol; PyLate itself runs in tests/engines/test_colbert_pylate.py (colbert env)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from isqaflow.arena.retrieval import colbert
from isqaflow.arena.retrieval.colbert import (
    build_colbert_index,
    retrieve_colbert,
    run_colbert_index,
    run_colbert_retrieval,
)
from isqaflow.arena.retrieval.bm25_dense import run_retrieval
from isqaflow.codehash import dependencies
from isqaflow.data.schema import Passage
from isqaflow.io import read_json, read_jsonl, write_jsonl

REPO = Path(__file__).resolve().parents[3]
PASSAGES = [
    Passage(id="d1-0", doc_id="d1", domain="x", text="volcano lava erupts from the mountain"),
    Passage(id="d1-1", doc_id="d1", domain="x", text="lava cools into basalt"),
    Passage(id="d2-0", doc_id="d2", domain="x", text="the stock market fell"),
    Passage(id="d3-0", doc_id="d3", domain="x", text="bread needs flour and yeast"),
    Passage(id="d3-1", doc_id="d3", domain="x", text="volcano"),
]


class OverlapEngine:
    """A LateInteraction double: the index is a JSON file of the passages; the score of a
    passage is the number of distinct query words it contains."""

    def __init__(self, model="double", **options):
        self.model, self.options, self.builds, self.searches = model, options, 0, []

    def identity(self):
        return {"model": self.model, "params": dict(sorted(self.options.items()))}

    def build(self, folder, ids, texts):
        self.builds += 1
        (Path(folder) / "index.json").write_text(json.dumps(dict(zip(ids, texts, strict=True))))

    def search(self, folder, texts, k):
        self.searches.append(k)
        index = json.loads((Path(folder) / "index.json").read_text())
        rows = []
        for text in texts:
            words = set(text.split())
            scored = [(pid, float(len(words & set(body.split())))) for pid, body in index.items()]
            rows.append(sorted(scored, key=lambda hit: -hit[1])[:k])  # engine order: not tie-broken
        return rows


def test_index_is_built_once_and_records_what_it_was_built_from(tmp_path):
    engine = OverlapEngine()
    meta = build_colbert_index(PASSAGES, tmp_path, engine=engine)
    folder = tmp_path / "colbert"
    assert engine.builds == 1 and (folder / "index.json").is_file()
    assert read_json(folder / "meta.json") == meta
    assert meta["backend"] == "colbert" and meta["model"] == "double" and meta["n_passages"] == 5
    assert build_colbert_index(PASSAGES, tmp_path, engine=engine) == meta
    assert engine.builds == 1, "a current index was rebuilt"
    changed = [*PASSAGES[:-1], Passage(id="d3-1", doc_id="d3", domain="x", text="volcanic ash")]
    assert (
        build_colbert_index(changed, tmp_path, engine=engine)["corpus_sha256"]
        != meta["corpus_sha256"]
    )
    assert engine.builds == 2


def test_an_interrupted_build_leaves_no_finished_index(tmp_path):
    class Failing(OverlapEngine):
        def build(self, folder, ids, texts):
            (Path(folder) / "partial").write_text("x")
            raise RuntimeError("out of memory")

    build_colbert_index(PASSAGES, tmp_path, engine=OverlapEngine())
    changed = PASSAGES[:-1]
    with pytest.raises(RuntimeError, match="out of memory"):
        build_colbert_index(changed, tmp_path, engine=Failing())
    assert not (tmp_path / "colbert" / "meta.json").exists()
    with pytest.raises(ValueError, match="no finished ColBERT index"):
        retrieve_colbert([("q", "volcano")], changed, 2, tmp_path, engine=OverlapEngine())


def test_rankings_by_score_then_passage_id(tmp_path):
    engine = OverlapEngine()
    build_colbert_index(PASSAGES, tmp_path, engine=engine)
    results = retrieve_colbert(
        [("q1", "volcano lava"), ("q2", "stock yeast")], PASSAGES, 3, tmp_path, engine=engine
    )
    assert [r["query_id"] for r in results] == ["q1", "q2"]
    assert all(r["backend"] == "colbert" and r["k"] == 3 for r in results)
    assert [(p["id"], p["score"], p["rank"]) for p in results[0]["passages"]] == [
        ("d1-0", 2.0, 1),
        ("d1-1", 1.0, 2),
        ("d3-1", 1.0, 3),
    ]
    assert [p["doc_id"] for p in results[0]["passages"]] == ["d1", "d1", "d3"]
    # ties (1 word each) by id; the engine was asked for k
    assert [p["id"] for p in results[1]["passages"]][:2] == ["d2-0", "d3-0"]
    assert engine.searches == [3]


def test_k_beyond_the_corpus_asks_for_every_passage(tmp_path):
    engine = OverlapEngine()
    build_colbert_index(PASSAGES, tmp_path, engine=engine)
    results = retrieve_colbert([("q", "volcano")], PASSAGES, 50, tmp_path, engine=engine)
    assert engine.searches == [5] and len(results[0]["passages"]) == 5 and results[0]["k"] == 50


def test_an_index_of_another_corpus_or_model_is_refused(tmp_path):
    build_colbert_index(PASSAGES, tmp_path, engine=OverlapEngine())
    with pytest.raises(
        ValueError, match=r"meta.json.*differs in corpus_sha256, n_passages.*colbert_index"
    ):
        retrieve_colbert([("q", "x")], PASSAGES[:4], 2, tmp_path, engine=OverlapEngine())
    with pytest.raises(ValueError, match=r"differs in model"):
        retrieve_colbert([("q", "x")], PASSAGES, 2, tmp_path, engine=OverlapEngine(model="other"))
    with pytest.raises(ValueError, match=r"differs in params"):
        retrieve_colbert([("q", "x")], PASSAGES, 2, tmp_path, engine=OverlapEngine(nbits=4))


def test_engine_answers_are_checked(tmp_path):
    class Stray(OverlapEngine):
        def search(self, folder, texts, k):
            return [[("nowhere-0", 1.0)] for _ in texts]

    class Short(OverlapEngine):
        def search(self, folder, texts, k):
            return []

    build_colbert_index(PASSAGES, tmp_path, engine=OverlapEngine())
    with pytest.raises(ValueError, match="not in the corpus.*nowhere-0"):
        retrieve_colbert([("q", "x")], PASSAGES, 2, tmp_path, engine=Stray())
    with pytest.raises(ValueError, match="0 rankings for 1 queries"):
        retrieve_colbert([("q", "x")], PASSAGES, 2, tmp_path, engine=Short())


def test_bad_inputs_and_options_fail_before_the_engine(tmp_path):
    with pytest.raises(ValueError, match="passage ids must be unique"):
        build_colbert_index(PASSAGES + PASSAGES[:1], tmp_path, engine=OverlapEngine())
    with pytest.raises(ValueError, match="k must be positive"):
        retrieve_colbert([("q", "x")], PASSAGES, 0, tmp_path, engine=OverlapEngine())
    with pytest.raises(ValueError, match=r"unknown colbert option\(s\) \['k1'\]"):
        build_colbert_index(PASSAGES, tmp_path, engine=OverlapEngine(), k1=1.2)
    assert not (tmp_path / "colbert").exists()


def _rag_files(tmp_path):
    passages = tmp_path / "passages.jsonl"
    queries = tmp_path / "queries.jsonl"
    write_jsonl(passages, [p.model_dump() for p in PASSAGES])
    query = {
        "domain": "x",
        "reference": "r",
        "reference_with_citation": "r [1]",
        "citations": [[1]],
    }
    write_jsonl(
        queries,
        [
            {**query, "id": "q1", "question": "volcano lava", "gold_doc_ids": ["d1"]},
            {**query, "id": "q2", "question": "stock market", "gold_doc_ids": ["d2", "d3"]},
        ],
    )
    return queries, passages


def test_the_jobs_write_what_rule_retrieve_writes(tmp_path):
    queries, passages = _rag_files(tmp_path)
    engine = OverlapEngine()
    run_colbert_index(passages, tmp_path / "index", {}, engine=engine)
    recall = run_colbert_retrieval(
        queries,
        passages,
        tmp_path / "index",
        tmp_path / "hits.jsonl",
        tmp_path / "recall.json",
        [1, 2],
        {},
        "x",
        engine=engine,
    )
    bm25 = run_retrieval(
        queries,
        passages,
        tmp_path / "b.jsonl",
        tmp_path / "b.recall.json",
        "bm25",
        [1, 2],
        {},
        tmp_path / "bm25",
        "x",
    )
    assert read_json(tmp_path / "recall.json") == recall
    assert recall.keys() == bm25.keys() and recall["k=1"].keys() == bm25["k=1"].keys()
    assert recall["k=1"] == {
        "k": 1,
        "n_queries": 2,
        "n_without_gold": 0,
        "hit_rate": 1.0,
        "gold_recall": 0.75,
    }
    hits = [row for _, row in read_jsonl(tmp_path / "hits.jsonl")]
    bm25_hits = [row for _, row in read_jsonl(tmp_path / "b.jsonl")]
    assert [set(r) for r in hits] == [set(r) for r in bm25_hits]
    assert [r["domain"] for r in hits] == ["x", "x"] and hits[0]["passages"][0]["id"] == "d1-0"


def test_the_main_environment_never_imports_pylate():
    code = (
        "import sys, isqaflow.arena.retrieval.colbert, isqaflow.arena.retrieval.bm25_dense; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pylate', 'torch', 'fast_plaid') "
        "or m == 'isqaflow.arena.retrieval.colbert_pylate'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    # the PyLate engine is part of the colbert jobs' code version, not of rule retrieve's
    assert "isqaflow.arena.retrieval.colbert_pylate" in dependencies(
        "isqaflow.arena.retrieval.colbert"
    )
    assert "isqaflow.arena.retrieval.colbert_pylate" not in dependencies(
        "isqaflow.arena.retrieval.bm25_dense"
    )


def test_without_pylate_the_engine_says_where_it_lives(monkeypatch):
    monkeypatch.setitem(sys.modules, "pylate", None)  # as in the main environment
    monkeypatch.delitem(sys.modules, "isqaflow.arena.retrieval.colbert_pylate", raising=False)
    with pytest.raises(ImportError, match=r"needs PyLate.*envs/colbert.yaml"):
        colbert.pylate_engine("colbert-ir/colbertv2.0")
