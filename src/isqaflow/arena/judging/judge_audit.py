"""Judges you can audit (rule judge_audit): self-preference, judge noise, canaries and the panel.

Tables (``results/tables/judges_*.{csv,md}``):

* ``judges_self_preference`` -- every judge x system of the run (DRFR and arena, ISQA's
  summaries as ``summaries:<summarizer>``) with both model families and the flag
  ``self_family`` (:mod:`isqaflow.configcheck.families`); for the arena's answerers, the
  system's win rate against the reference under each judge (per run), so that a system a
  judge of its own family rates can be read beside its rate under a judge of another family.
* ``judges_noise`` -- per arena judge and run: the repetitions (``repeats``), the pairs, how
  many changed verdict across the repetitions and the flip rate (their share; NaN when the
  judge judged once), and ``canary``: whether the judge's known-answer controls changed since
  the previous run's manifest (:mod:`isqaflow.report.canaries`).
* ``judges_noise_win_rates`` -- for a repeated judge, each system's win rate against the
  reference with a bootstrap interval over pairs and one that includes the judge's variance
  (:func:`win_rate_intervals`).
* ``judges_canaries`` -- per judge (DRFR and arena), control and verdict rule: n, correct,
  invalid now, and now vs the previous manifest.
* ``judges_panel`` -- per run, the agreement of the arena judges (with two or more) and the
  panel's verdict rule; ``judges_panel_loo`` -- the ranking when each judge is left out
  (:mod:`isqaflow.arena.judging.panel`).  With one judge both say so in one row.

``results/judges/canaries.json``: this run's control summary, which the manifest copies.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from isqaflow.arena.judging.panel import leave_one_out, panel_agreement, verdict_table, win_rates_of
from isqaflow.io import read_jsonl, write_json
from isqaflow.report.canaries import (
    NO_PREVIOUS,
    compare_canaries,
    previous_canaries,
    summarize_canaries,
)
from isqaflow.report.tables import write_table
from isqaflow.seeds import keyed_rng

log = logging.getLogger(__name__)

__all__ = ["TABLES", "canary_table", "flip_rates", "noise_table", "noise_win_rates", "panel_tables",
           "run_judge_audit", "self_preference_table", "win_rate_intervals"]

TABLES = ("self_preference", "noise", "noise_win_rates", "canaries", "panel", "panel_loo")
ONE_JUDGE = "one judge: no panel (add a second arena judge)"


def flip_rates(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Repetitions, pairs, pairs whose verdict changed across them, and their share (NaN: judged once)."""
    repeated = [r["repetitions"] for r in records if r.get("repetitions")]
    repeats = max((len(reps) for reps in repeated), default=1)
    flipped = sum(len({rep["verdict"] for rep in reps}) > 1 for reps in repeated)
    return {"repeats": repeats, "pairs": len(records), "pairs_flipped": flipped if repeated else np.nan,
            "flip_rate": flipped / len(repeated) if repeated else np.nan}


def win_rate_intervals(records: Sequence[Mapping[str, Any]], rounds: int = 1000, seed: int = 0,
                       alpha: float = 0.05, key: str = "") -> pd.DataFrame:
    """Each system's win rate against the reference from a repeated judge, with two intervals.

    Per system (its reference pairs that carry ``repetitions``): the win rate of the first
    repetition (what the tables report), the mean over the repetitions, the percentile bootstrap
    interval over pairs of the first repetition (the tables' kind: it ignores the judge's noise)
    and one that includes the judge's variance: each round resamples the pairs and, for each,
    one of its repetitions at random (a two-stage bootstrap).  An invalid verdict is left out.
    """
    wins: dict[str, list[list[float]]] = {}
    for record in records:
        if record.get("kind") == "reference" and record.get("repetitions"):
            wins.setdefault(record["system_a"], []).append(
                [np.nan if rep["verdict"] is None else float(rep["verdict"] == "1") for rep in record["repetitions"]])
    rows = []
    for system, values in sorted(wins.items()):
        matrix = np.array(values, dtype=float)
        n, k = matrix.shape
        rng = keyed_rng(seed, f"judge-noise:{key}:{system}")
        pairs = rng.integers(0, n, size=(rounds, n))
        repetition = rng.integers(0, k, size=(rounds, n))
        with warnings.catch_warnings():  # a resample of invalid verdicts only: NaN, left out
            warnings.simplefilter("ignore", RuntimeWarning)
            only_pairs = np.nanmean(matrix[pairs, 0], axis=1)
            with_judge = np.nanmean(matrix[pairs, repetition], axis=1)
            first, mean = np.nanmean(matrix[:, 0]), np.nanmean(matrix)
        bounds = [alpha / 2, 1 - alpha / 2]
        lower, upper = np.nanquantile(only_pairs, bounds) if np.isfinite(only_pairs).any() else (np.nan, np.nan)
        lower_j, upper_j = np.nanquantile(with_judge, bounds) if np.isfinite(with_judge).any() else (np.nan, np.nan)
        rows.append({"system": system, "repeats": k, "n": n, "win_rate": first, "win_rate_mean": mean,
                     "lower_pairs": lower, "upper_pairs": upper, "lower_with_judge": lower_j,
                     "upper_with_judge": upper_j})
    return pd.DataFrame(rows, columns=["system", "repeats", "n", "win_rate", "win_rate_mean", "lower_pairs",
                                       "upper_pairs", "lower_with_judge", "upper_with_judge"])


def noise_win_rates(judged: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]], rounds: int,
                    seed: int) -> pd.DataFrame:
    """:func:`win_rate_intervals` of every repeated arena judge and run."""
    frames = [win_rate_intervals(records, rounds, seed, key=f"{run}.{judge}").assign(run=run, judge=judge)
              for run, judges in judged.items() for judge, records in judges.items()]
    table = pd.concat(frames, ignore_index=True) if frames else win_rate_intervals([])
    table = table.reindex(columns=["run", "judge", *win_rate_intervals([]).columns])
    return table


def _canary_of_judge(judge: str, status: Mapping[str, str], summary: Mapping[str, Mapping[str, Any]]) -> str:
    """One judge's canary over its controls (``summary``: the arena judges' only)."""
    mine = [status[key] for key, entry in summary.items() if entry["judge"] == judge]
    if not mine:
        return "no controls"
    if "changed" in mine:
        return "changed"
    return "unchanged" if all(s == "unchanged" for s in mine) else NO_PREVIOUS


def noise_table(judged: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]], status: Mapping[str, str],
                summary: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Per arena judge and run: repetitions, flips, flip rate, canary (``summary``: arena controls)."""
    rows = [{"run": run, "judge": judge, **flip_rates(records), "canary": _canary_of_judge(judge, status, summary)}
            for run, judges in judged.items() for judge, records in judges.items()]
    return pd.DataFrame(rows, columns=["run", "judge", "repeats", "pairs", "pairs_flipped", "flip_rate", "canary"])


def canary_table(summary: Mapping[str, Mapping[str, Any]], status: Mapping[str, str],
                 previous: Mapping[str, Mapping[str, Any]] | None) -> pd.DataFrame:
    rows = []
    for key, entry in summary.items():
        before = (previous or {}).get(key) or {}
        rows.append({"instrument": entry["instrument"], "judge": entry["judge"], "control": entry["control"],
                     "rule": entry["rule"], "n": entry["n"], "correct": entry["n_correct"],
                     "invalid": entry["n_invalid"], "correct_before": before.get("n_correct"),
                     "canary": status[key]})
    return pd.DataFrame(rows, columns=["instrument", "judge", "control", "rule", "n", "correct", "invalid",
                                       "correct_before", "canary"])


def self_preference_table(pairs: Sequence[Mapping[str, Any]],
                          judged: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]) -> pd.DataFrame:
    """``pairs``: :meth:`JudgedSystem.as_dict` rows; the arena's gain a row per run with the win rate."""
    rows = []
    for pair in pairs:
        if pair["suite"] != "arena" or not judged:
            rows.append({"run": "", **pair, "win_rate": np.nan, "n": np.nan})
            continue
        for run, judges in judged.items():
            records = judges.get(pair["judge"], [])
            mine = [r for r in records if r.get("kind") == "reference" and r["system_a"] == pair["system"]]
            valid = [r for r in mine if r["verdict"] is not None]
            rate = sum(r["verdict"] == "1" for r in valid) / len(valid) if valid else np.nan
            rows.append({"run": run, **pair, "win_rate": rate, "n": len(valid)})
    columns = ["suite", "run", "judge", "judge_family", "system", "system_family", "self_family", "win_rate", "n"]
    return pd.DataFrame(rows)[columns] if rows else pd.DataFrame(columns=columns)


def _side_by_side(table: pd.DataFrame) -> pd.DataFrame:
    """The Markdown view: one row per suite, run and system, one column per judge and its family
    ("SELF" flags; a family not given reads "unknown")."""
    cell = table.apply(lambda r: ("n/a" if pd.isna(r["win_rate"]) else f"{100 * r['win_rate']:.1f}% (n={r['n']:.0f})")
                       + (" SELF" if r["self_family"] else ""), axis=1)
    judge = table["judge"] + " (" + table["judge_family"].fillna("unknown") + ")"
    wide = table.assign(cell=cell, judge=judge, system_family=table["system_family"].fillna("unknown"))
    wide = wide.set_index(["suite", "run", "system", "system_family", "judge"])["cell"].unstack("judge")
    return wide.reset_index().fillna("")


def panel_tables(judged: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]], rule: str, rounds: int,
                 seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(agreement per run, leave-one-out per run and judge)."""
    agreement, loo = [], []
    for run, judges in judged.items():
        names = list(judges)
        if len(names) < 2:
            agreement.append({"run": run, "judges": ", ".join(names), "panel_verdict": rule, "note": ONE_JUDGE})
            loo.append({"run": run, "left_out": "", "note": ONE_JUDGE})
            continue
        table = verdict_table(judges)
        agreement.append({"run": run, **panel_agreement(table, names, rounds, seed), "panel_verdict": rule,
                          "note": ""})
        rates = win_rates_of(table, names, rule)
        log.info("%s: panel win rates %s", run, rates.round(3).to_dict())
        loo += [{"run": run, **row, "note": ""} for row in leave_one_out(table, names, rule).to_dict("records")]
    return pd.DataFrame(agreement), pd.DataFrame(loo)


def _write(df: pd.DataFrame, stem: Path, caption: str, markdown: pd.DataFrame | None = None) -> None:
    write_table(df, [f"{stem}.csv"], digits=3)
    write_table(df if markdown is None else markdown, [f"{stem}.md"], digits=3, caption=caption)


CAPTIONS = {
    "self_preference": "Judge x system with model families; SELF: the judge judges its own family (or model), "
                       "whose verdicts may favour it. Win rate vs the reference per arena judge.",
    "noise": "Judge noise: share of pairs whose verdict changed across the judge's repetitions (NaN: judged "
             "once); canary: its known-answer controls vs the previous run's manifest.",
    "noise_win_rates": "Win rate vs the reference of a repeated judge's systems: first repetition, mean over "
                       "repetitions, 95% bootstrap interval over pairs only and with the judge's variance (a "
                       "repetition drawn per pair). Empty: no judge repeats its judgments.",
    "canaries": "Known-answer controls now vs the previous run's manifest (changed / unchanged / no previous run).",
    "panel": "Agreement of the arena judges on the pairs all judged validly (Cohen's kappa for 2, Fleiss' for "
             "more; 95% bootstrap interval over pairs).",
    "panel_loo": "The ranking by win rate vs the reference (panel verdict) with each judge left out: Kendall's "
                 "tau against the whole panel, top system, largest rank change.",
}


def run_judge_audit(judged_paths: Mapping[str, Mapping[str, str]], validity_paths: Mapping[str, Sequence[str]],
                    judge_pairs: Sequence[Mapping[str, Any]], previous_manifest: str | Path, tables_dir: str | Path,
                    canaries_path: str | Path, panel_rule: str = "majority", rounds: int = 1000,
                    seed: int = 0) -> None:
    """Entry point of rule judge_audit: ``judged_paths`` run -> judge -> judged pairs file;
    ``validity_paths`` suite ("arena", "drfr") -> its judges' control records."""
    judged = {run: {judge: [rec for _, rec in read_jsonl(path)] for judge, path in judges.items()}
              for run, judges in judged_paths.items()}
    arena = summarize_canaries(validity_paths.get("arena", ()))
    summary = {**arena, **summarize_canaries(validity_paths.get("drfr", ()))}
    previous = previous_canaries(previous_manifest)
    status = compare_canaries(summary, previous)
    log.info("canaries vs %s: %s", previous_manifest, dict(sorted(pd.Series(status).value_counts().items()))
             if status else "none")
    write_json(canaries_path, summary)
    out = Path(tables_dir)
    selfpref = self_preference_table(judge_pairs, judged)
    _write(selfpref, out / "judges_self_preference", CAPTIONS["self_preference"], _side_by_side(selfpref))
    _write(noise_table(judged, status, arena), out / "judges_noise", CAPTIONS["noise"])
    _write(noise_win_rates(judged, rounds, seed), out / "judges_noise_win_rates", CAPTIONS["noise_win_rates"])
    _write(canary_table(summary, status, previous), out / "judges_canaries", CAPTIONS["canaries"])
    agreement, loo = panel_tables(judged, panel_rule, rounds, seed)
    _write(agreement, out / "judges_panel", CAPTIONS["panel"])
    _write(loo, out / "judges_panel_loo", CAPTIONS["panel_loo"])
