"""Model families: which judge judges a system of its own family (self-preference).

A judge that rates answers of its own model family favours them (FastChat's GPT-4 pairwise
judgments prefer GPT-4's own answers in 87% of the pairs where it judges itself, FastChat
#3911).  Every entry of ``models`` may carry ``family:`` (config/paper.yaml fills it in for the
papers' models: ``openai-gpt``, ``llama``, ``mistral``, ...); a file-based system may carry
one too.  A judge and a system are of one family when

* both name the same model key (a model judging its own outputs, family or not), or
* both have a ``family`` and the two are equal.

A judge or a system without a family is ``None`` here: unknown, never flagged (the table says
so).  :func:`judge_system_pairs` lists every (suite, judge, system) the run judges with both
families and the flag; :func:`self_judging_warnings` turns the flagged ones into one warning
per judge and suite (the config check prints them; a warning, not a failure: judging one's own
family is sometimes the point, e.g. a local judge of local models).

Ground floor: plain mappings, standard library and the suite descriptors (isqaflow.suites).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from isqaflow.suites import SUITES as REGISTERED
from isqaflow.suites import suite as registered_suite

__all__ = ["JudgedSystem", "judge_system_pairs", "self_judging_warnings"]

#: (suite, config section of its systems, config section of its judges): every registered
#: suite with judges (isqaflow.suites), in the registry's order
SUITES = tuple(
    (entry.name, entry.systems, entry.judges)
    for entry in REGISTERED
    if entry.systems is not None and entry.judges is not None
)


@dataclass(frozen=True)
class JudgedSystem:
    """One system under one judge: the models behind both, their families and the flag."""

    suite: str
    judge: str
    judge_model: str
    judge_family: str | None
    system: str
    system_model: str | None  # None: a file-based system
    system_family: str | None
    self_family: bool

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _section(config: Mapping[str, Any], keys: tuple[str, ...]) -> Mapping[str, Any]:
    node: Any = config
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def model_family(config: Mapping[str, Any], model: str | None) -> str | None:
    """The ``family`` of ``models.<model>`` (None when it has none or the key is unknown)."""
    if model is None:
        return None
    entry = _section(config, ("models",)).get(model)
    return entry.get("family") if isinstance(entry, Mapping) else None


def _systems(
    config: Mapping[str, Any], keys: tuple[str, ...]
) -> list[tuple[str, str | None, str | None]]:
    """(name, model key or None, family) of each system of a suite; ISQA's summarizers for the arena."""
    systems = []
    for name, entry in _section(config, keys).items():
        model = entry.get("model") if "file" not in entry else None
        family = entry.get("family") if model is None else model_family(config, model)
        systems.append((str(name), model, family))
    return systems


def _isqa_summarizers(config: Mapping[str, Any]) -> list[tuple[str, str | None, str | None]]:
    """The ISQA summarizers whose summaries both suites' judges see (when any system is judged)."""
    isqa = _section(config, ("isqa",))
    if isqa.get("judged_systems") == []:
        return []
    summarizers = [
        (f"summaries:{s}", s, model_family(config, s)) for s in isqa.get("summarizers") or []
    ]
    for name, entry in _section(config, ("isqa", "file_summaries")).items():
        if name in (isqa.get("judged_systems") or []):
            summarizers.append((f"summaries:{name}", None, entry.get("family")))
    return summarizers


def judge_system_pairs(config: Mapping[str, Any]) -> list[JudgedSystem]:
    """Every (suite, judge, system) of the run, with both families and the self-family flag.

    Systems: each suite's own (DRFR's responders, the arena's answerers, Arena-Hard's answerers)
    and ISQA's summarizers (as ``summaries:<name>``), whose final summaries the judges of a suite
    with ``judges_summaries`` see (DRFR's, the arena's).
    """
    pairs = []
    for suite, system_keys, judge_keys in SUITES:
        systems = _systems(config, system_keys)
        if registered_suite(suite).judges_summaries:
            systems += _isqa_summarizers(config)
        for judge, entry in _section(config, judge_keys).items():
            judge_model = entry.get("model")
            judge_family = model_family(config, judge_model)
            for system, system_model, system_family in systems:
                same = (system_model is not None and system_model == judge_model) or (
                    judge_family is not None and judge_family == system_family
                )
                pairs.append(
                    JudgedSystem(
                        suite,
                        str(judge),
                        judge_model,
                        judge_family,
                        system,
                        system_model,
                        system_family,
                        same,
                    )
                )
    return pairs


def self_judging_warnings(config: Mapping[str, Any]) -> list[str]:
    """One line per judge and suite that judges systems of its own family, naming them."""
    flagged: dict[tuple[str, str], list[JudgedSystem]] = {}
    for pair in judge_system_pairs(config):
        if pair.self_family:
            flagged.setdefault((pair.suite, pair.judge), []).append(pair)
    lines = []
    for (suite, judge), pairs in flagged.items():
        family = pairs[0].judge_family or f"model {pairs[0].judge_model}"
        names = ", ".join(p.system for p in pairs)
        lines.append(
            f"{suite}.judges.{judge} (family {family}) judges systems of its own family: {names}; "
            "self-preference is flagged in results/tables/judges_self_preference.*"
        )
    return lines
