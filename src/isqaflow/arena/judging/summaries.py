"""ISQA's summaries in the arena (rule arena_summaries).

Each final summary is judged against the paper's abstract (the summaries' reference,
like LFRQA's answer for a query), and each ISQA or generic-feedback summary against
the baseline summary of the same paper, head to head.  The "query" is a request to
summarize the paper, named by its title.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from isqaflow.arena.judging.judge import judge_with_model
from isqaflow.arena.judging.settings import ArenaJudge
from isqaflow.arena.players import ABSTRACT
from isqaflow.data.schema import Paper
from isqaflow.io import read_jsonl, read_records, write_jsonl


def summary_pairs(
    papers: Mapping[str, Any],
    rows: Iterable[Mapping[str, Any]],
    systems: Sequence[str],
    baseline: str,
) -> list[dict[str, Any]]:
    """The judged pairs: each final summary of a chosen system vs its paper's abstract, and each one
    but the baseline's vs the baseline summary of the same paper.  ``papers``: id -> :class:`Paper`
    (or any object with ``title`` and ``abstract``); ``rows``: the summaries files' records.  The
    spend plan counts the same pairs."""
    finals: dict[tuple[str, str], Mapping[str, Any]] = {}
    for row in rows:
        if row["system"] in systems and row.get("final", True):
            finals[(row["paper_id"], row["system"])] = row
    pairs = []
    for (pid, system), row in sorted(finals.items()):
        paper = papers[pid]
        query = f'Summarize the scientific paper "{paper.title}".'
        common = {
            "domain": row["dataset"],
            "qid": pid,
            "query": query,
            "summarizer": row["summarizer"],
        }
        pairs.append(
            {
                "pair_id": f"{pid}:{system}|{ABSTRACT}",
                "kind": "reference",
                **common,
                "system_a": system,
                "answer_a": row["summary"],
                "system_b": ABSTRACT,
                "answer_b": paper.abstract,
            }
        )
        if system != baseline and (pid, baseline) in finals:
            pairs.append(
                {
                    "pair_id": f"{pid}:{system}|{baseline}",
                    "kind": "head_to_head",
                    **common,
                    "system_a": system,
                    "answer_a": row["summary"],
                    "system_b": baseline,
                    "answer_b": finals[(pid, baseline)]["summary"],
                }
            )
    return pairs


@dataclass(frozen=True)
class SummaryArenaJob:
    """What one ``arena_summaries`` job runs: the judge (:class:`ArenaJudge`), the systems
    whose final summaries are judged, and the baseline they meet head to head (the ISQA
    refinement's initial prompt)."""

    judge: ArenaJudge
    systems: tuple[str, ...]
    baseline: str

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any) -> SummaryArenaJob:
        """From the rule's params (the judge's, systems, baseline) and the wildcard ``judge``."""
        return cls(
            judge=ArenaJudge.from_rule(params, wildcards),
            systems=tuple(params.systems),
            baseline=params.baseline,
        )


def run_summary_arena(
    papers_path,
    summary_paths,
    out_path,
    job: SummaryArenaJob,
    cache_path,
    threads: int | None = None,
    prompt_files: Sequence[str] = (),
) -> int:
    """Entry point of rule arena_summaries: summaries vs the abstract, and ISQA vs the baseline.

    The judge's verdict rule (``job.judge.rule``, ``tie_band``) is read by
    :mod:`isqaflow.arena.judging.verdicts`; ``prompt_files``: the published prompt's files
    (``prompts: published``), or none.
    """
    papers = {p.id: p for p in read_records(papers_path, Paper)}
    rows = (row for path in summary_paths for _, row in read_jsonl(path))
    pairs = summary_pairs(papers, rows, list(job.systems), job.baseline)
    records = judge_with_model(
        pairs,
        cache_path=cache_path,
        threads=threads,
        prompt_files=prompt_files,
        **job.judge.judge_kwargs(),
    )
    return write_jsonl(out_path, records)
