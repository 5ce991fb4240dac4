"""Snap a free-text answer to the span of its context that matches it best.

QAGS and QuestEval compare answers by SQuAD token F1, and QAGS keeps a question only
when the answer read from the summary gives back the answer candidate it was
generated for.  Span models (SQuAD 2.0, the paper-scale QA) return spans of the
context by construction; a prompted chat model often answers with a sentence of its
own ("The system is a chatbot designed to ...").  :func:`snap_to_span` replaces such
a reply by the context span with the highest token F1 against it -- the span a
reader of the reply would point at -- so prompted and extractive QA produce answers
of the same kind.

The search runs over whole words of the context (runs of non-space characters), at
most ``max_words`` of them; ties go to the shortest span, then the earliest.  Only
spans that begin and end with a word the reply contains can be best (trimming a
boundary word the reply lacks raises precision and keeps the overlap), so only those
are scored: linear in the context for a fixed ``max_words``.  A reply that shares no
word with the context snaps to "" (no answer).
"""

from __future__ import annotations

import re
from collections import Counter

from isqaflow.text.f1 import normalize_answer

_WORD = re.compile(r"\S+")
# Punctuation trimmed from both ends of a snapped span (it never changes token F1).
_EDGE_PUNCTUATION = " \t\n.,;:!?\"'()[]{}"


def _context_words(context: str) -> list[tuple[int, int, str]]:
    """(start, end, normalized token or "") of every whitespace-separated word."""
    return [(m.start(), m.end(), normalize_answer(m.group())) for m in _WORD.finditer(context)]


def snap_to_span(reply: str, context: str, max_words: int = 10) -> str:
    """The span of ``context`` (at most ``max_words`` words) with the highest token F1 against ``reply``.

    Returns the span as it is written in the context, without surrounding
    punctuation, or "" when the reply is empty or shares no word with the context.
    """
    if max_words < 1:
        raise ValueError(f"max_words must be at least 1, got {max_words}")
    wanted = Counter(normalize_answer(reply).split())
    if not wanted:
        return ""
    reply_tokens = sum(wanted.values())
    words = _context_words(context)
    best: tuple[float, int, int] | None = None  # (-F1, words in the span, first word)
    best_end = -1
    for first, (_, _, token) in enumerate(words):
        if token not in wanted:
            continue
        seen: Counter[str] = Counter()
        overlap = span_tokens = 0
        for last in range(first, min(len(words), first + max_words)):
            token = words[last][2]
            if not token:
                continue
            span_tokens += 1
            if seen[token] < wanted[token]:
                overlap += 1
            seen[token] += 1
            if token not in wanted:
                continue
            key = (-2.0 * overlap / (span_tokens + reply_tokens), last - first + 1, first)
            if best is None or key < best:
                best, best_end = key, last
    if best is None:
        return ""
    start, end = words[best[2]][0], words[best_end][1]
    return context[start:end].strip(_EDGE_PUNCTUATION)
