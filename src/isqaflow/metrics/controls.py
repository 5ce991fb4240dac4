"""Known-answer controls for QAGS and QuestEval: does the metric prefer a paper's own abstract?

Control ``other_abstract`` (issue 12): for each paper, its own abstract and the
abstract of another paper of the same dataset are scored as "summaries" of the
paper's body, through exactly the scoring code of the real summaries
(:func:`isqaflow.metrics.qa_metrics.score_summaries`: the same question generator,
answerer, settings, query weighter and shared source questions).  A metric that
measures consistency with the source scores the own abstract higher.

* ``others`` other papers per paper (validity.metrics.others; None: every other paper,
  so n papers give n(n - 1) ordered pairs -- 6 from 3 papers, enough for the exact test
  to be able to pass, see :func:`isqaflow.stats.min_items_to_separate`).  With one
  other, the pairs are a seeded derangement of the (sampled) papers: every paper gets
  another one's abstract and each abstract is used once as the other text.  With k > 1,
  a seeded order of the papers, each paper taking the k papers after it (cyclically):
  k distinct others, each abstract used k times.  The same seed gives the same pairs.
  ``papers`` caps the papers (a seeded sample; None: all).  Papers without an abstract
  or a body take no part.  Each own abstract is scored once, whatever its number of
  others.
* One record per (paper, other paper) and metric, item ``<scope>:<paper>:<other>``
  (the record contract of the validity table):
  ``correct`` is true when the own abstract scores strictly higher, false when it
  scores lower or the same (a tie does not separate the two texts), and null when
  either score is NaN (the metric is undefined -- e.g. no QAGS question kept -- and the
  record is counted as invalid, never dropped).  ``chance`` is 0.5: a metric that
  scores the two abstracts at random prefers the own one half of the time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
import dataclasses
from dataclasses import dataclass
from typing import Any

from isqaflow.data.schema import Paper
from isqaflow.io import read_records, write_jsonl
from isqaflow.metrics.qa_metrics import score_summaries
from isqaflow.metrics.scorers import MetricModels
from isqaflow.seeds import keyed_rng
from isqaflow.suites.isqa import QAGS, QUESTEVAL

CONTROLS = ("other_abstract",)
# metric field of the scores -> (instrument, name) of the validity records
CONTROL_METRICS = {
    "qags": (QAGS, "qags"),
    "questeval": (QUESTEVAL, "questeval"),
    "questeval_v024": (QUESTEVAL, "questeval_v024"),
}
CHANCE = 0.5


def derangement(n: int, rng) -> list[int]:
    """A permutation of range(n) without fixed points (n >= 2), uniform over derangements."""
    if n < 2:
        raise ValueError(f"a derangement needs at least 2 items, got {n}")
    while True:  # rejection sampling: about e (2.7) draws on average
        perm = [int(i) for i in rng.permutation(n)]
        if all(i != p for i, p in enumerate(perm)):
            return perm


def control_pairs(
    papers: Sequence[Paper],
    seed: int,
    max_papers: int | None = None,
    scope: str = "",
    others: int | None = 1,
) -> list[tuple[Paper, Paper]]:
    """(paper, a paper whose abstract is its "other" abstract), seeded; see the module docstring.

    Sorted by paper id, then by the other paper's place in the draw; ``others`` above
    the number of other papers means all of them.
    """
    if others is not None and others < 1:
        raise ValueError(f"validity.metrics.others must be at least 1 (or null: all), got {others}")
    usable = sorted(
        (p for p in papers if p.abstract.strip() and p.body().strip()), key=lambda p: p.id
    )
    if len(usable) < 2:
        raise ValueError(
            f"the other_abstract control of {scope or 'this dataset'} needs at least 2 papers with an abstract "
            f"and a body, got {len(usable)}"
        )
    rng = keyed_rng(seed, f"metric controls:other_abstract:{scope}")
    if max_papers is not None and max_papers < len(usable):
        if max_papers < 2:
            raise ValueError(
                f"validity.metrics.papers must be at least 2 for other_abstract, got {max_papers}"
            )
        chosen = sorted(int(i) for i in rng.choice(len(usable), size=max_papers, replace=False))
        usable = [usable[i] for i in chosen]
    n = len(usable)
    k = n - 1 if others is None else min(others, n - 1)
    if k == 1:
        perm = derangement(n, rng)
        return [(paper, usable[j]) for paper, j in zip(usable, perm, strict=True)]
    order = [int(i) for i in rng.permutation(n)]
    place = {index: position for position, index in enumerate(order)}
    return [
        (usable[i], usable[order[(place[i] + step) % n]])
        for i in range(n)
        for step in range(1, k + 1)
    ]


def _number(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def outcome_record(
    instrument: str,
    name: str,
    scope: str,
    item: str,
    own: float,
    other: float,
    detail: dict[str, Any],
) -> dict[str, Any]:
    """One validity record (the brief's contract) for one paper and one metric."""
    if math.isnan(own) or math.isnan(other):
        outcome, correct = "invalid", None
    elif own > other:
        outcome, correct = "own", True
    elif own < other:
        outcome, correct = "other", False
    else:
        outcome, correct = "tie", False
    return {
        "instrument": instrument,
        "name": name,
        "scope": scope,
        "control": "other_abstract",
        "rule": "raw",
        "item": item,
        "expected": "own",
        "outcome": outcome,
        "correct": correct,
        "chance": CHANCE,
        "baseline_correct": None,
        "detail": {"own": _number(own), "other": _number(other), **detail},
    }


@dataclass(frozen=True)
class MetricControls:
    """The metric controls of one dataset (``scope``), from the config: ``validity.metrics``
    (``controls``, ``papers``: at most this many sampled papers, ``others``), the run's ``seed``,
    and the metrics' models and settings (:class:`MetricModels`)."""

    scope: str
    seed: int
    controls: tuple[str, ...] = CONTROLS
    max_papers: int | None = None
    others: int | None = 1
    models: MetricModels = dataclasses.field(default_factory=MetricModels)

    def __post_init__(self) -> None:
        object.__setattr__(self, "controls", tuple(self.controls))
        unknown = sorted(set(self.controls) - set(CONTROLS))
        if unknown:
            raise ValueError(f"unknown metric control(s) {unknown}; known: {list(CONTROLS)}")

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any) -> MetricControls:
        """From rule metric_controls' params (qg, qa, settings, weighter, controls, papers,
        others, seed) and its ``dataset`` wildcard (the scope)."""
        return cls(
            scope=wildcards.dataset,
            seed=params.seed,
            controls=tuple(params.controls),
            max_papers=params.papers,
            others=params.others,
            models=MetricModels.from_rule(params),
        )


def run_metric_controls(
    papers: Sequence[Paper], generator, answerer, job: MetricControls, weighter=None
) -> list[dict[str, Any]]:
    """Validity records of the metric controls for one dataset (``job.scope``).

    Scores each sampled paper's own abstract once and each of its other abstracts, in
    one :func:`score_summaries` call (paper by paper: own, then its others).
    """
    if "other_abstract" not in job.controls:
        return []
    scope = job.scope
    pairs = control_pairs(papers, job.seed, job.max_papers, scope, job.others)
    items, own_index, other_index = [], {}, []
    for paper, other in pairs:
        if paper.id not in own_index:
            own_index[paper.id] = len(items)
            items.append((paper.abstract, paper.body()))
        other_index.append(len(items))
        items.append((other.abstract, paper.body()))
    scores = score_summaries(items, generator, answerer, job.models.settings, weighter=weighter)
    records = []
    for k, (paper, other) in enumerate(pairs):
        own, foreign = scores[own_index[paper.id]], scores[other_index[k]]
        for field, (instrument, name) in CONTROL_METRICS.items():
            detail = {"other_paper": other.id}
            if field == "qags":
                detail.update(
                    own_questions=own.qags_questions, other_questions=foreign.qags_questions
                )
            records.append(
                outcome_record(
                    instrument,
                    name,
                    scope,
                    f"{scope}:{paper.id}:{other.id}",
                    getattr(own, field),
                    getattr(foreign, field),
                    detail,
                )
            )
    return records


def run_controls_job(
    papers_path, out_path, job: MetricControls, cache_path, threads: int | None = None
) -> int:
    """Entry point of rule metric_controls: the models of score_summaries, loaded once."""
    from isqaflow.models.cache import CallCache

    papers = read_records(papers_path, Paper)
    cache = CallCache(cache_path)
    generator, answerer, query_weighter = job.models.build(cache, threads)
    records = run_metric_controls(papers, generator, answerer, job, query_weighter)
    return write_jsonl(out_path, records)
