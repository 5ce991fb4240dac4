"""QASPER v0.3 (Dasigi et al. 2021) -> :class:`~isqaflow.data.schema.Paper`.

Answers follow the official evaluator: unanswerable -> ``Unanswerable``; extractive
spans -> ``", ".join(spans)``; else the free-form answer; else ``Yes``/``No``.
Evidence strings starting with ``FLOAT SELECTED`` point at figures or tables, which
are not part of the text a model reads, and are dropped.  A paper without questions is
an error (ISQA asks each paper its own questions), and so is one that converts into
nothing to work on: no abstract (the reference of ROUGE and of the arena's summary
battles) or no body text (what is summarized), or an answer span that is blank.  The
same question (id and text) twice in a paper is an error: it would count twice in every
mean over questions.  Different questions that share an id (the format's own sample
file does this) are kept, with a warning naming the paper and the id.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from isqaflow.data.raw import Raw, build, iter_json_records
from isqaflow.data.schema import UNANSWERABLE, Answer, Paper, QAPair, Section

FLOAT_SELECTED = "FLOAT SELECTED"
# ISQA asks each paper its own human questions (runs with human questions, the
# feedback-model control): a paper without any would get no feedback at all.
log = logging.getLogger(__name__)

NO_QUESTIONS = "the paper has no questions; ISQA needs each paper's human QA pairs"
NO_ABSTRACT = "empty abstract: it is the reference of ROUGE and of the arena's summary battles"
NO_BODY = "the paper has no body text (no non-empty paragraph in {key}): nothing to summarize"


def check_questions(raw: Raw, qas: list[QAPair], raw_paths: list[str], id_key: str) -> None:
    """No question twice in a paper; a warning for different questions that share an id."""
    first: dict[tuple[str, str], int] = {}
    ids: dict[str, int] = {}
    for i, (qa, path) in enumerate(zip(qas, raw_paths, strict=True)):
        key = (qa.id, qa.question)
        if key in first:
            raise raw.error(
                f"question {qa.id!r} ({qa.question!r}) occurs twice in the paper "
                f"(first: qas[{first[key]}])",
                f"{path}.{id_key}",
            )
        first[key] = i
        ids[qa.id] = ids.get(qa.id, 0) + 1
    shared = {qid: n for qid, n in ids.items() if n > 1}
    if shared:
        log.warning(
            "%s, record %r: different questions share an id (kept): %s",
            raw.file,
            raw.record,
            shared,
        )


def check_paper(raw: Raw, paper: Paper, body_key: str = "full_text") -> Paper:
    """A converted paper that leaves something to work on: an abstract and a body."""
    if not paper.abstract:
        raise raw.error(NO_ABSTRACT, "abstract")
    if not paper.body().strip():
        raise raw.error(NO_BODY.format(key=body_key), body_key)
    return paper


def text_evidence(evidence: Iterable[str]) -> list[str]:
    return [e for e in evidence if e.strip() and not e.startswith(FLOAT_SELECTED)]


def convert_answer(raw: Raw) -> Answer:
    unanswerable = raw.get("unanswerable", bool, False)
    spans = [s.strip() for s in raw.strings("extractive_spans", []) if s.strip()]
    free_form = raw.get("free_form_answer", str, "")
    yes_no = raw.get("yes_no", bool, None)
    evidence = text_evidence(raw.strings("evidence", []))
    if unanswerable:
        return Answer(text=UNANSWERABLE, type="none", evidence=[])
    if spans:
        return Answer(text=", ".join(spans), type="extractive", evidence=evidence)
    if free_form.strip():
        return Answer(text=free_form.strip(), type="abstractive", evidence=evidence)
    if yes_no is not None:
        return Answer(text="Yes" if yes_no else "No", type="boolean", evidence=evidence)
    raise raw.error(
        "annotation has no answer (not unanswerable, no spans, no free form, no yes/no)", raw.path
    )


def convert_sections(raw: Raw, key: str = "full_text") -> list[Section]:
    sections = []
    for sec in raw.children(key, []):
        paragraphs_key = (
            "paragraphs" if "paragraphs" in sec.obj else "paragraph"
        )  # SciMRC's README spelling
        sections.append(
            Section(
                name=sec.get("section_name", str, "") or "",
                paragraphs=sec.strings(paragraphs_key, []),
            )
        )
    return sections


def convert_qasper(paths: Iterable[str | Path], dataset: str = "qasper") -> list[Paper]:
    papers: dict[str, Paper] = {}
    for path in paths:
        for paper_id, obj, line in iter_json_records(path, "id", shape="keyed"):
            raw = Raw(path, paper_id, obj, line=line)
            qas = []
            if not raw.get("qas", list, []):
                raise raw.error(NO_QUESTIONS, "qas")
            paths = []
            for qa in raw.children("qas"):
                answers = [convert_answer(ann.child("answer")) for ann in qa.children("answers")]
                if not answers:
                    raise qa.error("question has no annotations", f"{qa.path}.answers")
                qas.append(
                    build(
                        raw,
                        QAPair,
                        qa.path,
                        id=qa.id("question_id"),
                        question=qa.get("question", str).strip(),
                        answers=answers,
                    )
                )
                paths.append(qa.path)
            check_questions(raw, qas, paths, "question_id")
            if paper_id in papers:
                raise raw.error("paper id occurs twice across the input files", "id")
            papers[paper_id] = check_paper(
                raw,
                build(
                    raw,
                    Paper,
                    id=str(paper_id),
                    dataset=dataset,
                    title=raw.get("title", str).strip(),
                    abstract=raw.get("abstract", str).strip(),
                    sections=convert_sections(raw),
                    qas=qas,
                ),
            )
    return list(papers.values())
