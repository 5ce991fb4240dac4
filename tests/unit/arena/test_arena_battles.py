"""Tests for which pairs the arena judge compares, and the counts behind win rates and ratings."""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd
import pytest

from isqaflow.arena.judging.battles import (
    REFERENCE,
    ArenaJudgeJob,
    all_pairs,
    reference_pairs,
    run_arena_judge,
)
from isqaflow.arena.judging.settings import ArenaJudge
from isqaflow.arena import tables as tables_module
from isqaflow.arena.tables import (
    ArenaTablesSettings,
    build_arena_tables,
    ratings_table,
    win_rate_table,
)
from isqaflow.data.schema import RagQuery
from isqaflow.models.base import Generation, LanguageModel

DOMAINS = ("fiqa", "science", "technology")
MODELS = ("m1", "m2", "m3")
QUERIES_PER_DOMAIN = 5
ELO = {"k": 4, "base": 10, "scale": 400, "initial": 1000}


def make_query(domain: str, i: int) -> RagQuery:
    return RagQuery(
        id=f"q{i}",
        domain=domain,
        question=f"{domain} question {i}",
        reference=f"The {domain} reference {i}.\nIts second claim.",
        reference_with_citation=f"The {domain} reference {i} [1].",
        citations=[[1]],
        gold_doc_ids=[f"{domain}-d{i}"],
    )


def make_data(models=MODELS) -> tuple[dict, list[dict]]:
    queries = {(d, f"q{i}"): make_query(d, i) for d in DOMAINS for i in range(QUERIES_PER_DOMAIN)}
    answers = [
        {"domain": d, "qid": qid, "answerer": m, "answer": f"{m} on {d}/{qid}"}
        for (d, qid) in queries
        for m in models
    ]
    return queries, answers


def test_all_pairs_are_among_the_models_only():
    queries, answers = make_data()
    pairs = all_pairs(answers, queries, per_domain=2, seed=3)
    assert all(REFERENCE not in (p["system_a"], p["system_b"]) for p in pairs)
    assert all(p["system_a"] < p["system_b"] for p in pairs)
    # 2 queries x 3 model pairs per domain, each pair once
    assert len(pairs) == len(DOMAINS) * 2 * 3
    assert len({(p["domain"], p["qid"], p["system_a"], p["system_b"]) for p in pairs}) == len(pairs)
    per_query = Counter((p["domain"], p["qid"]) for p in pairs)
    assert Counter(d for d, _ in per_query) == {d: 2 for d in DOMAINS}
    # each model gets (models - 1) votes per sampled query, as in the paper's Table 5
    votes = Counter(name for p in pairs for name in (p["system_a"], p["system_b"]))
    assert votes == {m: len(DOMAINS) * 2 * (len(MODELS) - 1) for m in MODELS}
    assert pairs == all_pairs(answers, queries, per_domain=2, seed=3)


def test_all_pairs_skip_a_query_with_a_single_model():
    queries, answers = make_data(models=("m1",))
    assert all_pairs(answers, queries, per_domain=3, seed=0) == []


class AlwaysFirst(LanguageModel):
    """A fake text judge that always prefers answer 1."""

    backend = "fake"

    def identity(self):
        return {"backend": self.backend}

    def generate(self, requests, params):
        return [Generation(text="<rating>1</rating>") for _ in requests]


@pytest.fixture
def judged(tmp_path, monkeypatch) -> pd.DataFrame:
    """The rule's judged file for 2 models x 3 domains x 5 queries with 1 all-pairs query per domain."""
    queries, answers = make_data(models=("m1", "m2"))
    by_domain = {}
    for q in queries.values():
        by_domain.setdefault(q.domain, []).append(q.model_dump())
    query_paths = []
    for domain, rows in by_domain.items():
        path = tmp_path / f"{domain}.queries.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        query_paths.append(path)
    answer_paths = []
    for model in ("m1", "m2"):
        path = tmp_path / f"{model}.jsonl"
        path.write_text("".join(json.dumps(a) + "\n" for a in answers if a["answerer"] == model))
        answer_paths.append(path)
    monkeypatch.setattr("isqaflow.models.registry.load_model", lambda *a, **k: AlwaysFirst())
    out = tmp_path / "judged.jsonl"
    judge = ArenaJudge(
        name="local",
        spec={},
        mode="text",
        orders="random",
        seed=0,
        generation=None,
        rule="raw",
        tie_band=0.0,
    )
    run_arena_judge(
        query_paths,
        answer_paths,
        out,
        ArenaJudgeJob(judge, all_pairs_per_domain=1, repeats=1),
        cache_path=None,
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return pd.DataFrame(rows).assign(setting="bm25-k5.local")


def test_win_rates_use_each_reference_pair_exactly_once(judged):
    reference_rows = judged[judged["system_b"] == REFERENCE]
    triples = reference_rows[["domain", "qid", "system_a"]].apply(tuple, axis=1)
    assert len(reference_rows) == triples.nunique() == len(DOMAINS) * QUERIES_PER_DOMAIN * 2
    table = win_rate_table(judged, REFERENCE).reset_index().set_index(["domain", "model"])
    n = table["n_win"] + table["n_tie"] + table["n_loss"] + table["n_invalid"]
    for domain in DOMAINS:
        for model in ("m1", "m2"):
            assert n[(domain, model)] == QUERIES_PER_DOMAIN
    assert n[("overall", "m1")] == n[("overall", "m2")] == len(DOMAINS) * QUERIES_PER_DOMAIN


def test_ratings_with_all_pairs_have_no_duplicate_battles(judged):
    only_reference, _ = ratings_table(judged, ELO, rounds=100, seed=0, kinds=["reference"])
    with_all_pairs, _ = ratings_table(
        judged, ELO, rounds=100, seed=0, kinds=["reference", "all_pairs"]
    )
    # every rank says out of how many: the two models and the reference
    assert (
        only_reference[("Bradley-Terry", "of")] == 3
    ).all() and REFERENCE in only_reference.index
    assert list(only_reference.columns).index(("Bradley-Terry", "of")) == (
        list(only_reference.columns).index(("Bradley-Terry", "rank")) + 1
    )
    votes_a = only_reference[("votes", "")]
    votes_b = with_all_pairs[("votes", "")]
    per_model = len(DOMAINS) * QUERIES_PER_DOMAIN
    assert votes_a.to_dict() == {REFERENCE: 2 * per_model, "m1": per_model, "m2": per_model}
    # + 1 sampled query per domain, one model pair: one more vote per model and domain, none for LFRQA
    assert votes_b.to_dict() == {REFERENCE: 2 * per_model, "m1": per_model + 3, "m2": per_model + 3}
    pairs = judged[["domain", "qid", "system_a", "system_b"]].apply(tuple, axis=1)
    assert not pairs.duplicated().any()


def test_reference_pairs_name_the_reference_second():
    queries, answers = make_data(models=("m1",))
    pairs = reference_pairs(answers, queries)
    assert len(pairs) == len(queries)
    assert {p["system_b"] for p in pairs} == {REFERENCE}
    assert all("\n" not in p["answer_b"] for p in pairs)


def test_the_tables_entry_point_runs_on_the_judged_file(judged, tmp_path, monkeypatch):
    """Rule arena_tables' entry point with its settings object, on the judged fixture's files."""
    recall = tmp_path / "recall.json"
    recall.write_text(json.dumps({"5": {"k": 5, "hit": 0.5, "recall": 0.4}}))
    answer_paths = []
    for model in (
        "m1",
        "m2",
    ):  # the answers files as rule rag_answers writes them: retriever and depth too
        rows = [
            {
                **json.loads(line),
                "retriever": "bm25",
                "k": 5,
                "no_answer": False,
                "thinking_unclosed": False,
            }
            for line in (tmp_path / f"{model}.jsonl").read_text().splitlines()
        ]
        answer_paths.append(tmp_path / f"{model}.answers.jsonl")
        answer_paths[-1].write_text("".join(json.dumps(r) + "\n" for r in rows))
    settings = ArenaTablesSettings(elo=ELO, rounds=20, seed=0)
    # the judge's controls: right on 3 of 6 "other reference" pairs, chance 1/2 -- it fails
    controls = tmp_path / "controls.jsonl"
    controls.write_text(
        "".join(
            json.dumps(
                {
                    "instrument": "arena judge",
                    "name": "local",
                    "scope": "fiqa",
                    "control": "other_reference",
                    "rule": "raw",
                    "item": f"q{k}",
                    "expected": "1",
                    "outcome": "1" if k < 3 else "2",
                    "correct": k < 3,
                    "chance": 0.5,
                    "baseline_correct": None,
                    "detail": {},
                }
            )
            + "\n"
            for k in range(6)
        )
    )
    drawn = {}
    real_figure = tables_module.ratings_figure
    monkeypatch.setattr(
        tables_module,
        "ratings_figure",
        lambda data, paths, warning="": (
            drawn.update(warning=warning) or real_figure(data, paths, warning)
        ),
    )
    build_arena_tables(
        {"bm25-k5.local": str(tmp_path / "judged.jsonl")},
        answer_paths,
        {"bm25": str(recall)},
        None,
        [],
        [],
        tmp_path / "tables",
        tmp_path / "figures",
        settings,
        control_paths=[controls],
    )
    # a judge that fails its controls says so first, in the ratings, the win rates and the figure
    plain = "The arena judge local cannot rank these systems: it did no better than chance on 1 of its 1"
    for table in ("arena_ratings", "arena_win_rates"):
        assert (tmp_path / f"tables/{table}.md").read_text().startswith(plain), table
    assert drawn["warning"].startswith(plain)
    # the PPI table: no human labels here, so the judge's numbers with the reason
    ppi = pd.read_csv(tmp_path / "tables/arena_ppi.csv")
    assert set(ppi["system"]) == {"m1", "m2"} and ppi["note"].str.startswith("no human label").all()
    rates = pd.read_csv(tmp_path / "tables/arena_win_rates.csv")
    assert set(rates["model"]) == {"m1", "m2"}
    assert (tmp_path / "figures/arena_ratings.png").exists()
    # no domain with a corpus (every answerer read from a file, docs/own-systems.md): no
    # retrieval, an empty retrieval table (before: a ValueError naming the index's two levels)
    build_arena_tables(
        {"bm25-k5.local": str(tmp_path / "judged.jsonl")},
        answer_paths,
        {},
        None,
        [],
        [],
        tmp_path / "no-corpus",
        tmp_path / "figures",
        settings,
    )
    assert set(pd.read_csv(tmp_path / "no-corpus/arena_win_rates.csv")["model"]) == {"m1", "m2"}
    assert (tmp_path / "no-corpus/arena_retrieval.csv").exists()


def test_the_ratings_figure_draws_a_rating_outside_its_interval(tmp_path):
    """A percentile bootstrap interval need not contain its point estimate (the dress
    rehearsal's three queries: the figure stopped the tables with matplotlib's "'xerr' must
    not contain negative values")."""
    import pandas as pd

    from isqaflow.arena.tables import ratings_figure

    ratings = pd.DataFrame(
        {"rating": [1000.0, 990.0], "lower": [1004.0, 980.0], "upper": [1030.0, 995.0]},
        index=["a", "b"],
    )
    ratings_figure({"win": {"elo": ratings}}, [tmp_path / "ratings.png"])
    assert (tmp_path / "ratings.png").stat().st_size > 0
