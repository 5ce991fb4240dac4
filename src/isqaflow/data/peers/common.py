"""What every reader of a peer's file returns: the records as a table and what was left out."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import pandas as pd


@dataclass(frozen=True)
class PeerRead:
    """One peer file read in full.

    ``table``: one row per record the file's publisher counts (a battle, an answer, an
    annotation, a decomposed question, a pairwise judgment; each reader documents its
    columns).  ``skipped``: each reason a record (or a game) was left out of ``table``,
    with how many -- following what the publisher's own code does with it, said in the
    reason.  ``counts``: facts a caller reports (verdicts per level, failures kept in the
    table, ...).  Nothing is left out without a count here.
    """

    path: str
    table: pd.DataFrame
    skipped: Mapping[str, int] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Read-only views: a frozen result whose dicts could still be edited would not be.
        object.__setattr__(self, "skipped", MappingProxyType(dict(self.skipped)))
        object.__setattr__(self, "counts", MappingProxyType(dict(self.counts)))

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())

    def report(self) -> str:
        """One line for a log: the file, its rows, and every reason something was left out."""
        left_out = "; ".join(f"{reason}: {n}" for reason, n in sorted(self.skipped.items()))
        return f"{self.path}: {len(self.table)} rows" + (
            f"; left out -- {left_out}" if left_out else "; nothing left out"
        )


def counted(counter: Counter) -> dict[str, int]:
    """A Counter as a plain dict without zero entries, keys sorted (stable reports)."""
    return {key: int(n) for key, n in sorted(counter.items()) if n}


def is_missing_number(value: object) -> bool:
    """JSON null or a NaN (Python's json module reads the literal ``NaN``)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def as_path(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    return path
