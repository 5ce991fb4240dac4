"""One arena judge as a judging job runs it, built once from the rule's params.

The rules ``arena_judge``, ``arena_judge_checks`` and ``arena_summaries`` pass the same
judge params (``model``, ``mode``, ``generation``, ``orders``, ``verdict_rule``, ``seed``)
and the judge's name as the wildcard ``judge``; :class:`ArenaJudge` holds them, and each
stage's job (:class:`isqaflow.arena.judging.battles.ArenaJudgeJob`,
:class:`isqaflow.arena.judging.controls.JudgeChecksJob`,
:class:`isqaflow.arena.judging.summaries.SummaryArenaJob`) adds what only that stage reads.
The values are the rules' params as they are (the config's defaults are filled in by the
schema and by ``arena_verdict_rule`` in ``rules/arena/inputs/arena.smk``); nothing is defaulted here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ArenaJudge"]


@dataclass(frozen=True)
class ArenaJudge:
    """The judge (name and model spec), its mode, decoding, order policy, verdict rule and seed."""

    name: str
    spec: Mapping[str, Any]
    mode: str
    orders: str
    seed: int
    generation: Mapping[str, Any] | None
    rule: str
    tie_band: float

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any) -> ArenaJudge:
        """From the rule's params (model, mode, orders, seed, generation, verdict_rule:
        {rule, tie_band}) and the wildcard ``judge``."""
        return cls(
            name=wildcards.judge,
            spec=params.model,
            mode=params.mode,
            orders=params.orders,
            seed=params.seed,
            generation=params.generation,
            rule=params.verdict_rule["rule"],
            tie_band=params.verdict_rule["tie_band"],
        )

    def judge_kwargs(self) -> dict[str, Any]:
        """The judge's settings as :func:`isqaflow.arena.judging.judge.judge_groups` takes them
        (the spec and the decoding as plain dicts, as the loaders expect)."""
        return {
            "judge_spec": dict(self.spec),
            "judge_name": self.name,
            "mode": self.mode,
            "orders": self.orders,
            "seed": self.seed,
            "generation": None if self.generation is None else dict(self.generation),
            "rule": self.rule,
            "tie_band": self.tie_band,
        }
