"""Judges you can audit (rule judge_audit): self-preference, judge noise, canaries and the panel.

Tables (``results/tables/judges_*.{csv,md}``):

* ``judges_self_preference`` -- every judge x system of the run (DRFR and arena, ISQA's
  summaries as ``summaries:<summarizer>``) with both model families and the flag
  ``self_family`` (:mod:`isqaflow.configcheck.families`); for the arena's answerers, the
  system's win rate against the reference under each judge (per run), so that a system a
  judge of its own family rates can be read beside its rate under a judge of another family.
* ``judges_noise`` -- per judge and run (arena: retrieval run and pairs; DRFR: dataset and
  judgments): the repetitions (``repeats``), the items, how many changed verdict across the
  repetitions and the flip rate (their share; NaN when the judge judged once), what that rate
  is (``flip_rate_is``: 0 by construction for a deterministic log-prob judge, else measured),
  and ``canary``: whether the judge's known-answer controls changed since the previous run's
  manifest (:mod:`isqaflow.report.canaries`).
* ``judges_noise_win_rates`` -- for a repeated judge, each system's win rate against the
  reference with a bootstrap interval over pairs and one that includes the judge's variance
  (:func:`win_rate_intervals`).
* ``judges_canaries`` -- per judge (DRFR and arena), control and verdict rule: n, correct,
  invalid now, and now vs the previous manifest.
* ``judges_panel`` -- per run, the agreement of the arena judges (with two or more) and the
  panel's verdict rule; ``judges_panel_loo`` -- the ranking when each judge is left out;
  ``judges_panel_reliability`` -- each judge's accuracy and position bias under the Dawid-Skene
  model of the panel, beside kappa (:mod:`isqaflow.arena.judging.panel`).  With one judge both say so in one row; a judge that reuses
  another's calls (``reuse_calls``) is named in the note: not an independent judge.

Every caption ends with the known-answer controls of the judges the table is built on.

``results/judges/canaries.json``: this run's control summary, which the manifest copies.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from isqaflow.arena.judging.audit_tables import TABLES
from isqaflow.arena.judging.panel import (
    leave_one_out,
    panel_agreement,
    rater_reliability,
    reliability,
    verdict_table,
    win_rates_of,
)
from isqaflow.io import read_json, read_jsonl, write_json
from isqaflow.report.canaries import (
    NO_PREVIOUS,
    compare_canaries,
    previous_canaries,
    summarize_canaries,
)
from isqaflow.report.tables import write_table
from isqaflow.report.validity import validity_note
from isqaflow.seeds import keyed_rng
from isqaflow.suites.drfr import JUDGE as DRFR_JUDGE
from isqaflow.suites.arena import JUDGE as ARENA_JUDGE

log = logging.getLogger(__name__)

__all__ = [
    "TABLES",
    "JudgeAudit",
    "canary_table",
    "flip_rates",
    "noise_table",
    "noise_win_rates",
    "panel_tables",
    "reliability_table",
    "run_judge_audit",
    "self_preference_table",
    "win_rate_intervals",
]

ONE_JUDGE = "one judge: no panel (add a second arena judge)"


def flip_rates(records: Sequence[Mapping[str, Any]], key: str = "verdict") -> dict[str, Any]:
    """Repetitions, items, items whose ``key`` (an arena pair's verdict, a DRFR judgment's answer)
    changed across them, and their share (NaN: judged once)."""
    repeated = [r["repetitions"] for r in records if r.get("repetitions")]
    repeats = max((len(reps) for reps in repeated), default=1)
    flipped = sum(len({rep[key] for rep in reps}) > 1 for reps in repeated)
    return {
        "repeats": repeats,
        "items": len(records),
        "items_flipped": flipped if repeated else np.nan,
        "flip_rate": flipped / len(repeated) if repeated else np.nan,
    }


def flip_rate_kind(repeats: int, judge: Mapping[str, Any]) -> str:
    """What a judge's flip rate is (``judge``: its config entry, mode and generation): a log-prob
    judge scores the same calls to the same numbers, so its flip rate is 0 by construction, not
    measured noise; a text judge's is measured, with sampling or greedy."""
    if judge.get("mode") == "logprob":
        made = "judged once" if repeats <= 1 else f"{repeats} repetitions"
        return f"0 by construction ({made}: log-prob scoring is deterministic; not measured noise)"
    if repeats <= 1:
        return "not measured (judged once; set repeats)"
    sampling = (judge.get("generation") or {}).get("do_sample")
    return f"measured ({repeats} repetitions, " + (
        "sampling, seed + repetition)"
        if sampling
        else "greedy decoding: an API's own variation only)"
    )


def win_rate_intervals(
    records: Sequence[Mapping[str, Any]],
    rounds: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    key: str = "",
) -> pd.DataFrame:
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
                [
                    np.nan if rep["verdict"] is None else float(rep["verdict"] == "1")
                    for rep in record["repetitions"]
                ]
            )
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
        lower, upper = (
            np.nanquantile(only_pairs, bounds)
            if np.isfinite(only_pairs).any()
            else (np.nan, np.nan)
        )
        lower_j, upper_j = (
            np.nanquantile(with_judge, bounds)
            if np.isfinite(with_judge).any()
            else (np.nan, np.nan)
        )
        rows.append(
            {
                "system": system,
                "repeats": k,
                "n": n,
                "win_rate": first,
                "win_rate_mean": mean,
                "lower_pairs": lower,
                "upper_pairs": upper,
                "lower_with_judge": lower_j,
                "upper_with_judge": upper_j,
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "system",
            "repeats",
            "n",
            "win_rate",
            "win_rate_mean",
            "lower_pairs",
            "upper_pairs",
            "lower_with_judge",
            "upper_with_judge",
        ],
    )


def noise_win_rates(
    judged: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]], rounds: int, seed: int
) -> pd.DataFrame:
    """:func:`win_rate_intervals` of every repeated arena judge and run."""
    frames = [
        win_rate_intervals(records, rounds, seed, key=f"{run}.{judge}").assign(run=run, judge=judge)
        for run, judges in judged.items()
        for judge, records in judges.items()
    ]
    table = pd.concat(frames, ignore_index=True) if frames else win_rate_intervals([])
    table = table.reindex(columns=["run", "judge", *win_rate_intervals([]).columns])
    return table


def _canary_of_judge(
    instrument: str, judge: str, status: Mapping[str, str], summary: Mapping[str, Mapping[str, Any]]
) -> str:
    """One judge's canary over its controls (``instrument``: "arena judge" or "DRFR judge")."""
    mine = [
        status[key]
        for key, entry in summary.items()
        if entry["judge"] == judge and entry["instrument"] == instrument
    ]
    if not mine:
        return "no controls"
    if "changed" in mine:
        return "changed"
    return "unchanged" if all(s == "unchanged" for s in mine) else NO_PREVIOUS


NOISE_COLUMNS = [
    "suite",
    "run",
    "judge",
    "repeats",
    "items",
    "items_flipped",
    "flip_rate",
    "flip_rate_is",
    "canary",
]


def noise_table(
    judged: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]],
    status: Mapping[str, str],
    summary: Mapping[str, Mapping[str, Any]],
    drfr: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]] | None = None,
    judges: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
) -> pd.DataFrame:
    """Per judge and run (arena: retrieval run, pairs; DRFR: dataset, judgments): repetitions,
    flips, flip rate, what that rate is (:func:`flip_rate_kind`; ``judges``: suite -> judge ->
    its config entry) and the canary (``summary``: the controls of both suites)."""
    judges = judges or {}
    rows = []
    for suite, runs, key, instrument in (
        ("arena", judged, "verdict", ARENA_JUDGE),
        ("drfr", drfr or {}, "answer", DRFR_JUDGE),
    ):
        for run, by_judge in runs.items():
            for judge, records in by_judge.items():
                rates = flip_rates(records, key)
                rows.append(
                    {
                        "suite": suite,
                        "run": run,
                        "judge": judge,
                        **rates,
                        "flip_rate_is": flip_rate_kind(
                            rates["repeats"], judges.get(suite, {}).get(judge, {})
                        ),
                        "canary": _canary_of_judge(instrument, judge, status, summary),
                    }
                )
    return pd.DataFrame(rows, columns=NOISE_COLUMNS)


def canary_table(
    summary: Mapping[str, Mapping[str, Any]],
    status: Mapping[str, str],
    previous: Mapping[str, Mapping[str, Any]] | None,
) -> pd.DataFrame:
    rows = []
    for key, entry in summary.items():
        before = (previous or {}).get(key) or {}
        rows.append(
            {
                "instrument": entry["instrument"],
                "judge": entry["judge"],
                "control": entry["control"],
                "rule": entry["rule"],
                "n": entry["n"],
                "correct": entry["n_correct"],
                "invalid": entry["n_invalid"],
                "correct_before": before.get("n_correct"),
                "canary": status[key],
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "instrument",
            "judge",
            "control",
            "rule",
            "n",
            "correct",
            "invalid",
            "correct_before",
            "canary",
        ],
    )


def self_preference_table(
    pairs: Sequence[Mapping[str, Any]],
    judged: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]],
) -> pd.DataFrame:
    """``pairs``: :meth:`JudgedSystem.as_dict` rows; the arena's gain a row per run with the win rate."""
    rows = []
    for pair in pairs:
        if pair["suite"] != "arena" or not judged:
            rows.append({"run": "", **pair, "win_rate": np.nan, "n": np.nan})
            continue
        for run, judges in judged.items():
            records = judges.get(pair["judge"], [])
            mine = [
                r
                for r in records
                if r.get("kind") == "reference" and r["system_a"] == pair["system"]
            ]
            valid = [r for r in mine if r["verdict"] is not None]
            rate = sum(r["verdict"] == "1" for r in valid) / len(valid) if valid else np.nan
            rows.append({"run": run, **pair, "win_rate": rate, "n": len(valid)})
    columns = [
        "suite",
        "run",
        "judge",
        "judge_family",
        "system",
        "system_family",
        "self_family",
        "win_rate",
        "n",
    ]
    return pd.DataFrame(rows)[columns] if rows else pd.DataFrame(columns=columns)


def _side_by_side(table: pd.DataFrame) -> pd.DataFrame:
    """The Markdown view: one row per suite, run and system, one column per judge and its family
    ("SELF" flags; a family not given reads "unknown")."""
    cell = table.apply(
        lambda r: (
            ("n/a" if pd.isna(r["win_rate"]) else f"{100 * r['win_rate']:.1f}% (n={r['n']:.0f})")
            + (" SELF" if r["self_family"] else "")
        ),
        axis=1,
    )
    judge = table["judge"] + " (" + table["judge_family"].fillna("unknown") + ")"
    wide = table.assign(
        cell=cell, judge=judge, system_family=table["system_family"].fillna("unknown")
    )
    wide = wide.set_index(["suite", "run", "system", "system_family", "judge"])["cell"].unstack(
        "judge"
    )
    return wide.reset_index().fillna("")


def reuse_note(names: Sequence[str], reuse: Mapping[str, str]) -> str:
    """The panel's note on judges that reuse another judge's calls (``reuse``: judge -> the judge
    whose calls it reuses): their agreement measures two verdict rules on the same calls."""
    shared = [
        f"{judge} reads {source}'s model calls (reuse_calls: the same model and prompt, another "
        "verdict rule)"
        for judge, source in reuse.items()
        if judge in names and source in names
    ]
    if not shared:
        return ""
    return (
        "; ".join(shared)
        + ": not independent judges -- their agreement is that of two rules on one judge"
    )


def panel_tables(
    judged: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]],
    rule: str,
    rounds: int,
    seed: int,
    reuse: Mapping[str, str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(agreement per run, leave-one-out per run and judge); ``reuse``: :func:`reuse_note`."""
    agreement, loo = [], []
    for run, judges in judged.items():
        names = list(judges)
        if len(names) < 2:
            agreement.append(
                {"run": run, "judges": ", ".join(names), "panel_verdict": rule, "note": ONE_JUDGE}
            )
            loo.append({"run": run, "left_out": "", "note": ONE_JUDGE})
            continue
        table = verdict_table(judges)
        note = reuse_note(names, reuse or {})
        agreement.append(
            {
                "run": run,
                **panel_agreement(table, names, rounds, seed),
                "panel_verdict": rule,
                "note": note,
            }
        )
        rates = win_rates_of(table, names, rule)
        log.info("%s: panel win rates %s", run, rates.round(3).to_dict())
        loo += [
            {"run": run, **row, "note": note}
            for row in leave_one_out(table, names, rule).to_dict("records")
        ]
    return pd.DataFrame(agreement), pd.DataFrame(loo)


def drfr_verdict_table(judged: Mapping[str, Sequence[Mapping[str, Any]]]) -> pd.DataFrame:
    """Decomposed questions (``<model>|<instruction_id>#<question_index>``) x DRFR judges of
    their answers (YES/NO; INVALID or not judged: None)."""
    table: dict[str, dict[str, Any]] = {}
    for judge, records in judged.items():
        for r in records:
            item = f"{r.get('model', '')}|{r['instruction_id']}#{r['question_index']}"
            table.setdefault(item, {})[judge] = None if r["answer"] == "INVALID" else r["answer"]
    frame = pd.DataFrame.from_dict(table, orient="index", columns=list(judged)).sort_index()
    return frame.astype(object).where(frame.notna(), None)


def reliability_table(
    judged: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]],
    reuse: Mapping[str, str] | None = None,
    drfr: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]] | None = None,
) -> pd.DataFrame:
    """Per suite, run (arena: retrieval run; DRFR: dataset) and judge of a panel:
    :func:`isqaflow.arena.judging.panel.reliability` for the arena (``reuse``:
    :func:`reuse_note`), :func:`~isqaflow.arena.judging.panel.rater_reliability` on the
    decomposed questions for DRFR (one response per judgment: no position); one row saying so
    where a run has one judge."""
    rows = []
    for suite, runs in (("arena", judged), ("drfr", drfr or {})):
        for run, judges in runs.items():
            names = list(judges)
            if len(names) < 2:
                rows.append(
                    {"suite": suite, "run": run, "judge": ", ".join(names), "note": ONE_JUDGE}
                )
                continue
            if suite == "arena":
                note, table = reuse_note(names, reuse or {}), reliability(judges, names)
            else:
                note = "one response per judgment: no position to favour"
                table = rater_reliability(drfr_verdict_table(judges), names)
            rows += [
                {"suite": suite, "run": run, **row, "note": note}
                for row in table.to_dict("records")
            ]
    return pd.DataFrame(rows)


def _write(
    df: pd.DataFrame, stem: Path, caption: str, markdown: pd.DataFrame | None = None
) -> None:
    write_table(df, [f"{stem}.csv"], digits=3)
    write_table(df if markdown is None else markdown, [f"{stem}.md"], digits=3, caption=caption)


CAPTIONS = {
    "self_preference": "Judge x system with model families; SELF: the judge judges its own family (or model), "
    "whose verdicts may favour it. Win rate vs the reference per arena judge.",
    "noise": "Judge noise per judge: share of items (arena pairs, DRFR judgments) whose verdict changed across "
    "the judge's repetitions (NaN: judged once); flip_rate_is: measured, or 0 by construction (a "
    "log-prob judge is deterministic); canary: its known-answer controls vs the previous run's manifest.",
    "noise_win_rates": "Win rate vs the reference of a repeated arena judge's systems: first repetition, mean over "
    "repetitions, 95% bootstrap interval over pairs only and with the judge's variance (a "
    "repetition drawn per pair). Empty: no arena judge repeats its judgments.",
    "canaries": "Known-answer controls now vs the previous run's manifest (changed / unchanged / no previous run).",
    "panel": "Agreement of the arena judges on the pairs all judged validly (Cohen's kappa for 2, Fleiss' for "
    "more; 95% bootstrap interval over pairs).",
    "panel_loo": "The ranking by win rate vs the reference (panel verdict) with each judge left out: Kendall's "
    "tau against the whole panel, top system, largest rank change.",
    "panel_reliability": "Each judge of a panel (arena: per retrieval run, on its pairs; DRFR: per dataset, on "
    "the decomposed questions) under a latent-truth model of the panel (Dawid-Skene, EM on every "
    "item's valid verdicts, one rater per judge): accuracy -- the estimated probability its verdict is the "
    "item's true label; 'correct if truth x' -- its confusion matrix's diagonal; position_bias -- over the "
    "orders it judged, the expected share of orders with a better answer shown second where it chose the "
    "first, minus the reverse, among orders whose true label is not a tie (positive: favours the first "
    "shown; orders: how many); agrees_with_model -- share of its verdicts equal to the model's; share x -- "
    "the model's estimated share of each true label. Beside kappa (judges_panel); judges that share calls "
    "are not independent raters, which the model assumes (note).",
}
#: the instruments each table is built on (its caption ends with their known-answer controls)
INSTRUMENTS = {
    "self_preference": (DRFR_JUDGE, ARENA_JUDGE),
    "noise": (DRFR_JUDGE, ARENA_JUDGE),
    "noise_win_rates": (ARENA_JUDGE,),
    "canaries": (DRFR_JUDGE, ARENA_JUDGE),
    "panel": (ARENA_JUDGE,),
    "panel_loo": (ARENA_JUDGE,),
    "panel_reliability": (DRFR_JUDGE, ARENA_JUDGE),
}


def captions(validity_summary: Mapping[str, Any] | None) -> dict[str, str]:
    """Each table's caption, ending with its judges' known-answer controls
    (:func:`isqaflow.report.validity.validity_note`) as every table built on a judge does."""
    if validity_summary is None:
        return dict(CAPTIONS)
    return {
        table: " ".join([text, *(validity_note(validity_summary, i) for i in INSTRUMENTS[table])])
        for table, text in CAPTIONS.items()
    }


@dataclass(frozen=True)
class JudgeAudit:
    """What the ``judge_audit`` job computes besides the files it reads: the judge x system pairs
    with their model families (the SELF flags), every judge's config entry by suite (``judges``:
    suite -> judge -> mode, generation, repeats, reuse_calls), the panel's verdict rule and the
    bootstrap's rounds and seed."""

    judge_pairs: tuple[Mapping[str, Any], ...]
    judges: Mapping[str, Mapping[str, Mapping[str, Any]]]
    panel_rule: str
    rounds: int
    seed: int

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any = None) -> JudgeAudit:
        """From the rule's params (pairs, judges, panel_rule, rounds, seed); the rule has no wildcards."""
        return cls(
            judge_pairs=tuple(params.pairs),
            judges=params.judges,
            panel_rule=params.panel_rule,
            rounds=params.rounds,
            seed=params.seed,
        )


def run_judge_audit(
    judged_paths: Mapping[str, Mapping[str, str]],
    validity_paths: Mapping[str, Sequence[str]],
    previous_manifest: str | Path,
    tables_dir: str | Path,
    canaries_path: str | Path,
    audit: JudgeAudit,
    drfr_paths: Mapping[str, Mapping[str, str]] | None = None,
    validity_summary_path: str | Path | None = None,
) -> None:
    """Entry point of rule judge_audit: ``judged_paths`` run -> arena judge -> judged pairs file;
    ``drfr_paths`` dataset -> DRFR judge -> judgments file; ``validity_paths`` suite ("arena",
    "drfr") -> its judges' control records; ``validity_summary_path``: results/validity/summary.json,
    whose controls end every caption; ``audit``: the settings (:class:`JudgeAudit`)."""
    judged = {
        run: {judge: [rec for _, rec in read_jsonl(path)] for judge, path in judges_.items()}
        for run, judges_ in judged_paths.items()
    }
    drfr = {
        run: {judge: [rec for _, rec in read_jsonl(path)] for judge, path in judges_.items()}
        for run, judges_ in (drfr_paths or {}).items()
    }
    judges = audit.judges
    rounds, seed = audit.rounds, audit.seed
    arena = summarize_canaries(validity_paths.get("arena", ()))
    summary = {**arena, **summarize_canaries(validity_paths.get("drfr", ()))}
    previous = previous_canaries(previous_manifest)
    status = compare_canaries(summary, previous)
    log.info(
        "canaries vs %s: %s",
        previous_manifest,
        dict(sorted(pd.Series(status).value_counts().items())) if status else "none",
    )
    write_json(canaries_path, summary)
    text = captions(read_json(validity_summary_path) if validity_summary_path else None)
    out = Path(tables_dir)
    selfpref = self_preference_table(audit.judge_pairs, judged)
    _write(
        selfpref, out / "judges_self_preference", text["self_preference"], _side_by_side(selfpref)
    )
    _write(noise_table(judged, status, summary, drfr, judges), out / "judges_noise", text["noise"])
    _write(
        noise_win_rates(judged, rounds, seed),
        out / "judges_noise_win_rates",
        text["noise_win_rates"],
    )
    _write(canary_table(summary, status, previous), out / "judges_canaries", text["canaries"])
    reuse = {
        judge: entry["reuse_calls"]
        for judge, entry in judges.get("arena", {}).items()
        if entry.get("reuse_calls")
    }
    agreement, loo = panel_tables(judged, audit.panel_rule, rounds, seed, reuse)
    _write(agreement, out / "judges_panel", text["panel"])
    _write(loo, out / "judges_panel_loo", text["panel_loo"])
    _write(
        reliability_table(judged, reuse, drfr),
        out / "judges_panel_reliability",
        text["panel_reliability"],
    )
