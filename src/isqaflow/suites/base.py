"""What a suite descriptor holds (:class:`Suite`) and its model rules (:class:`ModelRule`).

Plain data, standard library only: the grid, the rule files and the config check read it at
DAG-build time (``rules/*.smk``), so it must be cheap to import and import nothing of the
project.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any

#: a descriptor's reference to code above this floor: "<module>:<name>" (:func:`resolve`)
REFERENCE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
#: the descriptor fields that hold references (a string or a tuple of them)
REFERENCE_FIELDS = ("board_builders", "jobs", "config_check", "spend_planners")


def resolve(suite: str, field: str, reference: str, within: str = "isqaflow.") -> Any:
    """What a descriptor's ``reference`` (``"<module>:<name>"``, in its ``field``) names,
    imported.  The floors that read a descriptor import the code it names this way, since this
    floor imports nothing of the project: the grid its job lister, the config check its
    checker, the spend plan its call formulas, the report its column builders.  A reference
    that does not resolve -- a misspelt module or name, a module outside ``within`` -- is an
    ImportError naming the suite, the field and the reference: never skipped, which would drop
    the suite's jobs, checks or columns without a word."""
    module, _, name = reference.partition(":")
    try:
        if not module.startswith(within):
            raise ImportError(f"{module} is not a module of {within.rstrip('.')}")
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as error:
        raise ImportError(
            f"isqaflow.suites.{suite}: {field} names {reference!r}, which does not resolve ({error})"
        ) from error


def resolve_function(suite: str, field: str, reference: str, within: str = "isqaflow.") -> Any:
    """:func:`resolve` for a field that names a function (a job lister, a checker, a column
    builder): a name that is no function is an ImportError of the same words."""
    found = resolve(suite, field, reference, within)
    if not callable(found):
        module, _, name = reference.partition(":")
        raise ImportError(
            f"isqaflow.suites.{suite}: {field} names {reference!r}, which does not resolve "
            f"({name} of {module} is not a function)"
        )
    return found


@dataclass(frozen=True)
class ModelRule:
    """A rule whose job holds a model: its name, its first output (a pattern over the rule's
    wildcards) and its job's label (the wildcard part of its log path)."""

    name: str
    output: str
    label: str


@dataclass(frozen=True)
class Suite:
    """One benchmark of the workflow, everything the shared code needs to know of it.

    ``name`` is also its config section and the prefix of its tables
    (``results/tables/<name>_<table>.csv``).  ``target_functions`` and ``validity_functions``
    name input functions of the rule files (``rules/*.smk``) that list its targets and its
    known-answer control files; ``rules/targets.smk`` and ``rules/inputs/validity.smk`` look
    them up, and a name that is not defined there is an error.  ``systems`` and ``judges`` are
    the config sections of the systems its judges rate and of its judges (None: the suite has
    no judges, as ISQA, whose metrics are not models with a family); ``judges_summaries``:
    whether its judges also judge ISQA's summaries (DRFR's and the arena's do, Arena-Hard's
    not), so the judge-family audit pairs them with the summarizers.  ``title``: its name as the
    leaderboard's section heads it (the benchmark; records of another benchmark read into the
    suite's tables, as the peers' released judgments, carry their own).  ``instruments``: the
    judges and metrics whose known-answer controls it writes, as its control records name them
    in ``instrument`` (the validity table lists them in registry order, then in this one).
    ``board_tables``: its tables the leaderboard reads (names under ``results/tables/``, no
    extension; rule leaderboard's named inputs, :mod:`isqaflow.report.leaderboard`), and
    ``ranked``: its leaderboard columns that carry a rank (column-name prefixes; the rows sort
    by them in registry order).  ``board_builders``: the functions that put its leaderboard
    columns, each named by a reference ``"<module>:<function>"`` into the report floor (this floor
    imports nothing above it; :func:`isqaflow.report.leaderboard.column_builders` imports them,
    and one that does not resolve is an error naming the suite), called in this order with one
    signature, ``(board, tables, settings)`` (:mod:`isqaflow.report.leaderboard_columns`); a
    builder belongs to the suite whose columns it puts, whichever suites' tables it reads.
    ``board_place``: where its columns stand on the board among the suites' (the builders run
    suite by suite in ascending place; required with builders, one suite per place) -- not the
    registry order, which lists ISQA first for its jobs and targets while its columns, built
    on the other suites' judges, follow theirs.  ``browser``: its judgment browser page (none:
    the suite has none), a target when the suite is in the run and the page its leaderboard
    cells link to.
    ``block``: the column of its tables that names whose verdicts a block of rows is --
    ``"judge"`` (the judge's name), or ``"setting"`` (the arena's ``<run>.<judge>``) -- and so
    what the peers' released judgments are called there (:func:`isqaflow.data.peers.records.
    table_key`: a setting ``peers.<entry>``, else the entry's judge) and the key of their
    leaderboard cells' origin.
    ``jobs``: its job lister, ``"<module>:<function>"`` -- ``(config) -> [isqaflow.grid.Job]``,
    each job of one of its ``rules`` (:func:`isqaflow.grid.suite_jobs`; required with model
    rules).  ``config_check``: the checker of its config section, ``(refs) -> None``
    (:func:`isqaflow.configcheck.sections.check_suites`; required: a suite's names never go
    unchecked).  ``spend_planners``: mappings ``rule -> call formula`` of the spend plan
    (:mod:`isqaflow.spend`), of which it takes its own rules' (without one its API jobs are
    listed as not planned).  Each lives where its code may import what it needs -- the grid,
    the config check, the spend plan's stages -- and a new suite's in a module of its own.
    """

    name: str
    rules: tuple[ModelRule, ...]
    tables: tuple[str, ...]
    target_functions: tuple[str, ...]
    validity_functions: tuple[str, ...]
    systems: tuple[str, ...] | None = None
    judges: tuple[str, ...] | None = None
    title: str = ""
    judges_summaries: bool = True
    instruments: tuple[str, ...] = ()
    board_tables: tuple[str, ...] = ()
    ranked: tuple[str, ...] = ()
    board_builders: tuple[str, ...] = ()
    board_place: int | None = None
    browser: str = ""
    block: str = "judge"
    jobs: str = ""
    config_check: str = ""
    spend_planners: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.systems is None) != (self.judges is None):
            raise ValueError(f"suite {self.name!r}: give both systems and judges, or neither")
        if self.block not in ("judge", "setting"):
            raise ValueError(f"suite {self.name!r}: block {self.block!r} is not judge or setting")
        if self.board_builders and self.board_place is None:
            raise ValueError(f"suite {self.name!r}: give board_place with board_builders")
        for field in REFERENCE_FIELDS:
            for reference in self.named(field):
                if not REFERENCE.fullmatch(reference):
                    raise ValueError(
                        f"suite {self.name!r}: {field} names {reference!r}, "
                        "not a reference '<module>:<name>'"
                    )

    def named(self, field: str) -> tuple[str, ...]:
        """The references one of :data:`REFERENCE_FIELDS` holds (none where it is empty)."""
        value = getattr(self, field)
        return ((value,) if value else ()) if isinstance(value, str) else tuple(value)

    @property
    def table_names(self) -> tuple[str, ...]:
        """Its tables' names as files have them: ``<name>_<table>``."""
        return tuple(f"{self.name}_{table}" for table in self.tables)

    @property
    def table_files(self) -> list[str]:
        """Its tables' CSV files (the targets; each has a Markdown file beside it)."""
        return [f"results/tables/{table}.csv" for table in self.table_names]
