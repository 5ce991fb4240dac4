"""What a suite descriptor holds (:class:`Suite`) and its model rules (:class:`ModelRule`).

Plain data, standard library only: the grid, the rule files and the config check read it at
DAG-build time (``rules/*.smk``), so it must be cheap to import and import nothing of the
project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: a column builder's reference: "<module>:<function>" (resolved by the report floor)
BUILDER_REFERENCE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


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

    def __post_init__(self) -> None:
        if (self.systems is None) != (self.judges is None):
            raise ValueError(f"suite {self.name!r}: give both systems and judges, or neither")
        if self.block not in ("judge", "setting"):
            raise ValueError(f"suite {self.name!r}: block {self.block!r} is not judge or setting")
        if self.board_builders and self.board_place is None:
            raise ValueError(f"suite {self.name!r}: give board_place with board_builders")
        for reference in self.board_builders:
            if not BUILDER_REFERENCE.fullmatch(reference):
                raise ValueError(
                    f"suite {self.name!r}: board_builders names {reference!r}, "
                    "not a reference '<module>:<function>'"
                )

    @property
    def table_names(self) -> tuple[str, ...]:
        """Its tables' names as files have them: ``<name>_<table>``."""
        return tuple(f"{self.name}_{table}" for table in self.tables)

    @property
    def table_files(self) -> list[str]:
        """Its tables' CSV files (the targets; each has a Markdown file beside it)."""
        return [f"results/tables/{table}.csv" for table in self.table_names]
