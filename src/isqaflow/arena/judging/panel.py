"""A panel of arena judges: their agreement, the panel's verdict, and the ranking without each judge.

Several judges in ``arena.judges`` judge the same pairs (same ``pair_id`` in each judge's
``results/arena/judgments/<run>/<judge>.jsonl``).  Per run:

* **Agreement** on the pairs every judge gave a valid verdict ("1", "2", "tie"): Cohen's
  kappa for two judges, Fleiss' kappa for more, each with a 95% percentile bootstrap
  interval over pairs (:func:`isqaflow.stats.bootstrap_ci`).  Kappa is 1.0 when the judges
  used one and the same label throughout (chance agreement 1, as
  :func:`isqaflow.arena.judging.agreement.cohen_kappa` defines it).
* **The panel's verdict** per pair (``arena.panel_verdict``): ``majority`` -- the label more
  than half of the valid verdicts give, else a tie; ``unanimous`` -- the label all judges
  give, else a tie; ``dawid_skene`` -- the most likely true label under the Dawid-Skene model
  fitted on the panel's verdicts (:func:`dawid_skene_verdicts`).  No valid verdict at all:
  none (invalid).
* **Reliability** (:func:`reliability`): a latent-truth model of the panel -- Dawid-Skene
  (:mod:`isqaflow.dawid_skene`) on every pair's valid verdicts, one rater per judge -- gives
  each judge's estimated accuracy (the probability its verdict is the pair's true label,
  weighted by the labels' estimated shares), its confusion matrix's diagonal per true label, and
  its position bias: over the orders it judged (``verdict_ab`` / ``verdict_ba``), the expected
  share of orders whose truly better answer was shown second but it chose the first, minus
  the share whose better answer was shown first but it chose the second, among the orders
  whose true label is not a tie (positive: it favours the answer shown first; 0 for a judge
  without an order's verdict).
* **Leave one out**: each system's win rate against the LFRQA reference (its reference
  pairs: share of pairs it wins) under the whole panel, and under the panel without each
  judge in turn; Kendall's tau between the two orders of the systems, whether the top system
  stays (none when several share the highest rate), and the largest change of a system's rank.
  Two judges: leaving one out is the other judge alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from isqaflow.arena.judging.agreement import cohen_kappa
from isqaflow.dawid_skene import DawidSkeneFit, dawid_skene
from isqaflow.stats import bootstrap_ci

__all__ = [
    "LABELS",
    "PANEL_RULES",
    "dawid_skene_verdicts",
    "fit_panel",
    "fleiss_kappa",
    "leave_one_out",
    "panel_agreement",
    "panel_verdict",
    "rater_reliability",
    "reliability",
    "verdict_table",
    "win_rates_of",
]

LABELS = ("1", "2", "tie")
PANEL_RULES = ("majority", "unanimous", "dawid_skene")


def verdict_table(judged: Mapping[str, Sequence[Mapping[str, Any]]]) -> pd.DataFrame:
    """Pairs x judges of verdicts (None: invalid or not judged), with ``kind`` and ``system_a``/``system_b``."""
    rows: dict[str, dict[str, Any]] = {}
    for judge, records in judged.items():
        for record in records:
            row = rows.setdefault(
                record["pair_id"],
                {
                    "pair_id": record["pair_id"],
                    "kind": record.get("kind"),
                    "system_a": record["system_a"],
                    "system_b": record["system_b"],
                },
            )
            row[judge] = record["verdict"]
    table = pd.DataFrame(
        list(rows.values()), columns=["pair_id", "kind", "system_a", "system_b", *judged]
    )
    table[list(judged)] = (
        table[list(judged)].astype(object).where(table[list(judged)].notna(), None)
    )
    return table.set_index("pair_id").sort_index()


def fleiss_kappa(votes: np.ndarray) -> float:
    """Fleiss' kappa of an items x categories count matrix (every item rated by the same m > 1 raters)."""
    votes = np.asarray(votes, dtype=float)
    if votes.ndim != 2 or votes.shape[0] == 0:
        raise ValueError("fleiss_kappa needs an items x categories matrix with at least one item")
    m = votes.sum(axis=1)
    if not np.all(m == m[0]) or m[0] < 2:
        raise ValueError("fleiss_kappa needs the same number (at least 2) of ratings per item")
    m = m[0]
    observed = ((votes * (votes - 1)).sum(axis=1) / (m * (m - 1))).mean()
    shares = votes.sum(axis=0) / votes.sum()
    expected = float((shares**2).sum())
    if np.isclose(expected, 1.0):
        return 1.0
    return float((observed - expected) / (1.0 - expected))


def _kappa(labels: np.ndarray) -> float:
    """Cohen's kappa of two columns, Fleiss' of more (items x judges of labels)."""
    if labels.shape[1] == 2:
        return cohen_kappa(list(labels[:, 0]), list(labels[:, 1]), labels=LABELS)
    counts = np.stack([(labels == label).sum(axis=1) for label in LABELS], axis=1)
    return fleiss_kappa(counts)


def panel_agreement(
    table: pd.DataFrame, judges: Sequence[str], rounds: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """Kappa of ``judges`` on the pairs they all judged validly, with a bootstrap interval."""
    if len(judges) < 2:
        raise ValueError(f"agreement needs at least two judges, got {list(judges)}")
    complete = table[list(judges)].notna().all(axis=1)
    labels = table.loc[complete, list(judges)].to_numpy(dtype=object)
    kind = "Cohen" if len(judges) == 2 else "Fleiss"
    result = {
        "judges": ", ".join(judges),
        "kappa_kind": kind,
        "n": int(complete.sum()),
        "n_incomplete": int((~complete).sum()),
        "raw_agreement": np.nan,
        "kappa": np.nan,
        "lower": np.nan,
        "upper": np.nan,
    }
    if not len(labels):
        return result
    result["raw_agreement"] = float((labels == labels[:, :1]).all(axis=1).mean())
    # A judge that gives one verdict to every pair has no variance: kappa is 0 (or undefined)
    # whatever the other judges do, and every bootstrap resample repeats it -- a degenerate
    # [0, 0] interval that reads like a measurement.  Report it as not identified instead.
    constant = [
        (j, labels[0, i]) for i, j in enumerate(judges) if (labels[:, i] == labels[0, i]).all()
    ]
    if constant:
        result["not_identified"] = "; ".join(
            f"{j} gives '{v}' to all {len(labels)} pairs" for j, v in constant
        )
        return result
    boot = bootstrap_ci(
        np.arange(len(labels)),
        lambda idx: _kappa(labels[idx.astype(int)]),
        rounds=rounds,
        seed=seed,
    )
    result.update(kappa=boot["estimate"], lower=boot["lower"], upper=boot["upper"])
    return result


def panel_verdict(verdicts: Sequence[str | None], rule: str = "majority") -> str | None:
    """The panel's verdict from its judges' (None: invalid); see the module docstring.
    ``dawid_skene`` is fitted on the whole panel: :func:`dawid_skene_verdicts`."""
    if rule not in PANEL_RULES:
        raise ValueError(f"panel verdict rule must be one of {PANEL_RULES}, got {rule!r}")
    if rule == "dawid_skene":
        raise ValueError("the dawid_skene verdict is fitted on every pair: dawid_skene_verdicts")
    valid = [v for v in verdicts if v is not None]
    if not valid:
        return None
    label, count = Counter(valid).most_common(1)[0]
    if rule == "majority":
        return label if count * 2 > len(valid) else "tie"
    return label if count == len(verdicts) else "tie"


def win_rates_of(table: pd.DataFrame, judges: Sequence[str], rule: str = "majority") -> pd.Series:
    """Each system's win rate against the reference (its reference pairs) under the panel ``judges``."""
    reference = table[table["kind"] == "reference"]
    if rule == "dawid_skene":  # fitted on every pair the panel judged, not only these
        verdicts = dawid_skene_verdicts(table, judges).reindex(reference.index)
    else:
        verdicts = reference[list(judges)].apply(lambda row: panel_verdict(list(row), rule), axis=1)
    valid = verdicts.notna()
    wins = (verdicts[valid] == "1").groupby(reference.loc[valid, "system_a"]).mean()
    return wins.sort_index().rename("win_rate")


def fit_panel(table: pd.DataFrame, judges: Sequence[str]) -> DawidSkeneFit | None:
    """Dawid-Skene on the valid verdicts of ``judges`` (one rater each); None without any."""
    long = table[list(judges)].stack().dropna()
    if long.empty:
        return None
    pairs, raters = zip(*long.index, strict=True)
    return dawid_skene(list(pairs), list(raters), [str(v) for v in long])


def dawid_skene_verdicts(table: pd.DataFrame, judges: Sequence[str]) -> pd.Series:
    """Per pair the most likely true label under Dawid-Skene; None where no judge gave a valid
    verdict."""
    fit = fit_panel(table, judges)
    labels = pd.Series(dict(zip(fit.items, fit.labels(), strict=True)) if fit else {}, dtype=object)
    return labels.reindex(table.index).astype(object).where(lambda s: s.notna(), None)


# an order's verdict ("a", "b", "tie") in terms of the answer shown first or second
_SHOWN = {"ab": {"a": "first", "b": "second"}, "ba": {"a": "second", "b": "first"}}


def _position_bias(
    records: Sequence[Mapping[str, Any]], posterior: Mapping[str, Mapping[str, float]]
) -> tuple[float, int]:
    """(position bias, orders used) of one judge's records under the panel's posterior
    (pair -> label -> probability); see the module docstring."""
    first_wrong = second_wrong = decided = 0.0
    orders = 0
    for record in records:
        truth = posterior.get(record["pair_id"])
        if truth is None:
            continue
        for order, shown in _SHOWN.items():
            side = record.get(f"verdict_{order}")
            if side is None:
                continue
            # P(the answer shown first / second is truly better)
            better = {shown["a"]: truth.get("1", 0.0), shown["b"]: truth.get("2", 0.0)}
            said = shown.get(side)  # None: a tie
            first_wrong += better["second"] * (said == "first")
            second_wrong += better["first"] * (said == "second")
            decided += better["first"] + better["second"]
            orders += 1
    return (first_wrong - second_wrong) / decided if decided > 0 else np.nan, orders


def rater_reliability(
    table: pd.DataFrame,
    judges: Sequence[str],
    position_bias: Callable[[str, Mapping[str, Mapping[str, float]]], tuple[float, int]]
    | None = None,
) -> pd.DataFrame:
    """Per judge (``table``: items x judges of verdicts, None: invalid): the items it judged
    validly, its Dawid-Skene accuracy and confusion diagonal, its position bias with the orders
    it rests on (``position_bias``: judge, the model's posterior -> (bias, orders); NaN and 0
    without), its agreement with the model's verdict, and the model's label shares."""
    fit = fit_panel(table, judges)
    if fit is None:
        return pd.DataFrame({"judge": list(judges)})
    posterior = {
        item: dict(zip(fit.classes, row, strict=True))
        for item, row in zip(fit.items, fit.probas, strict=True)
    }
    verdicts = pd.Series(dict(zip(fit.items, fit.labels(), strict=True)))
    accuracy = fit.accuracy()
    rows = []
    for judge in judges:
        valid = table[judge].dropna()
        w = fit.raters.index(judge) if judge in fit.raters else None
        bias, orders = position_bias(judge, posterior) if position_bias else (np.nan, 0)
        row: dict[str, Any] = {
            "judge": judge,
            "items": len(valid),
            "accuracy": np.nan if w is None else float(accuracy[w]),
        }
        for k, label in enumerate(fit.classes):
            row[f"correct if truth {label}"] = np.nan if w is None else float(fit.errors[w, k, k])
        row["position_bias"] = bias
        row["orders"] = orders
        row["agrees_with_model"] = (
            float((valid == verdicts.reindex(valid.index)).mean()) if len(valid) else np.nan
        )
        for k, label in enumerate(fit.classes):
            row[f"share {label}"] = float(fit.priors[k])
        row["iterations"] = fit.iterations
        rows.append(row)
    return pd.DataFrame(rows)


def reliability(
    judged: Mapping[str, Sequence[Mapping[str, Any]]], judges: Sequence[str]
) -> pd.DataFrame:
    """:func:`rater_reliability` of a panel of arena judges (``judged``: judge -> its records of
    one run; items: pairs), with each judge's position bias from its orders' verdicts."""
    return rater_reliability(
        verdict_table({j: judged[j] for j in judges}),
        judges,
        lambda judge, posterior: _position_bias(judged[judge], posterior),
    )


def _top(rates: pd.Series) -> str | None:
    """The system with the highest rate; None without rates or when several share the highest
    (a tie has no top system: the first name of a tie would pass for one)."""
    rates = rates.dropna()
    if rates.empty or (rates == rates.max()).sum() > 1:
        return None
    return str(rates.idxmax())


def _ranks(rates: pd.Series) -> pd.Series:
    return rates.rank(ascending=False, method="min")


def leave_one_out(
    table: pd.DataFrame, judges: Sequence[str], rule: str = "majority"
) -> pd.DataFrame:
    """Per judge left out: the ranking's agreement with the whole panel's (see the module docstring)."""
    full = win_rates_of(table, judges, rule)
    rows = []
    for left_out in judges:
        kept = [j for j in judges if j != left_out]
        rates = win_rates_of(table, kept, rule).reindex(full.index)
        both = full.notna() & rates.notna()
        tau = float(kendalltau(full[both], rates[both]).statistic) if both.sum() >= 2 else np.nan
        shift = (_ranks(full[both]) - _ranks(rates[both])).abs()
        top_full, top = _top(full), _top(rates)
        rows.append(
            {
                "left_out": left_out,
                "judges_kept": ", ".join(kept),
                "systems": int(both.sum()),
                "kendall_tau": tau,
                "top_system": top,
                "top_system_panel": top_full,
                "top_same": None if top is None or top_full is None else top == top_full,
                "max_rank_shift": float(shift.max()) if len(shift) else np.nan,
            }
        )
    return pd.DataFrame(rows)
