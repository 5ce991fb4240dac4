"""QASPER v0.3 (Dasigi et al. 2021) -> :class:`~isqaflow.data.schema.Paper`.

Answers follow the official evaluator: unanswerable -> ``Unanswerable``; extractive
spans -> ``", ".join(spans)``; else the free-form answer; else ``Yes``/``No``.
Evidence strings starting with ``FLOAT SELECTED`` point at figures or tables, which
are not part of the text a model reads, and are dropped.  A paper without questions is
an error (ISQA asks each paper its own questions).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from isqaflow.data.raw import Raw, build, iter_json_records
from isqaflow.data.schema import UNANSWERABLE, Answer, Paper, QAPair, Section

FLOAT_SELECTED = "FLOAT SELECTED"
# ISQA asks each paper its own human questions (runs with human questions, the
# feedback-model control): a paper without any would get no feedback at all.
NO_QUESTIONS = "the paper has no questions; ISQA needs each paper's human QA pairs"


def text_evidence(evidence: Iterable[str]) -> list[str]:
    return [e for e in evidence if e.strip() and not e.startswith(FLOAT_SELECTED)]


def convert_answer(raw: Raw) -> Answer:
    unanswerable = raw.get("unanswerable", bool, False)
    spans = raw.strings("extractive_spans", [])
    free_form = raw.get("free_form_answer", str, "")
    yes_no = raw.get("yes_no", bool, None)
    evidence = text_evidence(raw.strings("evidence", []))
    if unanswerable:
        return Answer(text=UNANSWERABLE, type="none", evidence=[])
    if spans:
        return Answer(text=", ".join(s.strip() for s in spans), type="extractive", evidence=evidence)
    if free_form.strip():
        return Answer(text=free_form.strip(), type="abstractive", evidence=evidence)
    if yes_no is not None:
        return Answer(text="Yes" if yes_no else "No", type="boolean", evidence=evidence)
    raise raw.error("annotation has no answer (not unanswerable, no spans, no free form, no yes/no)", raw.path)


def convert_sections(raw: Raw, key: str = "full_text") -> list[Section]:
    sections = []
    for sec in raw.children(key, []):
        paragraphs_key = "paragraphs" if "paragraphs" in sec.obj else "paragraph"  # SciMRC's README spelling
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
            for qa in raw.children("qas"):
                answers = [convert_answer(ann.child("answer")) for ann in qa.children("answers")]
                if not answers:
                    raise qa.error("question has no annotations", f"{qa.path}.answers")
                qas.append(
                    build(raw, QAPair, qa.path, id=qa.get("question_id", str),
                          question=qa.get("question", str).strip(), answers=answers)
                )
            if paper_id in papers:
                raise raw.error("paper id occurs twice across the input files", "id")
            papers[paper_id] = build(
                raw,
                Paper,
                id=str(paper_id),
                dataset=dataset,
                title=raw.get("title", str).strip(),
                abstract=raw.get("abstract", str).strip(),
                sections=convert_sections(raw),
                qas=qas,
            )
    return list(papers.values())
