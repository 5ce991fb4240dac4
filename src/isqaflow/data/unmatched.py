"""Why a record of a system's outputs file matches no dataset item, in the file's own terms.

A record keyed by text (AlpacaEval's ``instruction``, RAG-QA Arena's ``query``) that
matches nothing used to be reported with its first 60 characters, often identical to the
dataset's text: the difference was at the end (an input appended as ``\\nInput: ...``, a
trailing question mark).  :func:`explain_text` names the closest dataset item (difflib)
and where the two texts first differ, with a little of each from there; :func:`explain_id`
names the closest id.  :func:`file_key` says how a missing item is keyed in the file's
format (its text for text-keyed formats, not the workflow's internal id).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import Any

SHOWN = 40  # characters of each text shown from where they differ
CUTOFF = 0.5  # difflib ratio below which no item counts as close
TEXT_FORMATS = ("alpaca_eval", "ragqa_arena")


def first_difference(ours: str, theirs: str) -> str:
    """ "first differ at character N: the file has '...', the dataset has '...'" (1-based)."""
    n = next(
        (i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs))
    )

    def shown(text: str) -> str:
        rest = text[n : n + SHOWN]
        return (
            "nothing more (its end)"
            if not rest
            else repr(rest) + ("..." if len(text) > n + SHOWN else "")
        )

    return f"the texts first differ at character {n + 1}: the file has {shown(ours)}, the dataset has {shown(theirs)}"


def explain_text(text: str, items: Sequence[Any], normalize: Callable[[str], str]) -> str:
    """ "; closest: item 't3' (93% alike), the texts first differ at ..." ('' when none is close)."""
    ours = normalize(text)
    choices: dict[str, Any] = {}
    for item in items:
        for candidate in item.texts:
            choices.setdefault(normalize(candidate), item)
    close = difflib.get_close_matches(ours, list(choices), n=1, cutoff=CUTOFF)
    if not close:
        return ""
    item = choices[close[0]]
    ratio = difflib.SequenceMatcher(None, ours, close[0]).ratio()
    where = f" ({item.domain!r})" if item.domain else ""
    return f"; closest: item {item.id!r}{where} ({ratio:.0%} alike), {first_difference(ours, close[0])}"


def explain_id(ident: Any, items: Sequence[Any]) -> str:
    """ "; closest id: 'science-search-test-140'" ('' when none is close)."""
    ids = sorted({str(i.id) for i in items} | {str(i.key) for i in items})
    close = difflib.get_close_matches(str(ident), ids, n=1, cutoff=0.6)
    return f"; closest id: {close[0]!r}" if close else ""


def file_key(item: Any, fmt: str) -> str:
    """How ``item`` is keyed in a file of format ``fmt``: its text (and domain) for the
    text-keyed formats, its id (``<domain>:<id>`` for a RAG query) otherwise."""
    if fmt in TEXT_FORMATS:
        text = item.texts[0]
        text = text if len(text) <= 60 else text[:57] + "..."
        return f"{text!r}" + (f" ({item.domain})" if item.domain else "")
    return repr(item.key)
