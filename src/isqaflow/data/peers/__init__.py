"""Readers of the peers' released judgment files, each in its publisher's format.

Every reader returns a :class:`~isqaflow.data.peers.common.PeerRead`: the file's records as a
pandas ``table`` (columns documented per reader), ``skipped`` (reason -> how many records or
games were left out, following what the publisher's own code does with them) and ``counts``.
A malformed record is a :class:`~isqaflow.io.RecordError` naming the file, the line or record
and the field.

- arena-hard-auto: :func:`read_arena_hard_judgments`, :func:`read_arena_hard_battles`,
  :func:`read_arena_hard_answers`, :func:`read_arena_hard_questions`,
  :func:`read_arena_hard_past_leaderboards`
- AlpacaEval: :func:`read_alpaca_eval_annotations` (and :func:`raw_win_rate`),
  :func:`read_alpaca_eval_lc_weights`
- InFoBench: :func:`read_infobench_eval` (and :func:`drfr`)
- RAG-QA Arena: :func:`read_ragqa_eval_outputs`
"""

from isqaflow.data.peers.alpaca_eval import (
    raw_win_rate,
    read_alpaca_eval_annotations,
    read_alpaca_eval_lc_weights,
)
from isqaflow.data.peers.arena_hard import (
    VERDICT_LEVELS,
    game_winner,
    BASELINE,
    STRONG_WEIGHT,
    read_arena_hard_answers,
    read_arena_hard_battles,
    read_arena_hard_judgments,
    read_arena_hard_past_leaderboards,
    read_arena_hard_questions,
)
from isqaflow.data.peers.common import PeerRead
from isqaflow.data.peers.infobench_eval import drfr, read_infobench_eval
from isqaflow.data.peers.ragqa import read_ragqa_eval_outputs

__all__ = [
    "BASELINE",
    "STRONG_WEIGHT",
    "PeerRead",
    "drfr",
    "raw_win_rate",
    "read_alpaca_eval_annotations",
    "read_alpaca_eval_lc_weights",
    "VERDICT_LEVELS",
    "game_winner",
    "read_arena_hard_answers",
    "read_arena_hard_battles",
    "read_arena_hard_judgments",
    "read_arena_hard_past_leaderboards",
    "read_arena_hard_questions",
    "read_infobench_eval",
    "read_ragqa_eval_outputs",
]
