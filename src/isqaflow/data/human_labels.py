"""Human pairwise preferences (RAG-QA Arena's format), read and checked at conversion.

One row per (pair, annotator): ``pair_id, domain, qid, query, system_1, answer_1, system_2,
answer_2, annotator, rating`` with a 5-point rating of answer 1 relative to answer 2.  The
file is first read by rule ``check_human_labels`` (a data-stage job, right after the RAG
queries are converted), which the jobs that read the labels wait for: a malformed file stops
them before they start, not inside the judge's job after the expensive stages.  Checked
(:func:`read_human_labels`, :func:`check_against_queries`), each problem a
:class:`~isqaflow.io.RecordError` naming the file, the line, the pair and the field:

* the file as every CSV input (:func:`isqaflow.io.read_csv`), its columns, the ratings;
* within the file: a pair rated twice by one annotator, a pair whose rows disagree on what
  was compared, the same comparison under two pair ids, one query id with two query texts;
* against the converted queries: the domain is one of ``datasets.rag.domains``, the query id
  is one of its queries, and the query text is that query's (an id paired with another record's text).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from isqaflow.data.schema import RagQuery
from isqaflow.io import RecordError, read_csv, read_records, write_json
from isqaflow.text.matching import match_key

MERGED_RATINGS = {
    "better": 1,
    "slightly better": 1,
    "tie": 0,
    "slightly worse": -1,
    "worse": -1,
}
HUMAN_COLUMNS = (
    "pair_id",
    "domain",
    "qid",
    "query",
    "system_1",
    "answer_1",
    "system_2",
    "answer_2",
    "annotator",
    "rating",
)
# What a pair compares: the same in each of its rows (one per annotator).
PAIR_COLUMNS = ("domain", "qid", "query", "system_1", "answer_1", "system_2", "answer_2")


def merge_rating(label: str) -> int:
    """Merge a 5-point human label (case-insensitive) into +1 / 0 / -1."""
    key = label.strip().lower() if isinstance(label, str) else None
    if key not in MERGED_RATINGS:
        raise ValueError(f"unknown human rating {label!r}; expected one of {list(MERGED_RATINGS)}")
    return MERGED_RATINGS[key]


def _rows(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, str]]]:
    """The file's rows ``(line, row)``, each checked against the rows before it."""
    _, rows = read_csv(path, HUMAN_COLUMNS)
    first: dict[str, tuple[int, dict[str, str]]] = {}  # pair id -> its first row
    rated: dict[tuple[str, str], int] = {}
    compared: dict[tuple[str, ...], tuple[str, int]] = {}  # what a pair compares -> (pair id, line)
    queries: dict[tuple[str, str], tuple[str, int]] = {}  # (domain, qid) -> (query text, line)
    for line, row in rows:
        pair = row["pair_id"].strip()
        if not pair:
            raise RecordError(path, "empty pair id", field="pair_id", line=line)
        try:
            merge_rating(row["rating"])
        except ValueError as err:
            raise RecordError(path, str(err), record=pair, field="rating", line=line) from err
        key = (pair, row["annotator"].strip())
        if key in rated:
            raise RecordError(
                path,
                f"annotator {key[1]!r} rated the pair twice (first on line {rated[key]})",
                record=pair,
                field="annotator",
                line=line,
            )
        rated[key] = line
        if pair in first:
            first_line, earlier = first[pair]
            for column in PAIR_COLUMNS:
                if row[column] != earlier[column]:
                    raise RecordError(
                        path,
                        f"the pair's rows disagree on {column} (first on line {first_line})",
                        record=pair,
                        field=column,
                        line=line,
                    )
        else:
            first[pair] = (line, row)
            comparison = _comparison(row)
            if comparison in compared:
                other, other_line = compared[comparison]
                raise RecordError(
                    path,
                    f"the same comparison as pair {other!r} (line {other_line}: the same "
                    "domain, qid, systems and answers) under another pair id: its "
                    "ratings would count twice",
                    record=pair,
                    field="pair_id",
                    line=line,
                )
            compared[comparison] = (pair, line)
            where = (row["domain"].strip(), row["qid"].strip())
            text = normalize_text(row["query"])
            if where in queries and queries[where][0] != text:
                raise RecordError(
                    path,
                    f"query id {where[1]!r} has another query text on line "
                    f"{queries[where][1]}: one query, one text",
                    record=pair,
                    field="query",
                    line=line,
                )
            queries.setdefault(where, (text, line))
        yield line, row


#: An empty file is refused like every empty input (isqaflow.data.raw): 0 pairs would pass the
#: check and leave an agreement table without a row.
EMPTY_LABELS = (
    "the file holds no rows after its header: no human label to compare the judges with "
    "(leave datasets.rag.human_labels out for a run without human labels)"
)


def read_human_labels(path: str | os.PathLike) -> pd.DataFrame:
    """Human pairwise preferences, one row per (pair, annotator), checked within the file
    (see the module docstring); a :class:`~isqaflow.io.RecordError` names the file, the line
    (the header is line 1; a quoted cell may span lines), the pair and the field."""
    records = [row for _, row in _rows(path)]
    if not records:
        raise RecordError(path, EMPTY_LABELS, line=2)
    columns = list(dict.fromkeys([*HUMAN_COLUMNS, *(records[0] if records else [])]))
    return pd.DataFrame(records, columns=columns, dtype=str)


def normalize_text(text: str) -> str:
    """How a query text is compared with the dataset's: NFC, spaces collapsed
    (:func:`isqaflow.text.matching.match_key`)."""
    return match_key(text)


def _comparison(row: dict[str, str]) -> tuple[str, ...]:
    """What a row compares, spaces collapsed (the same answers shown in the other order are
    another presentation, a position-bias design: not refused)."""
    return tuple(
        match_key(row[column])
        for column in ("domain", "qid", "system_1", "answer_1", "system_2", "answer_2")
    )


def check_against_queries(path: str | os.PathLike, queries: Iterable[RagQuery]) -> dict[str, Any]:
    """Check the file (:func:`read_human_labels`'s checks) and each pair against the converted
    RAG queries: its domain is converted, its query id is a query of that domain, and its query
    text is that query's.  Returns the counts (pairs, rows, annotators, domains)."""
    by_key: dict[tuple[str, str], RagQuery] = {}
    by_text: dict[tuple[str, str], list[str]] = {}
    for query in queries:
        by_key[(query.domain, query.id)] = query
        by_text.setdefault((query.domain, normalize_text(query.question)), []).append(query.id)
    domains = sorted({domain for domain, _ in by_key})
    pairs: set[str] = set()
    annotators: set[str] = set()
    n = 0
    for line, row in _rows(path):
        n += 1
        pair, domain, qid = row["pair_id"].strip(), row["domain"].strip(), row["qid"].strip()
        annotators.add(row["annotator"].strip())
        if pair in pairs:
            continue  # its rows agree with its first (checked by _rows)
        pairs.add(pair)
        if domain not in domains:
            raise RecordError(
                path,
                f"domain {domain!r} is not one of the RAG domains {domains} (datasets.rag.domains)",
                record=pair,
                field="domain",
                line=line,
            )
        query = by_key.get((domain, qid))
        text = normalize_text(row["query"])
        if query is None:
            other = by_text.get((domain, text))
            hint = f" (its query text is that of query {other[0]!r})" if other else ""
            raise RecordError(
                path,
                f"query id {qid!r} is not a query of domain {domain!r}{hint}",
                record=pair,
                field="qid",
                line=line,
            )
        if text != normalize_text(query.question):
            other = [q for q in by_text.get((domain, text), []) if q != qid]
            what = f"the text of query {other[0]!r}" if other else "not the text of this query"
            raise RecordError(
                path,
                f"query id {qid!r} is paired with {what}: the id and the text disagree "
                f"(the dataset's: {query.question[:80]!r})",
                record=pair,
                field="query",
                line=line,
            )
    if n == 0:
        raise RecordError(path, EMPTY_LABELS, line=2)
    return {
        "file": str(path),
        "pairs": len(pairs),
        "rows": n,
        "annotators": len(annotators),
        "domains": sorted({d for d, _ in by_key}),
    }


def check_human_labels(
    labels_path: str | os.PathLike,
    queries_paths: Sequence[str | os.PathLike],
    out_path: str | os.PathLike,
) -> dict[str, Any]:
    """Entry point of rule check_human_labels: check the file against the converted queries and
    write the counts (what every judge and scorer waits for)."""
    queries = [q for path in queries_paths for q in read_records(Path(path), RagQuery)]
    record = check_against_queries(labels_path, queries)
    write_json(out_path, record)
    return record
