"""LFRQA annotations and their corpora (Han et al. 2024) -> RagQuery and Passage records.

Annotations (``annotations_{domain}_with_citation.jsonl``): the annotators' answer has one
claim per line, with its citations ``[1, 2]`` in ``faithful_answer_w_citation``; citation
``i`` refers to ``gold_doc_ids[i-1]``.  ``citation_numbers`` often disagrees with the text,
so the citations are read from the text.

The reference is that text with its citations removed: the paper removes them "during the
answer evaluation" (section 3.1), and RAG-QA Arena's code judges against ``faithful_answer``
(``code/data_processors.py``), the answer without its citations.  The release's own ``answer``
field is not read: it is empty in 4 rows and, in 336 more, keeps citations that stand inside a
line, carries stray ``*`` and has lost bracketed text such as ``$R[x]$``
(docs/fidelity.md).  A citation is a bracketed list of numbers >= 1 anywhere in a line that
does not follow a word character (``S[0]`` is an index), or -- ending a line -- one opened by
``(`` or ``{`` (``(1, 2, 3]``); ``[0, 1]`` is an interval, never a citation.

What the publishers' files need and their code tolerates is repaired, each repair named (file,
line, record, field) in the conversion's log and in :attr:`LfrqaConversion.repairs`: a gold
document listed twice by one query is kept once (their code never reads the gold list; the
citations are renumbered onto the first listing), a citation past the gold documents is
dropped.  Errors naming the file and line: a query id occurring twice, an empty query id,
question or reference, and in a corpus a document id occurring twice or a document without
text (it would give no passage).
"""

from __future__ import annotations

import csv
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from isqaflow.data.raw import Raw, build, iter_json_records
from isqaflow.data.schema import RagQuery
from isqaflow.io import RecordError, read_jsonl, read_text_lines

log = logging.getLogger(__name__)

# Numbers separated by commas, spaces or ". " (``[1. 2]``, ``[16 18]`` occur), each with an
# optional stray "*" (``[*1]``), perhaps a trailing comma (``[13, 17,]``); "3.5" is not two.
_NUMBERS = r"\*?\d+\*?(?:(?:\s*,\s*|\.\s+|\s+)\*?\d+\*?)*\s*,?"
_GROUP = rf"\[\s*{_NUMBERS}\s*\]"
_CITATION = re.compile(
    # a run of groups (``[1][4]``) not after a word character or a closing bracket (``S[0]``,
    # ``a[1][2]`` index), or -- ending the line -- one opened by "(" or "{" or left unclosed
    rf"\s*(?<![\w\])}}])(?P<n>{_GROUP}(?:\s*{_GROUP})*)"
    rf"|\s*(?<!\w)(?P<m>[\[({{]\s*{_NUMBERS}\s*\]?)\s*$"
)


# What is left of a citation the pattern cannot take apart (``[1, 10"]``, a list broken by
# a second "["): reported, left in the text.
_LEFT_OVER = re.compile(r"(?<![\w\])}$])\[\s*[1-9]\d*\s*(?:,|\s\d|\*|\"|$)")


def parse_cited_lines(text: str) -> tuple[list[str], list[list[int]]]:
    """Split a cited answer into its lines without citations and the citations of each line
    (in the order they stand, each number once).  A line that is nothing but citations gives
    its citations to the line before it."""
    parsed = _cited_lines(text)
    return parsed.lines, parsed.citations


@dataclass
class _CitedLines:
    lines: list[str] = field(default_factory=list)
    citations: list[list[int]] = field(default_factory=list)
    only_citations: list[int] = field(default_factory=list)  # raw line numbers (1-based)
    left_over: list[int] = field(default_factory=list)  # reference line numbers (1-based)


def _cited_lines(text: str) -> _CitedLines:
    out = _CitedLines()
    for raw_no, line in enumerate(text.split("\n"), 1):
        cited: list[int] = []
        kept, end = [], 0
        for match in _CITATION.finditer(line):
            numbers = [int(n) for n in re.findall(r"\d+", match.group("n") or match.group("m"))]
            if 0 in numbers:  # an interval such as [0, 1], not a citation
                continue
            kept.append(line[end : match.start()])
            end = match.end()
            cited.extend(n for n in numbers if n not in cited)
        clean = ("".join(kept) + line[end:]).strip()
        if clean:
            out.lines.append(clean)
            out.citations.append(cited)
            if _LEFT_OVER.search(clean):
                out.left_over.append(len(out.lines))
        elif cited:
            out.only_citations.append(raw_no)
            if out.citations:
                out.citations[-1].extend(n for n in cited if n not in out.citations[-1])
    return out


@dataclass(frozen=True)
class Repair:
    """One change the conversion made to a raw record, named as a RecordError names a fault."""

    file: str
    line: int | None
    record: str
    field: str
    what: str

    def __str__(self) -> str:
        return f"{self.file}, line {self.line}, record {self.record!r}, field {self.field}: {self.what}"


@dataclass
class LfrqaConversion:
    queries: list[RagQuery]
    repairs: list[Repair] = field(default_factory=list)
    # rows whose release ``answer`` differs from the reference taken (their ids): not read,
    # reported so that the difference to a conversion from ``answer`` is visible
    answer_differs: list[str] = field(default_factory=list)


def read_lfrqa(paths: Iterable[str | Path], domain: str) -> LfrqaConversion:
    """The queries of LFRQA annotation files, with every repair made to them."""
    out = LfrqaConversion([])
    seen: set[str] = set()
    for path in paths:
        for rid, obj, line in iter_json_records(path, "qid", shape="lines"):
            raw = Raw(path, rid, obj, line=line)
            qid = raw.id("qid", (int, str))
            if qid in seen:
                raise raw.error("query id occurs twice", "qid")
            seen.add(qid)

            def repaired(field_name: str, what: str, _raw=raw, _qid=qid) -> None:
                out.repairs.append(Repair(_raw.file, _raw.line, _qid, field_name, what))

            gold = _gold_once(raw, repaired)
            cited_text = raw.get("faithful_answer_w_citation", str)
            parsed = _cited_lines(cited_text)
            lines, cited = parsed.lines, parsed.citations
            if parsed.only_citations:
                repaired(
                    "faithful_answer_w_citation",
                    f"line(s) {parsed.only_citations} hold nothing but citations: given to "
                    "the line before (dropped where no line stands before)",
                )
            for n in parsed.left_over:
                repaired(
                    "faithful_answer_w_citation",
                    f"reference line {n} keeps what looks like a malformed citation "
                    "(left in the text)",
                )
            citations = []
            for i, numbers in enumerate(cited):
                kept = [c for c in numbers if 1 <= c <= len(gold.listed)]
                if len(kept) < len(numbers):
                    past = [c for c in numbers if c not in kept]
                    repaired(
                        "faithful_answer_w_citation",
                        f"citation(s) {past} of reference line {i + 1} point past the "
                        f"{len(gold.listed)} gold document(s): dropped",
                    )
                renumbered = []
                for c in kept:
                    if gold.position[c] not in renumbered:
                        renumbered.append(gold.position[c])
                citations.append(renumbered)
            if not lines:
                raise raw.error("empty reference answer", "faithful_answer_w_citation")
            question = raw.get("question", str).strip()
            if not question:
                raise raw.error("empty question", "question")
            reference = "\n".join(lines)
            answer = raw.get("answer", str, None)
            if answer is not None and [a.strip() for a in answer.split("\n") if a.strip()] != lines:
                out.answer_differs.append(qid)
            out.queries.append(
                build(
                    raw,
                    RagQuery,
                    id=qid,
                    domain=domain,
                    question=question,
                    reference=reference,
                    reference_with_citation=cited_text.strip(),
                    citations=citations,
                    gold_doc_ids=gold.kept,
                )
            )
    return out


@dataclass(frozen=True)
class _Gold:
    listed: list[str]  # as the record lists them (the citations count in this list)
    kept: list[str]  # each document once, in the order of its first listing
    position: dict[int, int]  # citation number in ``listed`` -> its number in ``kept``


def _gold_once(raw: Raw, repaired) -> _Gold:
    gold = raw.get("gold_doc_ids", list)
    if not all(isinstance(d, (int, str)) and not isinstance(d, bool) for d in gold):
        raise raw.error("expected a list of document ids", "gold_doc_ids")
    listed = [str(d).strip() for d in gold]
    if not all(listed):
        raise raw.error("empty document id", "gold_doc_ids")
    kept = list(dict.fromkeys(listed))
    if len(kept) < len(listed):
        repeated = sorted({d for d in listed if listed.count(d) > 1})
        repaired(
            "gold_doc_ids",
            f"gold document(s) {repeated} listed twice: kept once, its citations renumbered "
            f"onto the first listing ({len(listed)} -> {len(kept)} documents)",
        )
    position = {i + 1: kept.index(d) + 1 for i, d in enumerate(listed)}
    return _Gold(listed, kept, position)


def convert_lfrqa(paths: Iterable[str | Path], domain: str) -> list[RagQuery]:
    """:func:`read_lfrqa`'s queries; each repair is logged (a warning naming the record) and
    so is the number of rows whose release ``answer`` differs from the reference taken."""
    conversion = read_lfrqa(paths, domain)
    for repair in conversion.repairs:
        log.warning("LFRQA %s: %s", domain, repair)
    if conversion.repairs:
        log.warning("LFRQA %s: %d repair(s), listed above", domain, len(conversion.repairs))
    if conversion.answer_differs:
        log.info(
            "LFRQA %s: in %d of %d rows the release's `answer` field differs from the reference "
            "taken (faithful_answer_w_citation without its citations), e.g. %s",
            domain,
            len(conversion.answer_differs),
            len(conversion.queries),
            conversion.answer_differs[:5],
        )
    return conversion.queries


def read_lotte_collection(path: str | Path) -> Iterator[tuple[int, str, str]]:
    """``(line, pid, text)`` of ``pid<TAB>text`` lines (LoTTE / ColBERT collection format)."""
    for line_no, line in read_text_lines(path):
        try:
            row = next(csv.reader([line], delimiter="\t", quoting=csv.QUOTE_NONE), [])
        except csv.Error as err:  # e.g. a passage over the csv module's field limit (128 KiB)
            raise RecordError(
                path, f"not a valid pid<TAB>text line: {err}", line=line_no, field="text"
            ) from None
        if not row:
            continue
        if len(row) < 2 or not row[0].strip():
            raise RecordError(path, "expected pid<TAB>text", line=line_no, field="pid")
        yield line_no, row[0].strip(), "\t".join(row[1:]).strip()


def read_beir_corpus(path: str | Path) -> Iterator[tuple[int, str, str]]:
    """``(line, _id, text)`` of BEIR's ``corpus.jsonl``: the title, when present, is
    prepended to the text."""
    for line, obj in read_jsonl(path):
        raw = Raw(path, obj.get("_id"), obj, line=line)
        doc_id = raw.id("_id", (str, int))
        title = raw.get("title", str, "").strip()
        text = raw.get("text", str).strip()
        yield line, doc_id, f"{title}. {text}" if title and text else text or title


CORPUS_READERS = {"lotte_tsv": read_lotte_collection, "beir_jsonl": read_beir_corpus}


def read_corpus(path: str | Path, fmt: str) -> Iterator[tuple[str, str]]:
    """``(doc_id, text)`` of every document of a corpus, each id once and each with text."""
    try:
        reader = CORPUS_READERS[fmt]
    except KeyError:
        raise ValueError(
            f"unknown corpus format {fmt!r}; expected one of {sorted(CORPUS_READERS)}"
        ) from None
    return _checked(path, reader(path))


def _checked(
    path: str | Path, documents: Iterator[tuple[int, str, str]]
) -> Iterator[tuple[str, str]]:
    first_line: dict[str, int] = {}
    for line, doc_id, text in documents:
        if not doc_id:
            raise RecordError(path, "empty document id", line=line, field="id")
        if doc_id in first_line:
            raise RecordError(
                path,
                f"document id occurs twice (first on line {first_line[doc_id]})",
                record=doc_id,
                field="id",
                line=line,
            )
        if not text.split():
            raise RecordError(
                path,
                "the document has no text: it would give no passage",
                record=doc_id,
                field="text",
                line=line,
            )
        first_line[doc_id] = line
        yield doc_id, text
