"""Entry points of the conversion jobs: raw files in, normalized JSON Lines out.

Conversion is the first stage of the DAG, so every malformed record stops the
workflow here -- naming the file, the record and the field -- before any model
stage starts.  So does input that would convert into empty or meaningless data: an
empty file, a dataset, domain or corpus without records, a paper without questions.
Outputs are written atomically: a failed conversion leaves nothing that looks finished.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from isqaflow.data.passages import passages_from_documents
from isqaflow.data.hotpotqa import convert_hotpotqa
from isqaflow.data.infobench import convert_infobench
from isqaflow.data.lfrqa import convert_lfrqa, read_corpus
from isqaflow.data.qasper import convert_qasper
from isqaflow.data.scimrc import convert_scimrc
from isqaflow.io import RecordError, write_jsonl

log = logging.getLogger(__name__)

PAPER_FORMATS = {"qasper": convert_qasper, "scimrc": convert_scimrc}


def write_papers(
    paths: Sequence[str | Path],
    fmt: str,
    dataset: str,
    out: str | Path,
    max_papers: int | None = None,
) -> int:
    try:
        convert = PAPER_FORMATS[fmt]
    except KeyError:
        raise ValueError(
            f"unknown paper format {fmt!r}; expected one of {sorted(PAPER_FORMATS)}"
        ) from None
    papers = convert(paths, dataset)
    papers.sort(key=lambda p: p.id)
    if max_papers is not None:
        papers = papers[:max_papers]
    n_qas = sum(len(p.qas) for p in papers)
    n_answerable = sum(1 for p in papers for q in p.qas if not q.unanswerable)
    log.info(
        "%s: %d papers, %d QA pairs (%d answerable)", dataset, len(papers), n_qas, n_answerable
    )
    return write_jsonl(out, papers)


def write_qa_examples(
    paths: Sequence[str | Path],
    out: str | Path,
    lenient: bool = False,
    held_out_from: Sequence[str | Path] = (),
) -> int:
    """HotpotQA files -> QA examples; ``lenient`` skips (with a warning) supporting facts that
    point past their paragraph instead of failing on them; ``held_out_from``: converted
    training files whose examples must not occur here (the dev split)."""
    examples = convert_hotpotqa(paths, lenient=lenient, held_out_from=held_out_from)
    log.info("%d QA examples (%s)", len(examples), dict(Counter(e.type for e in examples)))
    return write_jsonl(out, examples)


def write_instructions(paths: Sequence[str | Path], out: str | Path) -> int:
    instructions = convert_infobench(paths)
    subsets = Counter(i.subset for i in instructions)
    questions = Counter(i.subset for i in instructions for _ in i.requirements)
    log.info(
        "%d instructions %s, %d questions %s",
        len(instructions),
        dict(subsets),
        sum(questions.values()),
        dict(questions),
    )
    return write_jsonl(out, instructions)


def write_rag(
    domain: str,
    annotation_paths: Sequence[str | Path],
    corpus_path: str | Path | None,
    corpus_format: str | None,
    passage_words: int,
    queries_out: str | Path,
    passages_out: str | Path,
) -> tuple[int, int]:
    """A domain's queries and passages; without a corpus (every answerer of the run brings its
    answers, docs/own-systems.md) the passages file is written empty."""
    queries = convert_lfrqa(annotation_paths, domain)
    if corpus_path is None:
        write_jsonl(passages_out, [])
        write_jsonl(queries_out, queries)
        log.info("%s: %d queries, no corpus (no retrieval)", domain, len(queries))
        return len(queries), 0
    documents = list(read_corpus(corpus_path, corpus_format))
    if not documents:
        raise RecordError(corpus_path, f"the corpus of domain {domain!r} holds no documents")
    doc_ids = {doc_id for doc_id, _ in documents}
    missing = sorted({d for q in queries for d in q.gold_doc_ids if d not in doc_ids})
    if missing:
        log.warning(
            "%s: %d gold documents are not in the corpus %s (e.g. %s)",
            domain,
            len(missing),
            corpus_path,
            missing[:5],
        )
    n_passages = write_jsonl(
        passages_out, passages_from_documents(documents, domain, passage_words)
    )
    write_jsonl(queries_out, queries)
    log.info(
        "%s: %d queries, %d documents -> %d passages of <= %d words",
        domain,
        len(queries),
        len(documents),
        n_passages,
        passage_words,
    )
    return len(queries), n_passages
