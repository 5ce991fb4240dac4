"""Arena-Hard-Auto's style control on the run's own answers: each answer's style counts (rule
arena_hard_style_counts) and the style-controlled score beside the plain one (rule
arena_hard_tables, :mod:`isqaflow.arena_hard.tables`).

The counts are v0.1's (``add_markdown_info.py``): tokens, headers, list items and bold spans,
the markdown ones by :func:`isqaflow.arena.ratings.style.markdown_counts` (checked on the
released answers in tests/unit/arena/test_style_control.py).  v0.1 counts tokens with tiktoken's
gpt-3.5-turbo encoding (cl100k_base), which tiktoken downloads when first used; here one
tokenizer the config names (``arena_hard.style_control.tokenizer``: a model of ``models``,
loaded offline like every model) counts every answer, the baseline's included -- the token
feature enters the fit only as ``(a - b) / (a + b + 1)``, standardized, so it is the ratio of
lengths that matters (docs/fidelity.md).  The fit: :func:`isqaflow.arena.ratings.style.
style_controlled` on the same battles as the plain score, a feature that does not vary over
them left out and named, a bootstrap resample whose battles all went one way (no finite fit:
a small run's) left out and counted, and above 2.5% of them no interval.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from isqaflow.arena.ratings.style import FEATURES, markdown_counts, style_controlled
from isqaflow.data.peers import read_arena_hard_answers
from isqaflow.io import read_jsonl, write_jsonl

__all__ = [
    "ONE_OUTCOME_LIMIT",
    "StyleFit",
    "answer_counts",
    "read_counts",
    "style_scores",
    "write_counts",
]


def answer_counts(
    answer_paths: Sequence[str | Path], count_tokens: Callable[[str], int]
) -> list[dict[str, Any]]:
    """One record per answer of arena-hard's answer files: model, question_id and the four
    style counts (:data:`~isqaflow.arena.ratings.style.FEATURES`), tokens by ``count_tokens``."""
    rows = []
    for path in answer_paths:
        for row in read_arena_hard_answers(path).table.to_dict("records"):
            rows.append(
                {
                    "model": row["model"],
                    "question_id": row["question_id"],
                    "tokens": int(count_tokens(row["answer"])),
                    **markdown_counts(row["answer"]),
                }
            )
    return rows


def write_counts(
    answer_paths: Sequence[str | Path], tokenizer: Mapping[str, Any], out_path: str | Path
) -> list[dict[str, Any]]:
    """Entry point of rule arena_hard_style_counts: ``tokenizer`` is a model's spec (its
    ``model`` -- a path or a Hub id in the offline cache -- and ``revision``); only its
    tokenizer is loaded."""
    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(tokenizer["model"], revision=tokenizer.get("revision"))

    def count(text: str) -> int:
        return len(loaded(text, add_special_tokens=False)["input_ids"])

    rows = answer_counts(answer_paths, count)
    write_jsonl(out_path, rows)
    return rows


def read_counts(path: str | Path) -> pd.DataFrame:
    """The counts file as a frame (model, question_id and the four counts); a record without a
    count is a named error."""
    rows = []
    for line, obj in read_jsonl(path):
        missing = [key for key in ("model", "question_id", *FEATURES) if key not in obj]
        if missing:
            raise ValueError(f"{path}, line {line}: no {', '.join(missing)}")
        rows.append(obj)
    return pd.DataFrame(rows, columns=["model", "question_id", *FEATURES])


#: above this share of resamples (%) left out for one outcome, the interval is not reported: the
#: remaining resamples would leave out exactly the most extreme ones (as the Bradley-Terry
#: table's prior-set limit, isqaflow.report.board.PRIOR_SET_LIMIT)
ONE_OUTCOME_LIMIT = 2.5


@dataclass(frozen=True)
class StyleFit:
    """One judge's style control: per model ``scores`` (columns ``style score``, ``style
    lower``, ``style upper``; the interval NaN when undecided), the features ``left_out`` as
    constant over the battles, and the bootstrap resamples ``one_outcome`` of ``rounds`` left
    out because all their battles went one way."""

    scores: pd.DataFrame
    left_out: list[str]
    one_outcome: int
    rounds: int

    @property
    def interval_decided(self) -> bool:
        return self.rounds > 0 and 100 * self.one_outcome / self.rounds <= ONE_OUTCOME_LIMIT

    def note(self) -> str:
        """What the caption says of this fit beyond the method ("" when nothing)."""
        parts = []
        if self.left_out:
            parts.append("left out as constant over the battles: " + ", ".join(self.left_out))
        if self.one_outcome:
            parts.append(
                f"{self.one_outcome} of {self.rounds} resamples had battles of one outcome only "
                "(no finite fit) and were left out"
                + ("" if self.interval_decided else f", above {ONE_OUTCOME_LIMIT:g}%: no interval")
            )
        return "; ".join(parts)


def style_scores(
    battles: pd.DataFrame, counts: pd.DataFrame, baseline: str, rounds: int, seed: int
) -> StyleFit:
    """Per model the style-controlled win rate against ``baseline`` in % with its bootstrap
    95% interval over battles (:class:`StyleFit`)."""
    table, coefficients = style_controlled(
        battles, counts, baseline, rounds=rounds, seed=seed, constant="drop"
    )
    fit = StyleFit(
        pd.DataFrame(
            {
                "style score": table["style-controlled win rate %"],
                "style lower": table["lower (95%)"],
                "style upper": table["upper (95%)"],
            }
        ),
        [f for f in FEATURES if pd.isna(coefficients[f])],
        int(table.attrs["one_outcome_resamples"]),
        rounds,
    )
    if not fit.interval_decided:
        fit.scores[["style lower", "style upper"]] = np.nan
    return fit
