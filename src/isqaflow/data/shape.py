"""What is wrong with an outputs file as a whole, said once, before its lines are listed.

A file of the wrong shape fails on every line for one reason: a CSV under JSON Lines
(``not valid JSON: Expecting value (column 1)`` x 28), AlpacaEval's JSON list under
``format: arena_hard`` (x 74), the predictions of a domain the run does not have (150 lines of
"closest: ..."), a real file of another benchmark (805 x "not in the dataset").  The reader of
outputs files (:func:`isqaflow.data.outputs.read_system_outputs`) asks these functions first and,
where one answers, reports that sentence and at most :data:`EXAMPLES` of the lines behind it.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

EXAMPLES = 3  # lines listed under a diagnosis
LIST_FORMATS = {"alpaca_eval": "AlpacaEval's", "ragqa_arena": "RAG-QA Arena's"}
LINE_FORMATS = ("jsonl", "arena_hard")
# RAG-QA Arena's prediction files: <domain>_from_<retriever>_<n>_psgs.json
_DOMAIN_FILE = re.compile(r"^([A-Za-z0-9]+)_from_")


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _list_kind(text: str) -> str | None:
    """The format a JSON list's first record looks like (None when it reads as neither)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    first = data[0] if isinstance(data, list) and data else None
    if isinstance(first, dict) and {"instruction", "output"} <= set(first):
        return "alpaca_eval"
    if isinstance(first, dict) and {"query", "pred"} <= set(first):
        return "ragqa_arena"
    return None


def wrong_shape(text: str, fmt: str) -> str | None:
    """Why a file read as ``fmt`` (given or detected) cannot be that format at all -- not JSON
    (CSV, TSV, other text), a JSON list read as JSON Lines or the reverse -- or None."""
    stripped = text.lstrip()
    if not stripped:
        return None
    first = _first_line(stripped)
    if stripped[0] not in "[{":
        shown = first[:80]
        for name, delimiter in (("CSV", ","), ("TSV", "\t")):
            rows = list(csv.reader(stripped.splitlines()[:5], delimiter=delimiter))
            widths = {len(row) for row in rows if row}
            if len(widths) == 1 and widths.pop() > 1:
                return (
                    f"looks like {name} (first line {shown!r}), not JSON: write one JSON object "
                    'per line ({"id": ..., "answer": ...}) or set format: to the file\'s own'
                )
        return f"not JSON (first line {shown!r}): one JSON object per line, or a JSON list"
    if stripped[0] == "[" and fmt in LINE_FORMATS:
        kind = _list_kind(stripped)
        hint = (
            f"; it reads as {LIST_FORMATS[kind]} file: set format: {kind} (or auto)" if kind else ""
        )
        return f"a JSON list, not JSON Lines (format: {fmt} reads one JSON object per line){hint}"
    if stripped[0] == "{" and fmt in LIST_FORMATS:
        return (
            f"JSON Lines (one object per line), not a JSON list (format: {fmt} reads "
            f"{LIST_FORMATS[fmt]} JSON list): set format: jsonl, arena_hard or auto"
        )
    return None


def domain_named_by(path: str | Path) -> str | None:
    """The domain a RAG-QA Arena prediction file's name gives, configured or not."""
    match = _DOMAIN_FILE.match(Path(path).name)
    return match.group(1) if match else None


def foreign_domains(counts: Mapping[str, int], domains: Sequence[str]) -> list[str]:
    """One sentence per domain the records name that the run has not (``counts``: domain ->
    records)."""
    return [
        f"{n} record(s) of domain {d!r}, which is not in arena.domains ({', '.join(domains)}): "
        "add it there (and to datasets.rag.domains), or leave its answers out"
        for d, n in sorted(counts.items())
        if d not in domains
    ]


def none_match(n_records: int, noun: str = "records") -> str:
    return f"0 of {n_records} {noun} match this dataset (is it another benchmark's?)"
