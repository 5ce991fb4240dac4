"""How the arena judge's outputs become verdicts: reply parsing, the two verdict rules.

Pure functions without a model, shared by the judging jobs and the tables.  Positional
verdicts ("1", "2", "tie") say which shown answer won; a pair's verdicts per order are
mapped back to its own terms ("a" = system_a, "b" = system_b, "tie") before they are
combined, so the two orders of a pair can be compared.

Two rules turn a pair judged in both orders into one verdict (a judge's ``rule``):

* ``raw`` -- each order's own label (parsed from the reply, or the likeliest label in
  logprob mode); the two orders must agree, any disagreement is a tie
  (:func:`combine_orders`; MT-bench, Arena-Hard).  Text and logprob mode.
* ``calibrated`` -- balanced position calibration, logprob mode only: the preference
  margin of system_a over system_b is the mean over both orders of log P(label of a) -
  log P(label of b), each order in its own terms (order ab: ``lp["1"] - lp["2"]``;
  order ba: ``lp["2"] - lp["1"]``; :func:`preference_margin`).  A constant preference
  for a position adds +c in one order and -c in the other and cancels in the mean.
  The verdict is a if the margin exceeds ``tie_band``, b if it is below
  ``-tie_band``, a tie otherwise (:func:`calibrated_side`).  The tie label's own
  log-probability plays no part.  ``tie_band`` defaults to 0.0 nats: identical
  answers make both orders the same request, so their margin is exactly 0 and they tie
  at any band -- but no other pair ever ties, so every win+tie rate equals the win
  rate.  :func:`fit_tie_band` fits a band on human-labelled pairs (the judge then ties
  as often as the people did on them); the arena's agreement table reports the band
  fitted on the run's human pairs and the agreement it gives, and a config sets it as
  the judge's ``tie_band``.  A band is never tuned on the known-answer controls.

Position consistency is reported under both: raw, the two orders' labels agree;
calibrated, the two orders' margins have the same sign.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

__all__ = [
    "PARSED_LABELS",
    "RATING_LABELS",
    "VERDICT_RULES",
    "calibrated_side",
    "check_verdict_rule",
    "fit_tie_band",
    "combine_orders",
    "loo_tie_band_sides",
    "margins_agree",
    "parse_verdict",
    "position_consistency",
    "preference_margin",
]

Verdict = Literal["1", "2", "tie"]  # positional: answer 1 better, answer 2 better, tie
Side = Literal["a", "b", "tie"]  # in the pair's terms: system_a better, system_b better, tie

# The labels the prompt asks for.
RATING_LABELS = {"1": "1", "2": "2", "0": "tie"}
# Labels a reply may carry: the ones asked for, plus the paper's tie label 3 (Table 15).
PARSED_LABELS = {**RATING_LABELS, "3": "tie"}
VERDICT_RULES = ("raw", "calibrated")
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


def preference_margin(
    logprobs_ab: Mapping[str, float], logprobs_ba: Mapping[str, float]
) -> tuple[float, float, float]:
    """(margin, margin_ab, margin_ba): system_a's preference margin over system_b, in nats.

    ``logprobs_ab`` are the label log-probabilities (keys "1", "2") with system_a shown
    as answer 1, ``logprobs_ba`` with system_b shown first.  margin_ab = lp_ab["1"] -
    lp_ab["2"], margin_ba = lp_ba["2"] - lp_ba["1"], margin = their mean.  Swapping the
    pair's systems swaps the two orders and negates every margin exactly.
    """
    margin_ab = float(logprobs_ab["1"]) - float(logprobs_ab["2"])
    margin_ba = float(logprobs_ba["2"]) - float(logprobs_ba["1"])
    return (margin_ab + margin_ba) / 2, margin_ab, margin_ba


def calibrated_side(margin: float, tie_band: float = 0.0) -> Side | None:
    """ "a" if ``margin > tie_band``, "b" if ``margin < -tie_band``, else "tie"; None for NaN.

    A NaN margin (log-probabilities of -inf for both labels) is invalid: counted, never
    a tie.
    """
    if not tie_band >= 0.0:
        raise ValueError(f"tie_band must be a number >= 0, got {tie_band!r}")
    if math.isnan(margin):
        return None
    if margin > tie_band:
        return "a"
    if margin < -tie_band:
        return "b"
    return "tie"


def fit_tie_band(margins: Iterable[float], human: Iterable[int]) -> dict[str, Any]:
    """The tie band under which the judge ties as many human-labelled pairs as the people did.

    ``margins`` are the judge's calibrated margins of the pairs (system_a over
    system_b, nats), ``human`` their merged majority labels (+1 / 0 / -1, 0 a tie), in
    the same order; pairs with a NaN margin are left out.  With k human ties among the
    n pairs the band is the midpoint between the k-th and the (k+1)-th smallest
    |margin|, so exactly k pairs fall within it (fewer when margins are equal at the
    boundary: the band never ties more than the people did); 0.0 when the people tied
    none, the largest |margin| when they tied all.  Matching the tie share, not the
    accuracy, keeps the fit from chasing a handful of pairs; it is an in-sample fit on
    these pairs.  Returns ``tie_band``, ``n`` (pairs used), ``n_human_ties`` and
    ``n_judge_ties`` (pairs within the band).
    """
    pairs = [
        (abs(float(m)), int(h))
        for m, h in zip(margins, human, strict=True)
        if not math.isnan(float(m))
    ]
    for _, label in pairs:
        if label not in (1, 0, -1):
            raise ValueError(f"human labels must be +1, 0 or -1, got {label!r}")
    size = sorted(m for m, _ in pairs)
    n, ties = len(size), sum(label == 0 for _, label in pairs)
    if n == 0 or ties == 0:
        band = 0.0
    elif ties == n:
        band = size[-1]
    else:
        # the midpoint below the (k+1)-th smallest |margin| and the largest one under it
        below = [m for m in size[:ties] if m < size[ties]]
        band = (below[-1] + size[ties]) / 2 if below else 0.0
    return {
        "tie_band": float(band),
        "n": n,
        "n_human_ties": ties,
        "n_judge_ties": sum(m <= band for m in size),
    }


def loo_tie_band_sides(margins: Sequence[float], human: Sequence[int]) -> list[Side | None]:
    """Out-of-sample verdicts under a fitted tie band: each pair judged under the band
    :func:`fit_tie_band` fits on all the *other* pairs (leave-one-out), so no pair decides
    its own band."""
    margins, human = list(margins), list(human)
    sides = []
    for i, margin in enumerate(margins):
        band = fit_tie_band(margins[:i] + margins[i + 1 :], human[:i] + human[i + 1 :])["tie_band"]
        sides.append(calibrated_side(float(margin), band))
    return sides


def margins_agree(margin_ab: float, margin_ba: float) -> bool:
    """Calibrated position consistency: the two orders' margins have the same sign (0 included)."""
    sign = lambda value: (value > 0) - (value < 0)  # noqa: E731
    return sign(margin_ab) == sign(margin_ba)


def check_verdict_rule(
    where: str, mode: str, rule: str = "raw", tie_band: float = 0.0, orders: str = "both"
) -> None:
    """Fail with a message naming ``where`` (e.g. "arena.judges.gpt4") if a judge's verdict
    rule cannot be served: an unknown rule, a negative band, or ``calibrated`` without
    the label log-probabilities of both orders (``mode: logprob``, ``orders: both``).
    """
    if rule not in VERDICT_RULES:
        raise ValueError(f"{where}: rule must be one of {list(VERDICT_RULES)}, got {rule!r}")
    if not (isinstance(tie_band, (int, float)) and tie_band >= 0.0 and math.isfinite(tie_band)):
        raise ValueError(f"{where}: tie_band must be a finite number >= 0, got {tie_band!r}")
    if rule == "calibrated" and mode != "logprob":
        raise ValueError(
            f"{where}: rule 'calibrated' needs the label log-probabilities (mode: logprob), but "
            f"this judge has mode {mode!r}; use rule: raw for a judge whose replies are parsed"
        )
    if rule == "calibrated" and orders != "both":
        raise ValueError(
            f"{where}: rule 'calibrated' averages the margins of both orders, but arena.orders "
            f"is {orders!r}; set orders: both or use rule: raw"
        )


def position_consistency(
    records: Iterable[Mapping[str, Any]], field: str = "position_consistent"
) -> dict[str, Any]:
    """How often the two orders of a pair agree, over pairs with both orders valid.

    ``field`` holds each record's flag: "position_consistent" (raw rule: the labels
    agree) or "position_consistent_calibrated" (the margins have the same sign); None
    when not both orders were judged and valid.  ``rate`` is ``n_consistent /
    n_both_valid`` (NaN when no pair has both).
    """
    flags = [record.get(field) for record in records]
    # a flag missing from a table row is NaN there
    valid = [flag for flag in flags if flag is not None and flag == flag]
    n_consistent = sum(bool(flag) for flag in valid)
    return {
        "n_pairs": len(flags),
        "n_both_valid": len(valid),
        "n_consistent": n_consistent,
        "rate": n_consistent / len(valid) if valid else float("nan"),
    }
