"""How a text in one's own file is compared with the dataset's: one definition for every reader
(systems' outputs keyed by text, the human labels' query texts).

Unicode normalisation is decided here, once: both sides are put in NFC (composed) form, so an
instruction typed with a combining accent (``cafe`` + U+0301, NFD, as some editors and macOS
file names write it) matches the dataset's composed ``café`` -- the two look identical, and a
refusal that quoted both ("the file has 'é-going', the dataset has 'é-going'") could not say
what differs.  Then white space: every run collapsed to one space, the ends stripped.
"""

from __future__ import annotations

import re
import unicodedata

_SPACE = re.compile(r"\s+")


def match_key(text: str) -> str:
    """``text`` in NFC form with its white space collapsed: what two texts are compared by."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()
