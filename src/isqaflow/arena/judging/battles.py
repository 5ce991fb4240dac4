"""Which pairs the arena judge compares against the reference and among models (rule arena_judge).

* Against the reference: every model answer vs the LFRQA answer of its query (the
  paper's main protocol; win and win+tie rates, Table 3).
* All pairs: on a seeded per-domain subsample of queries, every pair of models (the
  paper's Table 5, columns B and C), so that Elo and Bradley-Terry see direct
  comparisons between models.  The reference is no player there: each model already
  meets it once per query in the reference pairs, and the paper's vote counts (+10
  votes per sampled query for each of 11 models) count model pairs only.

The human-labelled pairs and the known-answer controls are judged by
:mod:`isqaflow.arena.judging.controls`, the summaries by :mod:`isqaflow.arena.judging.summaries`.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from isqaflow.arena.judging.judge import judge_with_model
from isqaflow.arena.judging.settings import ArenaJudge
from isqaflow.arena.players import REFERENCE
from isqaflow.data.schema import RagQuery
from isqaflow.io import read_jsonl, read_records, write_jsonl
from isqaflow.seeds import keyed_rng

log = logging.getLogger(__name__)


def reference_pairs(
    answers: Sequence[dict[str, Any]], queries: dict[tuple[str, str], RagQuery]
) -> list[dict]:
    """Every answer vs its query's LFRQA reference (system_b; lines joined by spaces), once each."""
    pairs = []
    for a in answers:
        q = queries[(a["domain"], a["qid"])]
        pairs.append(
            {
                "pair_id": f"{a['domain']}:{a['qid']}:{a['answerer']}|{REFERENCE}",
                "kind": "reference",
                "domain": a["domain"],
                "qid": a["qid"],
                "query": q.question,
                "system_a": a["answerer"],
                "answer_a": a["answer"],
                "system_b": REFERENCE,
                "answer_b": q.reference.replace("\n", " "),
            }
        )
    return pairs


def all_pairs(
    answers: Sequence[dict[str, Any]],
    queries: dict[tuple[str, str], RagQuery],
    per_domain: int,
    seed: int,
) -> list[dict]:
    """Every pair of models on ``per_domain`` sampled queries of each domain (no reference).

    The queries are drawn per domain with ``keyed_rng(seed, "all-pairs:<domain>")``
    among the queries with an answer; a query answered by fewer than two models gives
    no pair.  Pairs are in sorted model order (system_a < system_b).
    """
    by_query: dict[tuple[str, str], dict[str, str]] = {}
    for a in answers:
        by_query.setdefault((a["domain"], a["qid"]), {})[a["answerer"]] = a["answer"]
    pairs = []
    for domain in sorted({d for d, _ in by_query}):
        qids = sorted(q for d, q in by_query if d == domain)
        rng = keyed_rng(seed, f"all-pairs:{domain}")
        chosen = (
            sorted(rng.choice(qids, size=min(per_domain, len(qids)), replace=False).tolist())
            if qids
            else []
        )
        for qid in chosen:
            q = queries[(domain, qid)]
            players = dict(sorted(by_query[(domain, qid)].items()))
            for a, b in itertools.combinations(players, 2):
                pairs.append(
                    {
                        "pair_id": f"{domain}:{qid}:{a}|{b}",
                        "kind": "all_pairs",
                        "domain": domain,
                        "qid": qid,
                        "query": q.question,
                        "system_a": a,
                        "answer_a": players[a],
                        "system_b": b,
                        "answer_b": players[b],
                    }
                )
    return pairs


@dataclass(frozen=True)
class ArenaJudgeJob:
    """What one ``arena_judge`` job runs: the judge (:class:`ArenaJudge`), the all-pairs
    subsample's size per domain (the arena run's ``all_pairs_per_domain``) and how many times
    each pair is judged (``repeats``, judge noise: :func:`judge_groups`)."""

    judge: ArenaJudge
    all_pairs_per_domain: int
    repeats: int

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any) -> ArenaJudgeJob:
        """From the rule's params (the judge's, all_pairs, repeats) and the wildcard ``judge``."""
        return cls(
            judge=ArenaJudge.from_rule(params, wildcards),
            all_pairs_per_domain=params.all_pairs,
            repeats=params.repeats,
        )


def run_arena_judge(
    query_paths,
    answer_paths,
    out_path,
    job: ArenaJudgeJob,
    cache_path,
    threads: int | None = None,
    prompt_files: Sequence[str] = (),
) -> int:
    """Entry point of rule arena_judge: every answer vs the reference, plus the all-pairs subsample.

    The judge's verdict rule (``job.judge.rule``, ``tie_band``) is read by
    :mod:`isqaflow.arena.judging.verdicts`; ``prompt_files``: the published prompt's files
    (``prompts: published``), or none.
    """
    queries = {(q.domain, q.id): q for path in query_paths for q in read_records(path, RagQuery)}
    answers = [obj for path in answer_paths for _, obj in read_jsonl(path)]
    pairs = reference_pairs(answers, queries)
    if job.all_pairs_per_domain:
        pairs += all_pairs(answers, queries, job.all_pairs_per_domain, job.judge.seed)
    records = judge_with_model(
        pairs,
        cache_path=cache_path,
        threads=threads,
        prompt_files=prompt_files,
        repeats=job.repeats,
        **job.judge.judge_kwargs(),
    )
    return write_jsonl(out_path, records)
