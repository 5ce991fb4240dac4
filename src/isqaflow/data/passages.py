"""Documents -> passages of at most N consecutive words (RAG-QA Arena, Section 5).

Following DPR and RobustQA, every document of a domain's corpus is cut into
consecutive, non-overlapping chunks of ``max_words`` white-space words (100 in the
paper); the last chunk of a document may be shorter.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from isqaflow.data.schema import Passage


def split_into_passages(
    doc_id: str, text: str, domain: str, max_words: int = 100
) -> Iterator[Passage]:
    if max_words < 1:
        raise ValueError("max_words must be positive")
    words = text.split()
    for n, start in enumerate(range(0, len(words), max_words)):
        yield Passage(
            id=f"{doc_id}-{n}",
            doc_id=doc_id,
            domain=domain,
            text=" ".join(words[start : start + max_words]),
        )


def passages_from_documents(
    documents: Iterable[tuple[str, str]], domain: str, max_words: int = 100
) -> Iterator[Passage]:
    for doc_id, text in documents:
        yield from split_into_passages(doc_id, text, domain, max_words)
