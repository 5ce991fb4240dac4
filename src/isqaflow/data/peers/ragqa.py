"""RAG-QA Arena's pairwise evaluation outputs (awslabs/rag-qa-arena ``code/``).

``evaluate_pair_responses.py`` writes ``eval_results/lfrqa/<n>_psgs/<domain>_<model1>[_<model2>]
_eval_by_<judge>.json`` with ``json.dump(data_to_save, indent=2)``: a JSON list, one object per
query, as ``data_processors.py`` built it (``pair_id``, ``system``, ``examples``, ``prompt``,
``query``, ``response_1``, ``response_2``, ``order``; against another model also ``passages``
and ``reference``) plus the judge's reply ``pred`` (``models.py``: ``'FAIL TO GENERATE ANS.'``
after five failed API calls).  ``order`` maps the positions to the systems -- ``{"1": name,
"2": name}``, string keys once written as JSON, ``"LFRQA"`` for the reference answer; which
system goes first depends on the parity of the query's word count.  The reply ends in
``<rating>0|1|2</rating>``: 1 prefers answer 1, 2 answer 2, 0 is "not sure", a tie.

Their ``compute_correlation.aggregate_evaluators`` counts a reply without ``pred``, with the
failure text or without ``<rating>`` as failed *and* as a tie, then takes the last of the digits
0, 1, 2 found in the rating text (or in the whole reply when there is no tag) as the verdict.
Here a failed judgment is kept with no winner and its reason counted; whether it counts as a tie
is the win-rate rule's choice (the arena's ``failed_judgments`` option).  A rating tag holding
none or several of 0, 1, 2 is a failure too (their digit scan would pick the largest).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pandas as pd

from isqaflow.data.peers.common import PeerRead, as_path, counted
from isqaflow.data.raw import Raw
from isqaflow.io import RecordError, read_json

FAILED_PRED = "FAIL TO GENERATE ANS."
# compute_correlation.py's rating_regex, with the tag's content captured.
_RATING = re.compile(r"<rating>(.*?)</rating>", flags=re.DOTALL)
_VERDICTS = {"1": "model_a", "2": "model_b", "0": "tie"}


def parse_rating(pred: str | None) -> tuple[str | None, str]:
    """``(winner, failure)`` of one judge reply: winner in {"model_a", "model_b", "tie"} and
    failure "" -- or winner None and the reason it failed."""
    if pred is None:
        return None, "no pred"
    if pred == FAILED_PRED:
        return None, "judge call failed ('FAIL TO GENERATE ANS.')"
    ratings = _RATING.findall(pred)
    if not ratings:
        return None, "no <rating> tag"
    digits = set(re.findall(r"[012]", ratings[-1]))
    if len(digits) != 1:
        return None, "rating tag without exactly one of 0, 1, 2"
    return _VERDICTS[digits.pop()], ""


def read_ragqa_eval_outputs(path: str | Path) -> PeerRead:
    """A RAG-QA Arena pairwise evaluation output: one row per judged query.

    ``table``: ``pair_id`` (the record's position where absent), ``query``, ``model_a`` (the
    system in position 1), ``model_b`` (position 2), ``winner`` ("model_a", "model_b", "tie",
    or None for a failed judgment), ``failure`` ("" or the reason), ``pred`` (the reply).
    ``counts``: ``"failed: <reason>"`` per reason, ``"judgments"``.  Nothing is skipped; a
    query judged twice in one file is an error (their ``aggregate_evaluators`` keys the
    judgments by query, so the second would replace the first).
    """
    path = as_path(path)
    data = read_json(path)
    if not isinstance(data, list):
        raise RecordError(path, f"expected a JSON list of judgments, got {type(data).__name__}")
    if not data:
        raise RecordError(path, "the file holds no judgments")
    rows = []
    failures: Counter = Counter()
    queries: dict[str, int] = {}
    for index, obj in enumerate(data):
        raw = Raw(path, f"#{index}", obj)
        query = raw.get("query", str)
        if not query.strip():
            raise raw.error("empty query", "query")
        if query in queries:
            raise raw.error(f"query judged twice (first: record #{queries[query]})", "query")
        queries[query] = index
        order = raw.child("order")
        model_a, model_b = order.id("1"), order.id("2")
        if model_a == model_b:
            raise raw.error("both positions hold the same system", "order")
        pair_id = raw.get("pair_id", int, index)
        pred = raw.get("pred", str, None) if "pred" in obj else None
        winner, failure = parse_rating(pred)
        if failure:
            failures[f"failed: {failure}"] += 1
        rows.append(
            {
                "pair_id": pair_id,
                "query": query,
                "model_a": model_a,
                "model_b": model_b,
                "winner": winner,
                "failure": failure,
                "pred": pred,
            }
        )
    table = pd.DataFrame(rows)
    # None, not NaN, for a failed judgment: pandas would otherwise make the column mixed.
    table["winner"] = table["winner"].astype(object).where(table["winner"].notna(), None)
    return PeerRead(str(path), table, {}, {**counted(failures), "judgments": len(rows)})
