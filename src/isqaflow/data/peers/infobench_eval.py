"""InFoBench's evaluation files (qinyiwei/InfoBench ``evaluation.py``): one verdict per question.

``run_evaluation`` writes ``<o_dir>/<eval_model>/<model>_DecomposeEval.json`` (JSON Lines despite
the name; the released GPT-4 file is ``GPT4_DecomposeEval.jsonl``): each input entry (``id``,
``instruction``, ``input``, ``output``, ``decomposed_questions``, ...) plus ``eval``, one value
per decomposed question asked -- True for a YES, False for a NO, None when the judge's reply
held neither or both (``"NO YES or NO answer!"``), after which it stops asking that entry's
remaining questions, so ``eval`` is then shorter than ``decomposed_questions``.  An entry whose
``output`` is null is not written at all.

InFoBench's ``bool_ratio`` (its DRFR) prints a warning for a None or a short list and then counts
a None as False (``if eva_value:`` ... ``else: count["false"] += 1``) and the questions never
asked not at all.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd

from isqaflow.data.peers.common import PeerRead, as_path, counted
from isqaflow.data.raw import Raw, once
from isqaflow.io import RecordError, read_jsonl

NONE_RULES = ("no", "exclude")


def read_infobench_eval(path: str | Path) -> PeerRead:
    """An InFoBench evaluation file: one row per decomposed question asked.

    ``table``: ``id``, ``question_index``, ``question``, ``eval`` (True, False, or None for an
    answer the judge gave neither YES nor NO to; object dtype).  A None is kept and counted in
    ``counts`` (``"eval None"``); whether it counts as a NO is the caller's choice
    (:func:`drfr`).  Decomposed questions after an early stop have no verdict and no row; they
    are counted in ``skipped``.  An ``eval`` longer than ``decomposed_questions``, a value that is
    not true/false/null, or a null ``eval`` (``bool_ratio`` cannot read that either) is an error.
    """
    path = as_path(path)
    rows = []
    skipped: Counter = Counter()
    notes: Counter = Counter()
    seen: dict = {}
    for line, obj in read_jsonl(path):
        raw = Raw(path, obj.get("id"), obj, line=line)
        iid = raw.id("id")
        once(seen, iid, raw, "id", "instruction")
        questions = raw.strings("decomposed_questions")
        if "eval" in obj and obj["eval"] is None:
            raise raw.error("null: the instruction was not evaluated", "eval")
        verdicts = raw.get("eval", list)
        if len(verdicts) > len(questions):
            raise raw.error(
                f"{len(verdicts)} verdicts for {len(questions)} decomposed questions", "eval"
            )
        for index, verdict in enumerate(verdicts):
            if verdict is not None and not isinstance(verdict, bool):
                raise raw.error(
                    f"expected true, false or null, got {type(verdict).__name__}",
                    f"eval[{index}]",
                )
            if verdict is None:
                notes["eval None"] += 1
            rows.append(
                {"id": iid, "question_index": index, "question": questions[index], "eval": verdict}
            )
        if len(verdicts) < len(questions):
            skipped[
                "decomposed question not asked (judging stopped early; bool_ratio leaves it out)"
            ] += len(questions) - len(verdicts)
    if not seen:
        raise RecordError(path, "the file holds no evaluated instructions")
    table = pd.DataFrame(rows, columns=["id", "question_index", "question", "eval"])
    table["eval"] = table["eval"].astype(object)
    counts = {**counted(notes), "instructions": len(seen), "verdicts": len(rows)}
    return PeerRead(str(path), table, counted(skipped), counts)


def drfr(read: PeerRead, *, none: str) -> float:
    """The share of YES among the verdicts of an evaluation file read by :func:`read_infobench_eval`.

    ``none`` says what a None verdict is, and has no default, so every caller says it: ``"no"``
    -- InFoBench's ``bool_ratio`` (the published DRFR), or ``"exclude"`` -- left out of the
    denominator, as this project treats an unparsed judgment.
    """
    if none not in NONE_RULES:
        raise ValueError(f"none must be one of {NONE_RULES}, got {none!r}")
    verdicts = read.table["eval"]
    yes = int((verdicts == True).sum())  # noqa: E712 -- object column of True/False/None
    unparsed = int(verdicts.isna().sum())
    total = len(verdicts) - (unparsed if none == "exclude" else 0)
    if total == 0:
        raise ValueError(f"{read.path}: no verdicts to count")
    return yes / total
