"""InFoBench (Qin et al. 2024) -> :class:`~isqaflow.data.schema.Instruction`.

Ids ``user_oriented_task_N`` form the Easy set and ``domain_oriented_task_N`` the Hard
set; the ``subset`` field (``Easy_set`` / ``Hard_set``) says the same and is checked.
Each decomposed question keeps its constraint labels (one or more of Content,
Linguistic, Style, Format, Number).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from isqaflow.data.raw import Raw, build, iter_json_records
from isqaflow.data.schema import CONSTRAINT_LABELS, Instruction, Requirement

SUBSETS = {"Easy_set": "Easy", "Hard_set": "Hard"}
ID_PREFIXES = {"user_oriented_task_": "Easy", "domain_oriented_task_": "Hard"}


def convert_infobench(paths: Iterable[str | Path]) -> list[Instruction]:
    instructions: dict[str, Instruction] = {}
    for path in paths:
        for rid, obj, line in iter_json_records(path, "id", shape="lines"):
            raw = Raw(path, rid, obj, line=line)
            subset_raw = raw.get("subset", str)
            if subset_raw not in SUBSETS:
                raise raw.error(
                    f"subset must be Easy_set or Hard_set, got {subset_raw!r}", "subset"
                )
            questions = raw.strings("decomposed_questions")
            if not questions:
                raise raw.error(
                    "an instruction needs at least one decomposed question", "decomposed_questions"
                )
            labels = raw.get("question_label", list)
            if len(labels) != len(questions):
                raise raw.error(
                    f"{len(labels)} label lists for {len(questions)} decomposed questions",
                    "question_label",
                )
            requirements = []
            for i, (question, qlabels) in enumerate(zip(questions, labels, strict=True)):
                if not isinstance(qlabels, list) or not qlabels:
                    raise raw.error("expected a non-empty list of labels", f"question_label[{i}]")
                for label in qlabels:
                    if label not in CONSTRAINT_LABELS:
                        raise raw.error(
                            f"unknown constraint label {label!r}", f"question_label[{i}]"
                        )
                if not question.strip():
                    raise raw.error("empty question", f"decomposed_questions[{i}]")
                requirements.append(Requirement(question=question.strip(), labels=qlabels))
            iid = raw.id("id")
            if iid in instructions:
                raise raw.error("instruction id occurs twice", "id")
            expected = next(
                (s for prefix, s in ID_PREFIXES.items() if iid.startswith(prefix)), None
            )
            if expected is not None and expected != SUBSETS[subset_raw]:
                raise raw.error(
                    f"subset {subset_raw!r} disagrees with the id (an {expected} instruction)",
                    "subset",
                )
            instructions[iid] = build(
                raw,
                Instruction,
                id=iid,
                subset=SUBSETS[subset_raw],
                category=raw.get("category", str, ""),
                instruction=raw.get("instruction", str).strip(),
                input=raw.get("input", str, "").strip(),
                requirements=requirements,
            )
    return list(instructions.values())
