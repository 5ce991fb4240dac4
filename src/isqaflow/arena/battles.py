"""Which pairs the arena judge compares, and the judging jobs.

* Against the reference: every model answer vs the LFRQA answer of its query (the
  paper's main protocol; win and win+tie rates, Table 3).
* All pairs: on a seeded per-domain subsample of queries, every pair of models with
  the reference as one more player (the paper's Table 5, columns B and C), so that
  Elo and Bradley-Terry see direct comparisons between models.
* Human-labelled pairs: the pairs of the human preference file, judged so the
  judge's agreement with people can be measured (Tables 4 and 8).
* Summaries: ISQA's summaries against the paper's abstract, and ISQA against the
  baseline summary head to head.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from typing import Any

import pandas as pd

from isqaflow.data.schema import Paper, RagQuery
from isqaflow.io import read_jsonl, read_records, write_jsonl
from isqaflow.models.base import GenerationParams
from isqaflow.seeds import keyed_rng

log = logging.getLogger(__name__)

REFERENCE = "lfrqa"
ABSTRACT = "abstract"


def reference_pairs(answers: Sequence[dict[str, Any]], queries: dict[tuple[str, str], RagQuery]) -> list[dict]:
    pairs = []
    for a in answers:
        q = queries[(a["domain"], a["qid"])]
        pairs.append({"pair_id": f"{a['domain']}:{a['qid']}:{a['answerer']}|{REFERENCE}", "kind": "reference",
                      "domain": a["domain"], "qid": a["qid"], "query": q.question,
                      "system_a": a["answerer"], "answer_a": a["answer"],
                      "system_b": REFERENCE, "answer_b": q.reference.replace("\n", " ")})
    return pairs


def all_pairs(answers: Sequence[dict[str, Any]], queries: dict[tuple[str, str], RagQuery], per_domain: int,
              seed: int) -> list[dict]:
    """Every pair of players (models + reference) on ``per_domain`` sampled queries of each domain."""
    by_query: dict[tuple[str, str], dict[str, str]] = {}
    for a in answers:
        by_query.setdefault((a["domain"], a["qid"]), {})[a["answerer"]] = a["answer"]
    pairs = []
    for domain in sorted({d for d, _ in by_query}):
        qids = sorted(q for d, q in by_query if d == domain)
        rng = keyed_rng(seed, f"all-pairs:{domain}")
        chosen = sorted(rng.choice(qids, size=min(per_domain, len(qids)), replace=False).tolist()) if qids else []
        for qid in chosen:
            q = queries[(domain, qid)]
            players = dict(sorted(by_query[(domain, qid)].items()))
            players[REFERENCE] = q.reference.replace("\n", " ")
            for a, b in itertools.combinations(players, 2):
                pairs.append({"pair_id": f"{domain}:{qid}:{a}|{b}", "kind": "all_pairs", "domain": domain,
                              "qid": qid, "query": q.question, "system_a": a, "answer_a": players[a],
                              "system_b": b, "answer_b": players[b]})
    return pairs


def _judge(pairs: list[dict], judge_spec: dict[str, Any], judge_name: str, mode: str, orders: str, seed: int,
           generation: dict[str, Any] | None, cache_path, threads: int | None,
           prompt_files: list[str] | tuple[str, ...] = ()) -> list[dict]:
    """``prompt_files``: RAG-QA Arena's published system, template and examples files, or none."""
    from isqaflow.arena.judge import judge_pairs, position_consistency
    from isqaflow.data.prompts import load_arena_prompt
    from isqaflow.models.registry import load_model

    model = load_model(judge_spec, cache=cache_path, name=judge_name, threads=threads)
    params = GenerationParams.from_dict(generation) if generation else None
    records = judge_pairs(model, pairs, mode=mode, orders=orders, seed=seed, params=params,
                          prompt=load_arena_prompt(*prompt_files) if prompt_files else None)
    for r in records:
        r["judge"] = judge_name
    invalid = sum(r["verdict"] is None for r in records)
    log.info("%s judged %d pairs: %d without a valid verdict, position consistency %s", judge_name, len(records),
             invalid, position_consistency(records))
    return records


def run_arena_judge(query_paths, answer_paths, out_path, judge_spec: dict[str, Any], judge_name: str, mode: str,
                    orders: str, all_pairs_per_domain: int, seed: int, generation: dict[str, Any] | None,
                    cache_path, threads: int | None = None, prompt_files: list[str] | tuple[str, ...] = ()) -> int:
    """Entry point of rule arena_judge: every answer vs the reference, plus the all-pairs subsample."""
    queries = {(q.domain, q.id): q for path in query_paths for q in read_records(path, RagQuery)}
    answers = [obj for path in answer_paths for _, obj in read_jsonl(path)]
    pairs = reference_pairs(answers, queries)
    if all_pairs_per_domain:
        pairs += all_pairs(answers, queries, all_pairs_per_domain, seed)
    return write_jsonl(out_path, _judge(pairs, judge_spec, judge_name, mode, orders, seed, generation, cache_path,
                                        threads, prompt_files))


def run_human_pairs(human_csv, out_path, judge_spec: dict[str, Any], judge_name: str, mode: str, orders: str,
                    seed: int, generation: dict[str, Any] | None, cache_path, threads: int | None = None,
                    prompt_files: list[str] | tuple[str, ...] = ()) -> int:
    """Entry point of rule arena_human_pairs: the judge on the pairs people rated."""
    labels = read_human_labels(human_csv)
    first = labels.drop_duplicates("pair_id")
    pairs = [{"pair_id": r.pair_id, "kind": "human", "domain": r.domain, "qid": str(r.qid), "query": r.query,
              "system_a": r.system_1, "answer_a": r.answer_1, "system_b": r.system_2, "answer_b": r.answer_2}
             for r in first.itertuples()]
    return write_jsonl(out_path, _judge(pairs, judge_spec, judge_name, mode, orders, seed, generation, cache_path,
                                        threads, prompt_files))


HUMAN_COLUMNS = ("pair_id", "domain", "qid", "query", "system_1", "answer_1", "system_2", "answer_2", "annotator",
                 "rating")


def read_human_labels(path) -> pd.DataFrame:
    """Human pairwise preferences, one row per (pair, annotator), checked."""
    from isqaflow.arena.agreement import merge_rating
    from isqaflow.io import RecordError

    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in HUMAN_COLUMNS if c not in df.columns]
    if missing:
        raise RecordError(path, f"missing column(s) {missing}")
    for i, row in df.iterrows():
        try:
            merge_rating(row["rating"])
        except ValueError as err:
            raise RecordError(path, str(err), record=row["pair_id"], field="rating", line=int(i) + 2) from err
    return df


def run_summary_arena(papers_path, summary_paths, systems: list[str], baseline: str, out_path,
                      judge_spec: dict[str, Any], judge_name: str, mode: str, orders: str, seed: int,
                      generation: dict[str, Any] | None, cache_path, threads: int | None = None,
                      prompt_files: list[str] | tuple[str, ...] = ()) -> int:
    """Entry point of rule arena_summaries: summaries vs the abstract, and ISQA vs the baseline."""
    papers = {p.id: p for p in read_records(papers_path, Paper)}
    finals: dict[tuple[str, str], dict] = {}
    for path in summary_paths:
        for _, row in read_jsonl(path):
            if row["system"] in systems and row.get("final", True):
                finals[(row["paper_id"], row["system"])] = row
    pairs = []
    for (pid, system), row in sorted(finals.items()):
        paper = papers[pid]
        query = f'Summarize the scientific paper "{paper.title}".'
        common = {"domain": row["dataset"], "qid": pid, "query": query, "summarizer": row["summarizer"]}
        pairs.append({"pair_id": f"{pid}:{system}|{ABSTRACT}", "kind": "reference", **common,
                      "system_a": system, "answer_a": row["summary"], "system_b": ABSTRACT,
                      "answer_b": paper.abstract})
        if system != baseline and (pid, baseline) in finals:
            pairs.append({"pair_id": f"{pid}:{system}|{baseline}", "kind": "head_to_head", **common,
                          "system_a": system, "answer_a": row["summary"], "system_b": baseline,
                          "answer_b": finals[(pid, baseline)]["summary"]})
    return write_jsonl(out_path, _judge(pairs, judge_spec, judge_name, mode, orders, seed, generation, cache_path,
                                        threads, prompt_files))


def outcomes_vs(records: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Each model's outcome against ``reference`` (win / tie / loss / invalid), from judged pairs."""
    rows = records[(records["system_b"] == reference) & (records["system_a"] != reference)]
    outcome = rows["verdict"].map({"1": "win", "2": "loss", "tie": "tie"}).fillna("invalid")
    return pd.DataFrame({"domain": rows["domain"], "model": rows["system_a"], "outcome": outcome})
