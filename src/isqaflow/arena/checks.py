"""The arena judge checked against known answers: human-labelled pairs (rule arena_judge_checks).

The pairs of the human preference file are judged so that the judge's agreement with
people can be measured (the paper's Tables 4 and 8).
"""

from __future__ import annotations

from typing import Any

from isqaflow.arena.agreement import read_human_labels
from isqaflow.arena.judge import judge_with_model
from isqaflow.io import write_jsonl


def human_pairs(human_csv) -> list[dict[str, Any]]:
    """One pair per pair id of the human preference file (its first row's texts)."""
    first = read_human_labels(human_csv).drop_duplicates("pair_id")
    return [{"pair_id": r.pair_id, "kind": "human", "domain": r.domain, "qid": str(r.qid), "query": r.query,
             "system_a": r.system_1, "answer_a": r.answer_1, "system_b": r.system_2, "answer_b": r.answer_2}
            for r in first.itertuples()]


def run_human_pairs(human_csv, out_path, judge_spec: dict[str, Any], judge_name: str, mode: str, orders: str,
                    seed: int, generation: dict[str, Any] | None, cache_path, threads: int | None = None,
                    rule: str = "raw", tie_band: float = 0.0) -> int:
    """Entry point of rule arena_human_pairs: the judge on the pairs people rated."""
    records = judge_with_model(human_pairs(human_csv), judge_spec, judge_name, mode, orders, seed, generation,
                               cache_path, threads, rule=rule, tie_band=tie_band)
    return write_jsonl(out_path, records)
