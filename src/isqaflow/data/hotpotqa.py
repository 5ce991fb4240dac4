"""HotpotQA, distractor setting (Yang et al. 2018) -> :class:`~isqaflow.data.schema.QAExample`.

The evidence of an example is its supporting-fact sentences, in the order of the
``supporting_facts`` list.  The released files have a known quirk: a few supporting
facts point past the end of their paragraph.  Such a fact is an error naming the
file, the record and the field; with ``lenient=True`` (config
``datasets.qa_train.<name>.lenient``) it is skipped instead, with a warning naming the
same, and the example keeps its other evidence.  A record left with no evidence at
all is an error either way, and so is an id that occurs twice (in one file or across
the files), an empty answer, and a supporting fact naming a paragraph title that the
context holds twice (it could point at either).  The dev split is converted against the
converted train split (``held_out_from``): an example in both would be evaluated on
what the feedback model was trained on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from isqaflow.data.raw import Raw, build, iter_json_records, once
from isqaflow.data.schema import ContextParagraph, QAExample
from isqaflow.io import read_jsonl

log = logging.getLogger(__name__)


def training_ids(path: str | Path) -> dict[str, str]:
    """Example id -> where it is, of a converted (normalized) training split."""
    return {str(obj.get("id")): f"{path}, line {line}" for line, obj in read_jsonl(path)}


def convert_hotpotqa(
    paths: Iterable[str | Path], lenient: bool = False, held_out_from: Iterable[str | Path] = ()
) -> list[QAExample]:
    examples: list[QAExample] = []
    ids: dict[str, str] = {}
    for train in held_out_from:
        ids.update(training_ids(train))
    skipped_facts = 0
    for path in paths:
        for rid, obj, line in iter_json_records(path, "_id", shape="list"):
            raw = Raw(path, rid, obj, line=line)
            context: list[ContextParagraph] = []
            by_title: dict[str, list[str]] = {}
            twice: set[str] = set()
            for i, para in enumerate(raw.get("context", list)):
                field = f"context[{i}]"
                if not (
                    isinstance(para, list)
                    and len(para) == 2
                    and isinstance(para[0], str)
                    and isinstance(para[1], list)
                    and all(isinstance(s, str) for s in para[1])
                ):
                    raise raw.error("expected [title, [sentence, ...]]", field)
                context.append(ContextParagraph(title=para[0], sentences=para[1]))
                if para[0] in by_title:
                    twice.add(para[0])
                by_title[para[0]] = para[1]
            if not raw.get("question", str).strip():
                raise raw.error("empty question", "question")
            evidence: list[str] = []
            for i, fact in enumerate(raw.get("supporting_facts", list)):
                if not (
                    isinstance(fact, list)
                    and len(fact) == 2
                    and isinstance(fact[0], str)
                    and isinstance(fact[1], int)
                ):
                    raise raw.error("expected [title, sentence_index]", f"supporting_facts[{i}]")
                title, idx = fact
                if title not in by_title:
                    raise raw.error(
                        f"supporting fact names paragraph {title!r}, which is not in the context",
                        f"supporting_facts[{i}]",
                    )
                if title in twice:
                    raise raw.error(
                        f"supporting fact names paragraph {title!r}, which the context holds twice",
                        f"supporting_facts[{i}]",
                    )
                sentences = by_title[title]
                if not 0 <= idx < len(sentences):
                    error = raw.error(
                        f"supporting fact points at sentence {idx} of paragraph {title!r}, "
                        f"which has {len(sentences)} sentence(s)",
                        f"supporting_facts[{i}]",
                    )
                    if not lenient:
                        raise error
                    log.warning("%s (skipped: lenient)", error)
                    skipped_facts += 1
                    continue
                evidence.append(sentences[idx].strip())
            if not evidence:
                raise raw.error(
                    "no supporting fact points at a sentence of the context", "supporting_facts"
                )
            once(ids, raw.id("_id"), raw, "_id", "example id")
            examples.append(
                build(
                    raw,
                    QAExample,
                    id=raw.id("_id"),
                    question=raw.get("question", str).strip(),
                    context=context,
                    answer=raw.get("answer", str).strip(),
                    evidence=evidence,
                    type=raw.get("type", str, None),
                    level=raw.get("level", str, None),
                )
            )
    if skipped_facts:
        log.warning(
            "HotpotQA: skipped %d supporting fact(s) that point past their paragraph", skipped_facts
        )
    return examples
