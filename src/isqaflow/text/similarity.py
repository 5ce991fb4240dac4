"""Near-duplicate detection for ISQA's facts and non-facts.

Evidence sentences returned at different steps often repeat with small changes; a
sentence is not added when it is near-identical to one already collected.  The
default is the cosine similarity of all-MiniLM-L6-v2 embeddings >= 0.8; ``token_f1``
(SQuAD token F1 >= threshold) and ``exact`` (identical after normalization) need no
model.
"""

from __future__ import annotations

from dataclasses import dataclass

from isqaflow.text.f1 import normalize_answer, token_f1

METHODS = ("embedding", "token_f1", "exact")


@dataclass
class DuplicateCheck:
    method: str = "embedding"
    threshold: float = 0.8
    model: str = "all-MiniLM-L6-v2"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown similarity method {self.method!r}; expected one of {METHODS}")
        self._vectors: dict[str, object] = {}

    def _embed(self, texts: list[str]) -> None:
        from isqaflow.text.embeddings import encode

        todo = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        for text, vector in zip(todo, encode(todo, self.model), strict=True):
            self._vectors[text] = vector

    def similarity(self, a: str, b: str) -> float:
        if self.method == "exact":
            return float(normalize_answer(a) == normalize_answer(b))
        if self.method == "token_f1":
            return token_f1(a, b)
        self._embed([a, b])
        return float(self._vectors[a] @ self._vectors[b])  # unit vectors: cosine

    def find_duplicate(self, text: str, existing: list[str]) -> tuple[int, float] | None:
        """Index and similarity of the most similar existing sentence at or above the threshold."""
        if not existing:
            return None
        if self.method == "embedding":
            self._embed([text, *existing])
        best = max(((i, self.similarity(text, other)) for i, other in enumerate(existing)), key=lambda x: x[1])
        return best if best[1] >= self.threshold else None
