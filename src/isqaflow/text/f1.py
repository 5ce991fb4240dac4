"""SQuAD-style answer normalization and token-level F1 (Rajpurkar et al. 2016).

Normalization: lowercase, strip punctuation, drop the articles a/an/the, collapse
white space.  F1 is computed on the normalized whitespace tokens; against several
gold answers the maximum is taken, as in the official SQuAD and QASPER evaluators.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text: str) -> list[str]:
    return normalize_answer(text).split()


def token_f1(prediction: str, gold: str) -> float:
    """Token F1 between two strings after SQuAD normalization.

    When either side normalizes to nothing, F1 is 1 if both do and 0 otherwise
    (the official SQuAD 2.0 convention for no-answer predictions).
    """
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    if not pred or not ref:
        return float(pred == ref)
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(ref)
    return 2 * precision * recall / (precision + recall)


def max_f1(prediction: str, golds: Iterable[str]) -> float:
    """Maximum token F1 of ``prediction`` over several gold answers (0 when there are none)."""
    return max((token_f1(prediction, gold) for gold in golds), default=0.0)


def exact_match(prediction: str, gold: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(gold)
