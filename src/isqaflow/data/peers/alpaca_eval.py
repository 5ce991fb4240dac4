"""AlpacaEval's annotation files (tatsu-lab/alpaca_eval): soft pairwise preferences.

``results/<model>/<annotator>/annotations.json``, as alpaca_eval's ``PairwiseAnnotator``
writes it: a JSON list, one object per instruction with ``instruction``, ``generator_1`` (the
baseline, e.g. gpt4_1106_preview), ``output_1``, ``generator_2`` (the model), ``output_2`` and
``preference``: 1 = the baseline's output preferred, 2 = the model's, and in between the
judge's probability (``weighted_alpaca_eval_gpt4_turbo`` reads it from the log-probabilities),
so the raw win rate is the mean of ``preference - 1``
(``metrics/helpers.py: BaseScoringRule.describe_head2head``).
"""

from __future__ import annotations

from collections import Counter
from numbers import Real
from pathlib import Path

import pandas as pd

from isqaflow.data.peers.common import PeerRead, as_path, counted, is_missing_number
from isqaflow.data.raw import Raw
from isqaflow.io import RecordError, read_json

COLUMNS = ("instruction", "generator_1", "generator_2", "output_1", "output_2", "preference")


def read_alpaca_eval_annotations(path: str | Path) -> PeerRead:
    """An ``annotations.json`` file: one row per annotated instruction.

    ``table``: ``instruction``, ``generator_1`` (the baseline), ``generator_2``, ``output_1``,
    ``output_2``, ``preference`` (float in [1, 2]), ``dataset`` ("" where absent), ``index``
    (the record's position in the file).  Every preference is range-checked: a number outside
    [1, 2] is an error naming the record, except 0, which alpaca_eval reads as a draw (its
    ``preprocess_predictions`` maps 0 to 1.5, "backward compatibility") -- read as 1.5 here
    too and counted in ``counts``.  A null or NaN preference (the annotator gave none)
    alpaca_eval drops from the win rate (``describe_head2head``: "drop N outputs that are not
    preferences"); here it is left out of ``table`` and counted in ``skipped``.
    """
    path = as_path(path)
    data = read_json(path)
    if not isinstance(data, list):
        raise RecordError(path, f"expected a JSON list of annotations, got {type(data).__name__}")
    rows = []
    skipped: Counter = Counter()
    notes: Counter = Counter()
    for index, obj in enumerate(data):
        raw = Raw(path, f"#{index}", obj)
        row = {key: raw.get(key, str) for key in COLUMNS[:-1]}
        for key in ("generator_1", "generator_2"):
            if not row[key].strip():
                raise raw.error("empty generator name", key)
        if row["generator_1"] == row["generator_2"]:
            raise raw.error("the baseline is the judged model", "generator_2")
        if "preference" not in obj:
            raise raw.error("missing field", "preference")
        preference = obj["preference"]
        if is_missing_number(preference):
            skipped["preference null or NaN (alpaca_eval drops it from the win rate)"] += 1
            continue
        if isinstance(preference, bool) or not isinstance(preference, Real):
            raise raw.error(
                f"expected a number in [1, 2], got {type(preference).__name__}", "preference"
            )
        preference = float(preference)
        if preference == 0.0:
            notes["preference 0 read as a draw (1.5), as alpaca_eval does"] += 1
            preference = 1.5
        elif not 1.0 <= preference <= 2.0:
            raise raw.error(f"preference {preference!r} is outside [1, 2]", "preference")
        row["preference"] = preference
        row["dataset"] = raw.get("dataset", str, "")
        row["index"] = index
        rows.append(row)
    if not data:
        raise RecordError(path, "the file holds no annotations")
    table = pd.DataFrame(rows, columns=[*COLUMNS, "dataset", "index"])
    table["preference"] = table["preference"].astype(float)
    counts = {**counted(notes), "annotations": len(data), "preferences": len(rows)}
    return PeerRead(str(path), table, counted(skipped), counts)


def raw_win_rate(read: PeerRead) -> float:
    """alpaca_eval's ``win_rate``: the mean of ``preference - 1``, x100, over the preferences read
    (the skipped ones left out, as alpaca_eval leaves them out)."""
    if read.table.empty:
        raise ValueError(f"{read.path}: no preferences to average")
    return float((read.table["preference"] - 1.0).mean() * 100.0)


# The columns of length_controlled_v1_weights_<...>.csv: alpaca_eval's GLM formula terms.
WEIGHT_COLUMNS = {
    "np.tanh(std_delta_len)": "phi",
    "instruction_difficulty": "psi",
    "not_gamed_baseline.astype(float)": "theta",
}


def read_alpaca_eval_lc_weights(path: str | Path) -> PeerRead:
    """``length_controlled_v1_weights_baseline_<baseline>.csv``: each model's published
    ``length_controlled_v1`` coefficients, one row per model (the first, unnamed column), one
    column per term of alpaca_eval's formula.

    ``table``: indexed by model, columns ``theta`` (``not_gamed_baseline``), ``phi`` and ``psi``.
    alpaca_eval's length term is ``tanh(std_delta_len)`` with the difference *baseline minus
    model*; ``phi`` here is its negative, in this project's direction (model minus baseline:
    positive when the judge favours length, as :mod:`isqaflow.arena.ratings.length_v1`).  A
    missing column, a model twice or a value that is not a finite number is an error naming
    the line and the field."""
    path = as_path(path)
    frame = pd.read_csv(path, index_col=0, dtype=str, keep_default_na=False)
    missing = sorted(set(WEIGHT_COLUMNS) - set(frame.columns))
    if missing:
        raise RecordError(path, f"missing columns {missing}", line=1)
    if frame.index.duplicated().any():
        model = frame.index[frame.index.duplicated()][0]
        raise RecordError(path, "model twice", record=model)
    values = {}
    for column, name in WEIGHT_COLUMNS.items():
        numbers = pd.to_numeric(frame[column], errors="coerce")
        bad = ~(numbers.abs() < float("inf"))  # NaN (not a number) compares False too
        if bad.any():
            i = int(bad.to_numpy().argmax())
            raise RecordError(
                path,
                f"not a finite number: {frame[column].iloc[i]!r}",
                record=frame.index[i],
                field=column,
                line=i + 2,
            )
        values[name] = numbers.astype(float)
    table = pd.DataFrame(values)[["theta", "phi", "psi"]]
    table["phi"] = -table["phi"]
    table.index.name = "model"
    return PeerRead(str(path), table, {}, {"models": len(table)})
