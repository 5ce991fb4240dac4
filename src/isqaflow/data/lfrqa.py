"""LFRQA annotations and their corpora (Han et al. 2024) -> RagQuery and Passage records.

Annotations (``annotations_{domain}_with_citation.jsonl``): the reference answer has
one claim per line; ``faithful_answer_w_citation`` carries the citations ``[1, 2]``
at the end of each line.  ``citation_numbers`` often disagrees with the text, so the
citations are read from the text.  Citation ``i`` refers to ``gold_doc_ids[i-1]``.

Corpora: LoTTE's ``collection.tsv`` (``pid<TAB>text``) for the LoTTE domains and
BEIR's ``corpus.jsonl`` (``{"_id", "title", "text"}``) for FiQA.  A document id that
occurs twice in a corpus, a document without text (it would give no passage), an empty
query id and a gold document listed twice by one query are errors naming the file and
line.
"""

from __future__ import annotations

import csv
import logging
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from isqaflow.data.raw import Raw, build, iter_json_records
from isqaflow.data.schema import RagQuery
from isqaflow.io import RecordError, read_jsonl, read_text_lines

log = logging.getLogger(__name__)

_CITATION = re.compile(r"\s*\[(\d+(?:\s*,\s*\d+)*)\]\s*$")


def parse_cited_lines(text: str) -> tuple[list[str], list[list[int]]]:
    """Split a cited answer into its lines without citations and the citations of each line."""
    lines, citations = [], []
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        match = _CITATION.search(line)
        cited = [int(n) for n in match.group(1).split(",")] if match else []
        lines.append(line[: match.start()].rstrip() if match else line)
        citations.append(cited)
    return lines, citations


def convert_lfrqa(paths: Iterable[str | Path], domain: str) -> list[RagQuery]:
    queries: dict[str, RagQuery] = {}
    dangling = 0
    for path in paths:
        for rid, obj, line in iter_json_records(path, "qid", shape="lines"):
            raw = Raw(path, rid, obj, line=line)
            qid = raw.id("qid", (int, str))
            gold = raw.get("gold_doc_ids", list)
            if not all(isinstance(d, (int, str)) for d in gold):
                raise raw.error("expected a list of document ids", "gold_doc_ids")
            repeated = sorted({str(d) for d in gold if [str(g) for g in gold].count(str(d)) > 1})
            if repeated:
                raise raw.error(f"gold document(s) {repeated} listed twice", "gold_doc_ids")
            cited_text = raw.get("faithful_answer_w_citation", str)
            _, cited = parse_cited_lines(cited_text)
            # A known quirk of the released files: a few citations point past the gold
            # documents. They are dropped and counted, the record is otherwise sound.
            citations = [[c for c in cs if 1 <= c <= len(gold)] for cs in cited]
            dangling += sum(len(a) - len(b) for a, b in zip(cited, citations, strict=True))
            reference_lines = [
                ln.strip() for ln in raw.get("answer", str).split("\n") if ln.strip()
            ]
            if not reference_lines:
                raise raw.error("empty reference answer", "answer")
            question = raw.get("question", str).strip()
            if not question:
                raise raw.error("empty question", "question")
            qid_str = str(qid)
            if qid_str in queries:
                raise raw.error("query id occurs twice", "qid")
            queries[qid_str] = build(
                raw,
                RagQuery,
                id=qid_str,
                domain=domain,
                question=question,
                reference="\n".join(reference_lines),
                reference_with_citation=cited_text.strip(),
                citations=citations,
                gold_doc_ids=[str(d) for d in gold],
            )
    if dangling:
        log.warning(
            "LFRQA %s: dropped %d citations that point past the gold documents", domain, dangling
        )
    return list(queries.values())


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
