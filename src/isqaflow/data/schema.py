"""The normalized records every stage reads, one schema per kind of data.

Each converter in this package turns one raw format into these records, written as
JSON Lines (one record per line).  The schemas are strict (unknown fields are an
error), so a stage can trust what it reads; :func:`isqaflow.io.read_records`
validates a file and names the file, line, record id and field of any problem.

Kinds:

* :class:`Paper` -- a scientific paper with human QA pairs (QASPER, SciMRC); ISQA.
* :class:`QAExample` -- a question with context, answer and evidence sentences
  (HotpotQA); fine-tuning data of the feedback model.
* :class:`Instruction` -- an instruction with decomposed YES/NO requirements and
  their constraint labels (InFoBench); DRFR.
* :class:`RagQuery` and :class:`Passage` -- a query with its long-form reference
  answer and gold documents, and the passages of the corpus (LFRQA); RAG-QA Arena.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

CONSTRAINT_LABELS = ("Content", "Linguistic", "Style", "Format", "Number")
UNANSWERABLE = "Unanswerable"


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # The field that keys a kind of record: no file may repeat it (isqaflow.io.read_records).
    unique_id: ClassVar[str | None] = None


def _nonblank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


# --------------------------------------------------------------------- papers + QA
class Answer(Record):
    """One annotator's answer, rendered with QASPER's official conventions.

    ``text`` is ``Unanswerable`` for an unanswerable annotation, the extractive spans
    joined by ``", "``, the free-form answer, or ``Yes``/``No``.
    """

    text: str
    type: Literal["extractive", "abstractive", "boolean", "none"]
    evidence: list[str] = Field(default_factory=list)


class QAPair(Record):
    id: str
    question: str
    answers: list[Answer]
    level: str | None = None  # SciMRC perspective (beginner/student/expert); None for QASPER
    source: Literal["human", "generated"] = "human"

    check_question = field_validator("question", "id")(_nonblank)

    @property
    def unanswerable(self) -> bool:
        """True when every annotator judged the question unanswerable."""
        return all(a.type == "none" for a in self.answers)

    @property
    def gold_answers(self) -> list[str]:
        """The answerable annotations' texts; token F1 takes the maximum over them."""
        return [a.text for a in self.answers if a.type != "none"]

    @property
    def evidence(self) -> list[str]:
        seen: dict[str, None] = {}
        for answer in self.answers:
            for ev in answer.evidence:
                seen.setdefault(ev, None)
        return list(seen)


class Section(Record):
    name: str
    paragraphs: list[str]


class Paper(Record):
    unique_id: ClassVar[str | None] = "id"

    id: str
    dataset: str
    title: str
    abstract: str
    sections: list[Section]
    qas: list[QAPair] = Field(default_factory=list)

    check_id = field_validator("id")(_nonblank)

    def body(self, with_headings: bool = False) -> str:
        """The paper's body text (no abstract), paragraphs separated by blank lines."""
        blocks: list[str] = []
        for section in self.sections:
            paragraphs = [p.strip() for p in section.paragraphs if p.strip()]
            if not paragraphs:
                continue
            if with_headings and section.name:
                blocks.append(section.name.split(" ::: ")[-1])
            blocks.extend(paragraphs)
        return "\n\n".join(blocks)

    def n_words(self) -> int:
        return len(self.body().split())


# ------------------------------------------------------------ QA-with-evidence data
class ContextParagraph(Record):
    title: str
    sentences: list[str]


class QAExample(Record):
    """A question over a context whose target is an answer plus its evidence sentences.

    ``unanswerable`` examples (the evidence was removed from the context) have the
    target ``Unanswerable`` and no evidence.
    """

    unique_id: ClassVar[str | None] = "id"

    id: str
    question: str
    context: list[ContextParagraph]
    answer: str
    evidence: list[str]
    unanswerable: bool = False
    type: str | None = None
    level: str | None = None

    check_id = field_validator("id", "question", "answer")(_nonblank)

    def context_text(self) -> str:
        return "\n".join(
            " ".join(s.strip() for s in para.sentences if s.strip()) for para in self.context
        )


# ------------------------------------------------------------------- instructions
class Requirement(Record):
    question: str
    labels: list[Literal["Content", "Linguistic", "Style", "Format", "Number"]]

    check_question = field_validator("question")(_nonblank)

    @field_validator("labels")
    @classmethod
    def _some_label(cls, labels: list[str]) -> list[str]:
        if not labels:
            raise ValueError("a requirement needs at least one constraint label")
        return labels


class Instruction(Record):
    unique_id: ClassVar[str | None] = "id"

    id: str
    subset: Literal["Easy", "Hard"]
    category: str
    instruction: str
    input: str = ""
    requirements: list[Requirement]

    check_id = field_validator("id", "instruction")(_nonblank)

    @field_validator("requirements")
    @classmethod
    def _some_requirement(cls, reqs: list[Requirement]) -> list[Requirement]:
        if not reqs:
            raise ValueError("an instruction needs at least one decomposed question")
        return reqs


# ----------------------------------------------------------------------- RAG QA
class RagQuery(Record):
    unique_id: ClassVar[str | None] = "id"

    id: str
    domain: str
    question: str
    reference: str  # the long-form answer, citations removed, one claim per line
    reference_with_citation: str
    citations: list[list[int]]  # per reference line, 1-based indices into gold_doc_ids
    gold_doc_ids: list[str]

    check_id = field_validator("id", "question")(_nonblank)


class Passage(Record):
    unique_id: ClassVar[str | None] = "id"

    id: str  # "<doc_id>-<n>": the n-th passage of the document
    doc_id: str
    domain: str
    text: str

    check_id = field_validator("id", "doc_id", "text")(_nonblank)
