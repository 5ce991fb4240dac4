"""Near-duplicate detection for ISQA's facts and non-facts.

Evidence sentences returned at different steps often repeat with small changes; a
sentence is not added when it is near-identical to one already collected.  ``spacy``
is the ISQA authors' check (``iter_refine_on_feedback.py`` L244-251: spaCy
``Doc.similarity`` > 0.8 with ``en_core_web_sm``; ``model`` names the pipeline;
without word vectors spaCy compares the mean of its context tensors), ``embedding`` the
cosine similarity of all-MiniLM-L6-v2 embeddings >= 0.8; ``token_f1`` (SQuAD token F1 >=
threshold) and ``exact`` (identical after normalization) need no model.  The authors'
test is strict (> threshold), the others >= threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

from isqaflow.text.f1 import normalize_answer, token_f1

METHODS = ("spacy", "embedding", "token_f1", "exact")


@dataclass
class DuplicateCheck:
    method: str = "embedding"
    threshold: float = 0.8
    model: str = "all-MiniLM-L6-v2"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(
                f"unknown similarity method {self.method!r}; expected one of {METHODS}"
            )
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
        if self.method == "spacy":
            return self._spacy_similarity(a, b)
        self._embed([a, b])
        return float(self._vectors[a] @ self._vectors[b])  # unit vectors: cosine

    def _spacy_similarity(self, a: str, b: str) -> float:
        import warnings

        from isqaflow.text.candidates import load_pipeline

        nlp = load_pipeline(self.model)
        docs = self._vectors
        for text in (a, b):
            if text not in docs:
                docs[text] = nlp(text)
        if not (docs[a].vector_norm and docs[b].vector_norm):
            return 0.0
        with warnings.catch_warnings():  # W007: no word vectors, the tensors are compared
            warnings.simplefilter("ignore")
            return float(docs[a].similarity(docs[b]))

    def find_duplicate(self, text: str, existing: list[str]) -> tuple[int, float] | None:
        """Index and similarity of the most similar existing sentence at or above the threshold."""
        if not existing:
            return None
        if self.method == "embedding":
            self._embed([text, *existing])
        best = max(
            ((i, self.similarity(text, other)) for i, other in enumerate(existing)),
            key=lambda x: x[1],
        )
        if self.method == "spacy":
            return best if best[1] > self.threshold else None
        return best if best[1] >= self.threshold else None
