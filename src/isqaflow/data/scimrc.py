"""SciMRC (Zhang et al. 2023) -> :class:`~isqaflow.data.schema.Paper`.

SciMRC extends QASPER's layout: each QA pair carries ``annotateType`` 1/2/3, the
beginner / student / expert perspective, kept as the QA pair's ``level``.  Answers
are free form (``free_form_answer``) or unanswerable.  Its authors host the data
where no script can fetch it, so the workflow reads it from a local path.  The checks
of :mod:`isqaflow.data.qasper` apply: an abstract, a body, questions, no question twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from isqaflow.data.qasper import (
    NO_QUESTIONS,
    check_paper,
    check_questions,
    convert_sections,
    text_evidence,
)
from isqaflow.data.raw import Raw, build, iter_json_records
from isqaflow.data.schema import UNANSWERABLE, Answer, Paper, QAPair

LEVELS = {"1": "beginner", "2": "student", "3": "expert"}


def _answer(raw: Raw) -> Answer:
    if raw.get("unanswerable", bool, False):
        return Answer(text=UNANSWERABLE, type="none", evidence=[])
    text = raw.get("free_form_answer", str, "").strip()
    if not text:
        raise raw.error(
            "answer is neither unanswerable nor has a free_form_answer",
            f"{raw.path}.free_form_answer",
        )
    return Answer(
        text=text, type="abstractive", evidence=text_evidence(raw.strings("evidence", []))
    )


def convert_scimrc(paths: Iterable[str | Path], dataset: str = "scimrc") -> list[Paper]:
    papers: dict[str, Paper] = {}
    for path in paths:
        for paper_id, obj, line in iter_json_records(path, "id", shape="auto"):
            raw = Raw(path, paper_id, obj, line=line)
            paper_id = raw.id("id", (str, int)) if "id" in obj else str(paper_id)
            qas = []
            if not raw.get("qas", list, []):
                raise raw.error(NO_QUESTIONS, "qas")
            paths = []
            for qa in raw.children("qas"):
                level = str(qa.get("annotateType", (str, int), ""))
                if level and level not in LEVELS:
                    raise qa.error(
                        f"annotateType must be 1, 2 or 3, got {level!r}", f"{qa.path}.annotateType"
                    )
                qas.append(
                    build(
                        raw,
                        QAPair,
                        qa.path,
                        id=qa.id("questionId", (str, int)),
                        question=qa.get("question", str).strip(),
                        answers=[_answer(a.child("answer")) for a in qa.children("answers")],
                        level=LEVELS.get(level),
                    )
                )
                paths.append(qa.path)
            check_questions(raw, qas, paths, "questionId")
            if paper_id in papers:
                raise raw.error("paper id occurs twice across the input files", "id")
            papers[paper_id] = check_paper(
                raw,
                build(
                    raw,
                    Paper,
                    id=paper_id,
                    dataset=dataset,
                    title=raw.get("title", str).strip(),
                    abstract=raw.get("abstract", str).strip(),
                    sections=convert_sections(raw),
                    qas=qas,
                ),
            )
    return list(papers.values())
