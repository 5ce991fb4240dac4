"""The suites (benchmarks) of the workflow, each declared once in its own module.

A descriptor (:class:`~isqaflow.suites.base.Suite`) holds what the shared code -- the grid
of model jobs (:mod:`isqaflow.grid`), the run's targets (``rules/targets.smk``), the validity
table's control files (``rules/inputs/validity.smk``), the readable tables
(``rules/inputs/report.smk``), the config check's sections (:mod:`isqaflow.configcheck.sections`),
the judge-family audit (:mod:`isqaflow.configcheck.families`) and the leaderboard's tables,
ranks and column builders (:mod:`isqaflow.report.leaderboard`) -- needs to know of a
suite, so these loop over :data:`SUITES` instead of naming the suites.  Adding a suite: a
module here with its ``SUITE``, and a line in :data:`SUITES` (docs/development.md, "How to
add a suite").

The lowest floor of the import contract: standard library only, nothing of the project.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from isqaflow.suites import arena, arena_hard, drfr, isqa
from isqaflow.suites.base import ModelRule, Suite

__all__ = [
    "BOARD_BUILDERS",
    "BOARD_TABLES",
    "INSTRUMENTS",
    "RANKED",
    "SUITES",
    "ModelRule",
    "Suite",
    "builder_order",
    "collect",
    "model_rules",
    "suite",
    "suite_of_rule",
]

#: The registered suites, in the order the grid lists their jobs and the run its targets.
SUITES: tuple[Suite, ...] = (isqa.SUITE, drfr.SUITE, arena.SUITE, arena_hard.SUITE)


def _check_unique(suites: tuple[Suite, ...]) -> None:
    """Two suites of one name, or one model rule or instrument in two suites, would make one
    silently shadow the other in the lookups below."""
    seen: dict[str, str] = {}
    for entry in suites:
        names = (
            f"suite {entry.name}",
            *(f"rule {r.name}" for r in entry.rules),
            *(f"instrument {i}" for i in entry.instruments),
            *(f"leaderboard table {t}" for t in entry.board_tables),
            *(f"ranked column {c}" for c in entry.ranked),
            *(f"column builder {b}" for b in entry.board_builders),
            *([f"board place {entry.board_place}"] if entry.board_builders else []),
        )
        for name in names:
            if name in seen:
                raise ValueError(f"isqaflow.suites: {name} is declared twice ({seen[name]})")
            seen[name] = f"in suite {entry.name}"


_check_unique(SUITES)

#: Every suite's judges and metrics with known-answer controls, in registry order: the
#: instruments the validity table (:mod:`isqaflow.report.validity`) accepts and orders by.
INSTRUMENTS: tuple[str, ...] = tuple(i for entry in SUITES for i in entry.instruments)


#: Every suite's tables the leaderboard reads (rule leaderboard's named inputs), in registry order.
BOARD_TABLES: tuple[str, ...] = tuple(t for entry in SUITES for t in entry.board_tables)


def builder_order(suites: Sequence[Suite] = SUITES) -> tuple[tuple[str, str], ...]:
    """The leaderboard's column builders of ``suites``, ``(suite, "<module>:<function>")`` in the
    order they put their columns: suite by suite in ascending ``board_place`` (the suites'
    descriptors say where their columns stand: not the registry order), each suite's builders
    in its own order."""
    placed = sorted((s for s in suites if s.board_builders), key=lambda s: s.board_place or 0)
    return tuple((entry.name, reference) for entry in placed for reference in entry.board_builders)


#: Every suite's column builders in board order (:func:`builder_order`;
#: :func:`isqaflow.report.leaderboard.column_builders` imports them).
BOARD_BUILDERS: tuple[tuple[str, str], ...] = builder_order()

#: The leaderboard's ranked columns (prefixes), in the order the rows sort by them.
RANKED: tuple[str, ...] = tuple(c for entry in SUITES for c in entry.ranked)


def suite(name: str) -> Suite:
    """The registered suite called ``name``; a KeyError naming the registered ones if none."""
    for entry in SUITES:
        if entry.name == name:
            return entry
    raise KeyError(
        f"no suite {name!r} is registered in isqaflow.suites "
        f"(registered: {', '.join(s.name for s in SUITES)})"
    )


def suite_of_rule(rule: str) -> Suite:
    """The registered suite one of whose model rules is ``rule``; a KeyError naming it if none."""
    for entry in SUITES:
        if any(r.name == rule for r in entry.rules):
            return entry
    raise KeyError(f"no registered suite has a model rule {rule!r} (isqaflow.suites)")


def model_rules() -> dict[str, ModelRule]:
    """rule -> its :class:`ModelRule`, over every suite, in registry order."""
    return {rule.name: rule for entry in SUITES for rule in entry.rules}


def collect(
    field: str, namespace: Mapping[str, Any], suites: Sequence[Suite] = SUITES
) -> list[Any]:
    """The concatenated results of the input functions each of ``suites`` (default: every
    registered one) names in ``field`` (``target_functions``, ``validity_functions``), suite by
    suite, looked up in ``namespace`` (the rule files' ``globals()``).  A name with no function there -- misspelt,
    or its rule file not included -- is a NameError naming the suite, field and name: never
    skipped, which would drop the suite's files from the run without a word."""
    out: list[Any] = []
    for entry in suites:
        for name in getattr(entry, field):
            function: Callable[[], list[Any]] | None = namespace.get(name)
            if not callable(function):
                raise NameError(
                    f"isqaflow.suites.{entry.name}: {field} names {name!r}, "
                    "which is not a function of the rule files (rules/*.smk)"
                )
            out += function()
    return out
