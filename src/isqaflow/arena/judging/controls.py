"""The arena judge checked against known answers (rule arena_judge_checks).

Two kinds of checks, judged in one job with one model load:

* Human-labelled pairs: the pairs of the human preference file, so that the judge's
  agreement with people can be measured (the paper's Tables 4 and 8).
* Known-answer controls (issue 12): pairs whose right verdict is known by
  construction, built from the run's own LFRQA queries with the run's seed and judged
  exactly like the real pairs (same :func:`~isqaflow.arena.judging.judge.judge_pairs`, mode,
  orders, decoding and verdict rule).  The reference answer is shown as LFRQA's
  answers are in the real reference pairs (its lines joined by spaces).

  ========================  ====================================================  =========
  control                   the pair                                              expected
  ========================  ====================================================  =========
  ``other_reference``       a query's reference vs the reference of another        reference
                            query of the same domain (fluent, but off the query)  wins
  ``no_answer``             a query's reference vs "I couldn't find an answer."   reference
                                                                                  wins
  ``self``                  a query's reference vs itself                          tie
  ========================  ====================================================  =========

  For each control and domain, ``per_domain`` queries are drawn without replacement
  by ``keyed_rng(seed, "arena-control:<control>:<domain>")`` (so one control's items
  do not depend on which other controls run); the same generator then draws the
  other query (``other_reference``) and the side the reference is shown on (system_a
  or system_b, probability 1/2), so that a judge preferring one position cannot pass
  by position.

  Chance (the share a content-blind judge gets): 0.5 for the two "reference wins"
  controls (a judge that picks a position or flips a coin is right on at most half
  of them; with both orders judged such a judge's verdict is a tie, so it gets 0).
  For ``self`` the chance level is 1.0 when both orders are judged: the two orders
  are then one and the same request, so any judge that answers a request
  deterministically ties the pair (the calibrated margin is exactly 0, the raw
  labels disagree or are both 0).  The control then checks the combination of
  orders, not the judge's discrimination, and the validity table rightly shows no
  evidence from it.  With one random order its chance is 1/3 (a label drawn at
  random among 1, 2 and 0).

Each control item gives one JSON Lines record per verdict rule (the shared contract of
``results/validity/``): "raw" always, "calibrated" as well when the judge has
log-probabilities of both orders.  ``correct`` is None when the judge's reply could
not be parsed (counted as invalid, never dropped).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from isqaflow.arena.judging.agreement import read_human_labels
from isqaflow.arena.judging.judge import judge_groups
from isqaflow.arena.judging.settings import ArenaJudge
from isqaflow.arena.no_answer import NO_ANSWER
from isqaflow.data.schema import RagQuery
from isqaflow.io import read_records, write_jsonl
from isqaflow.seeds import keyed_rng
from isqaflow.suites.arena import JUDGE

log = logging.getLogger(__name__)

INSTRUMENT = JUDGE  # the suite descriptor's name of the instrument
CONTROLS = ("other_reference", "no_answer", "self")
# The name of the answer a control sets against the reference (system_a / system_b).
_CONTRAST = {
    "other_reference": "other_reference",
    "no_answer": "no_answer",
    "self": "reference_copy",
}
_REFERENCE = "reference"
_OUTCOME = {"1": "a", "2": "b", "tie": "tie", None: "invalid"}


def human_pairs(human_csv) -> list[dict[str, Any]]:
    """One pair per pair id of the human preference file (its first row's texts)."""
    first = read_human_labels(human_csv).drop_duplicates("pair_id")
    return [
        {
            "pair_id": r.pair_id,
            "kind": "human",
            "domain": r.domain,
            "qid": str(r.qid),
            "query": r.query,
            "system_a": r.system_1,
            "answer_a": r.answer_1,
            "system_b": r.system_2,
            "answer_b": r.answer_2,
        }
        for r in first.itertuples()
    ]


def _reference_text(query: RagQuery) -> str:
    return query.reference.replace("\n", " ")  # as in the real reference pairs


def build_controls(
    queries: Sequence[RagQuery], controls: Sequence[str], per_domain: int, seed: int
) -> list[dict[str, Any]]:
    """The control pairs of the given controls, ``per_domain`` queries per domain and control.

    Deterministic: the same queries, controls, ``per_domain`` and ``seed`` give the same
    pairs.  Each pair holds the judge's keys (``pair_id``, ``query``, ``system_a``,
    ``answer_a``, ``system_b``, ``answer_b``) and ``kind`` "control", ``control``,
    ``domain``, ``qid``, ``expected`` ("a", "b" or "tie": the side that must win),
    ``reference_side`` and, for ``other_reference``, ``other_qid``.  A domain with a
    single query has no other reference to offer: that control is skipped there, with
    a warning.
    """
    unknown = [c for c in controls if c not in CONTROLS]
    if unknown:
        raise ValueError(f"unknown arena control(s) {unknown}; known: {list(CONTROLS)}")
    if per_domain < 0:
        raise ValueError(f"per_domain must be >= 0, got {per_domain}")
    by_domain: dict[str, list[RagQuery]] = {}
    for query in queries:
        by_domain.setdefault(query.domain, []).append(query)
    pairs = []
    for control in (c for c in CONTROLS if c in controls):
        for domain in sorted(by_domain):
            domain_queries = sorted(by_domain[domain], key=lambda q: q.id)
            if control == "other_reference" and len(domain_queries) < 2:
                log.warning("domain %s has a single query: no %s control there", domain, control)
                continue
            rng = keyed_rng(seed, f"arena-control:{control}:{domain}")
            size = min(per_domain, len(domain_queries))
            chosen = sorted(rng.choice(len(domain_queries), size=size, replace=False).tolist())
            for index in chosen:
                query = domain_queries[index]
                pair = {
                    "pair_id": f"control:{control}:{domain}:{query.id}",
                    "kind": "control",
                    "control": control,
                    "domain": domain,
                    "qid": query.id,
                    "query": query.question,
                }
                if control == "other_reference":
                    others = [q for q in domain_queries if q.id != query.id]
                    other = others[int(rng.integers(len(others)))]
                    pair["other_qid"] = other.id
                    contrast = _reference_text(other)
                elif control == "no_answer":
                    contrast = NO_ANSWER
                else:
                    contrast = _reference_text(query)
                reference_side = "a" if rng.random() < 0.5 else "b"
                sides = {
                    reference_side: (_REFERENCE, _reference_text(query)),
                    "b" if reference_side == "a" else "a": (_CONTRAST[control], contrast),
                }
                pair.update(
                    system_a=sides["a"][0],
                    answer_a=sides["a"][1],
                    system_b=sides["b"][0],
                    answer_b=sides["b"][1],
                    reference_side=reference_side,
                    expected="tie" if control == "self" else reference_side,
                )
                pairs.append(pair)
    return pairs


def control_chance(control: str, orders: str) -> float:
    """The share of a control a content-blind judge gets right (see the module docstring)."""
    if control not in CONTROLS:
        raise ValueError(f"unknown arena control {control!r}; known: {list(CONTROLS)}")
    if control == "self":
        return 1.0 if orders == "both" else 1.0 / 3.0
    return 0.5


_DETAIL_KEYS = (
    "domain",
    "qid",
    "other_qid",
    "reference_side",
    "order",
    "verdict_ab",
    "verdict_ba",
    "raw_ab",
    "raw_ba",
    "logprobs_ab",
    "logprobs_ba",
    "margin_ab",
    "margin_ba",
    "tie_band",
)


def control_records(
    judged: Sequence[Mapping[str, Any]], judge_name: str, scope: str, orders: str
) -> list[dict[str, Any]]:
    """Validity records (the shared contract) of judged control pairs: one per pair and rule.

    "raw" is written for every pair; "calibrated" where the pair has the margin of both
    orders.  ``outcome`` is "a", "b", "tie" or "invalid" (the reply could not be
    parsed: ``correct`` None); ``detail`` keeps what the verdict was made from.
    """
    records = []
    for pair in judged:
        rules = ["raw"] + (["calibrated"] if pair.get("margin") is not None else [])
        for rule in rules:
            verdict = pair[f"verdict_{rule}"]
            outcome = _OUTCOME[verdict]
            detail = {key: pair[key] for key in _DETAIL_KEYS if pair.get(key) not in (None, "")}
            if rule == "calibrated":
                detail["margin"] = pair["margin"]
            records.append(
                {
                    "instrument": INSTRUMENT,
                    "name": judge_name,
                    "scope": scope,
                    "control": pair["control"],
                    "rule": rule,
                    "item": f"{pair['domain']}:{pair['qid']}",
                    "expected": pair["expected"],
                    "outcome": outcome,
                    "correct": None if verdict is None else outcome == pair["expected"],
                    "chance": control_chance(pair["control"], orders),
                    "baseline_correct": None,
                    "detail": detail,
                }
            )
    return records


def summarize_controls(
    records: Sequence[Mapping[str, Any]],
) -> dict[tuple[str, str], dict[str, int]]:
    """(control, rule) -> {"n", "n_correct", "n_invalid"}: for the job's log."""
    summary: dict[tuple[str, str], dict[str, int]] = {}
    for record in records:
        counts = summary.setdefault(
            (record["control"], record["rule"]), {"n": 0, "n_correct": 0, "n_invalid": 0}
        )
        counts["n"] += 1
        counts["n_correct"] += record["correct"] is True
        counts["n_invalid"] += record["correct"] is None
    return summary


@dataclass(frozen=True)
class JudgeChecksJob:
    """What one ``arena_judge_checks`` job runs: the judge (:class:`ArenaJudge`) and the
    known-answer controls (config ``validity.arena``: ``controls`` and ``per_domain``)."""

    judge: ArenaJudge
    controls: tuple[str, ...]
    per_domain: int

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any) -> JudgeChecksJob:
        """From the rule's params (the judge's, controls, per_domain) and the wildcard ``judge``."""
        return cls(
            judge=ArenaJudge.from_rule(params, wildcards),
            controls=tuple(params.controls),
            per_domain=params.per_domain,
        )


def run_judge_checks(
    query_paths: Sequence,
    human_csv,
    validity_path,
    agreement_path,
    job: JudgeChecksJob,
    cache_path,
    threads: int | None = None,
    prompt_files: Sequence[str] = (),
) -> dict[tuple[str, str], dict[str, int]]:
    """Entry point of rule arena_judge_checks: the judge on the human-labelled pairs and the controls.

    Writes the judged human pairs to ``agreement_path`` when ``human_csv`` is given
    (both or neither), and the control records to ``validity_path`` (no controls: an
    empty file).  The scope of the records is the domains' names joined by "+".
    Returns the per-(control, rule) counts.  ``prompt_files``: the published prompt's files
    (``prompts: published``), or none.
    """
    if (human_csv is None) != (agreement_path is None):
        raise ValueError("human_csv and agreement_path go together: give both or neither")
    queries = [q for path in query_paths for q in read_records(path, RagQuery)]
    judge = job.judge
    groups = {
        "human": human_pairs(human_csv) if human_csv else [],
        "control": build_controls(queries, job.controls, job.per_domain, judge.seed),
    }
    judged = judge_groups(
        groups,
        cache_path=cache_path,
        threads=threads,
        prompt_files=prompt_files,
        **judge.judge_kwargs(),
    )
    if agreement_path is not None:
        write_jsonl(agreement_path, judged["human"])
    scope = "+".join(sorted({q.domain for q in queries}))
    records = control_records(judged["control"], judge.name, scope, judge.orders)
    write_jsonl(validity_path, records)
    summary = summarize_controls(records)
    for (control, verdict_rule), counts in sorted(summary.items()):
        log.info(
            "%s control %s, rule %s: %d of %d correct, %d invalid",
            judge.name,
            control,
            verdict_rule,
            counts["n_correct"],
            counts["n"],
            counts["n_invalid"],
        )
    return summary
