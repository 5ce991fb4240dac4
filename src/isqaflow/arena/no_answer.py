"""The no-answer reply of RAG-QA Arena's answer prompt, and how it is recognised (Table 9).

The answer prompt asks a model to reply "I couldn't find an answer." when the passages
hold nothing helpful; the paper prints it with a typographic apostrophe ("I couldn’t
find an answer.", Tables 9 and 11).  Models write either apostrophe, drop it, or spell
it out, so :func:`is_no_answer` matches every such variant; the no-answer ratio of a
model (Table 9) counts the answers it matches.
"""

from __future__ import annotations

import re

__all__ = ["NO_ANSWER", "is_no_answer"]

NO_ANSWER = "I couldn't find an answer."

# ASCII ', right and left single quotation marks, modifier letter apostrophe, backtick, acute accent.
_APOSTROPHE = "['\u2019\u2018\u02bc`\u00b4]"
_NO_ANSWER = re.compile(
    rf"\b(?:could(?:n{_APOSTROPHE}?t|\s+not)|can(?:{_APOSTROPHE}?t|not|\s+not))"
    r"\s+find\s+(?:an|any|the)\s+answer",
    re.IGNORECASE,
)


def is_no_answer(answer: str) -> bool:
    """Whether an answer is the no-answer reply: empty, or saying it could not find an answer.

    Matched anywhere in the answer, case-insensitively, with any whitespace between the
    words: "could not" / "couldn't" / "couldnt" / "cannot" / "can't" (any of the
    apostrophes ' ’ ‘ ʼ ` ´), then "find an / any / the answer".
    """
    return not answer.strip() or bool(_NO_ANSWER.search(answer))
