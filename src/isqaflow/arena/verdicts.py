"""How the arena judge's outputs become verdicts: reply parsing, combination of orders.

Pure functions without a model, shared by the judging jobs and the tables.  Positional
verdicts ("1", "2", "tie") say which shown answer won; a pair's verdicts per order are
mapped back to its own terms ("a" = system_a, "b" = system_b, "tie") before they are
combined, so the two orders of a pair can be compared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

__all__ = [
    "PARSED_LABELS",
    "RATING_LABELS",
    "combine_orders",
    "parse_verdict",
    "position_consistency",
]

Verdict = Literal["1", "2", "tie"]  # positional: answer 1 better, answer 2 better, tie
Side = Literal["a", "b", "tie"]  # in the pair's terms: system_a better, system_b better, tie

# The labels the prompt asks for.
RATING_LABELS = {"1": "1", "2": "2", "0": "tie"}
# Labels a reply may carry: the ones asked for, plus the paper's tie label 3 (Table 15).
PARSED_LABELS = {**RATING_LABELS, "3": "tie"}
_OPEN_TAG = re.compile(r"<\s*rating\s*>", re.IGNORECASE)
_CLOSE_TAG = re.compile(r"<\s*/\s*rating\s*>", re.IGNORECASE)


def parse_verdict(text: str) -> Verdict | None:
    """The label in the reply's last ``<rating>`` tag: "1", "2", "tie" (for 0 or 3) or None.

    0 is the tie label the prompt asks for; 3 is the paper's (Table 15), which a judge
    prompted with the paper's own wording writes.

    Tags are matched case-insensitively with whitespace allowed inside them and around
    the label.  A last opening tag without a closing one is accepted only when the
    label ends the reply ("... <rating>2"): judges often drop the closing tag, and a
    "</rating>" stop string cuts it.  Anything else inside the tags ("10", "1 or 2")
    and a reply without tags are None: invalid, counted and left out, never turned
    into a tie; we do not guess a preference from free text.
    """
    openings = list(_OPEN_TAG.finditer(text))
    if not openings:
        return None
    rest = text[openings[-1].end() :]
    closing = _CLOSE_TAG.search(rest)
    label = rest[: closing.start()] if closing else rest
    return PARSED_LABELS.get(label.strip())


def combine_orders(first: Side | None, second: Side | None) -> Side | None:
    """One verdict from the two orders' verdicts, both in the pair's terms (a / b / tie).

    Agreement gives that verdict; any disagreement, win against tie included, is a tie
    (the MT-bench and Arena-Hard practice).  If either order is invalid (None) the pair
    gets None: excluded and counted rather than decided by the one order left, which
    would reintroduce the position bias that judging both orders removes.
    """
    for side in (first, second):
        if side not in ("a", "b", "tie", None):
            raise ValueError(f"an order's verdict must be 'a', 'b', 'tie' or None, got {side!r}")
    if first is None or second is None:
        return None
    return first if first == second else "tie"


def position_consistency(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """How often the two orders of a pair agree, over pairs with both orders valid.

    ``rate`` is ``n_consistent / n_both_valid`` (NaN when no pair has both).
    """
    flags = [record.get("position_consistent") for record in records]
    valid = [flag for flag in flags if flag is not None]
    n_consistent = sum(bool(flag) for flag in valid)
    return {
        "n_pairs": len(flags),
        "n_both_valid": len(valid),
        "n_consistent": n_consistent,
        "rate": n_consistent / len(valid) if valid else float("nan"),
    }
