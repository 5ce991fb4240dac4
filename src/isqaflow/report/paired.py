"""Paired tests between systems judged on the same items (results/tables/paired_tests.*).

Two systems judged on the same items deserve a paired test, not two overlapping intervals.
For every pair of systems of one family (a suite, its setting and its judge):

* **DRFR** (binary outcomes: a decomposed question answered YES or not, items = (instruction,
  question)): the two-sided exact McNemar test -- only discordant questions count, ``only_a``
  (YES for a, not for b) and ``only_b``; under no difference each is a fair coin, so the
  p-value is the two-sided binomial test of ``only_b`` out of ``only_a + only_b`` at 1/2
  (1 when none is discordant).  INVALID counts as NO, as in the DRFR.
* **Arena** (the reference pairs; items = (domain, query)): each system's preference over
  the LFRQA reference (win 1, tie 0.5, loss 0; the AlpacaEval convention), compared with the
  two-sided sign-flip permutation test of the mean paired difference
  (:func:`isqaflow.stats.sign_flip_test`, exact up to 16 pairs, seeded Monte Carlo beyond,
  no p-value below 6 pairs).  A query without a valid verdict for either system is left out.

``diff`` is mean(b) - mean(a) on the paired items.  The p-values of a family are corrected
for multiple comparisons by Holm's step-down method (``p_holm``); a pair without a p-value
(too few pairs) is left out of the correction.  ``mde`` beside the p is the minimum detectable
effect of the pair at 80% power and a two-sided 5% (:func:`isqaflow.power.paired_mde`, from the
root mean square of the observed paired differences, the tests' null spread): a pair that is not significant had no power to show a
difference smaller than it, so "no significant difference" reads "no difference larger than
``mde``" (NaN without a test, or where the paired differences never vary).

The same results as a compact matrix per family (:func:`paired_matrix`: row system minus
column system, in points x100, with the Holm-adjusted p; results/tables/paired_matrix.*) and a
heatmap (:func:`paired_figure`, one panel per family; results/figures/paired_tests.{png,svg}).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from isqaflow.io import read_json, read_jsonl
from isqaflow.power import paired_mde
from isqaflow.report.figures import caveat, new_figure, save_figure
from isqaflow.report.tables import write_table
from isqaflow.report.validity import cannot_rank, validity_note
from isqaflow.stats import sign_flip_test
from isqaflow.suites.drfr import JUDGE as DRFR_JUDGE
from isqaflow.suites.arena import JUDGE as ARENA_JUDGE

__all__ = [
    "arena_outcomes",
    "drfr_outcomes",
    "holm",
    "mcnemar_exact",
    "paired_figure",
    "paired_matrix",
    "paired_tests",
    "write_paired_tests",
]

# the same as isqaflow.arena.ratings.length.PREFERENCE, a floor above (tests/unit/report/test_paired.py checks it)
_PREFERENCE = {"1": 1.0, "tie": 0.5, "2": 0.0}
COLUMNS = (
    "suite",
    "setting",
    "judge",
    "system_a",
    "system_b",
    "n",
    "mean_a",
    "mean_b",
    "diff",
    "only_a",
    "only_b",
    "test",
    "p",
    "p_holm",
    "mde",
)


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> dict:
    """Two-sided exact McNemar test of paired binary outcomes (``only_a``, ``only_b``, ``p``)."""
    from scipy.stats import binomtest

    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"paired outcomes need equal lengths, got {a.size} and {b.size}")
    only_a, only_b = int(np.count_nonzero(a & ~b)), int(np.count_nonzero(~a & b))
    discordant = only_a + only_b
    p = (
        1.0
        if discordant == 0
        else float(binomtest(only_b, discordant, 0.5, alternative="two-sided").pvalue)
    )
    return {"only_a": only_a, "only_b": only_b, "p": p}


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (NaN stays NaN and is not counted among the tests)."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    m = tested.size
    running = 0.0
    for rank, index in enumerate(tested[np.argsort(p[tested], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return adjusted


def drfr_outcomes(paths: Mapping[str, str]) -> pd.DataFrame:
    """Long table (setting, judge, system, item, value) of DRFR judgments: YES as True.

    ``paths``: setting label (the dataset, or "<dataset>.<judge>") -> judgments file of rule
    drfr_judge."""
    rows = []
    for setting, path in paths.items():
        for line, record in read_jsonl(path):
            for field in ("judge", "model", "instruction_id", "question_index", "answer"):
                if field not in record:
                    raise ValueError(f"{path}, line {line}: judgment record lacks {field!r}")
            rows.append(
                {
                    "setting": setting.removesuffix(f".{record['judge']}"),
                    "judge": record["judge"],
                    "system": record["model"],
                    "item": f"{record['instruction_id']}#{record['question_index']}",
                    "value": record["answer"] == "YES",
                }
            )
    return pd.DataFrame(rows, columns=["setting", "judge", "system", "item", "value"])


def arena_outcomes(paths: Mapping[str, str]) -> pd.DataFrame:
    """Long table (setting, judge, system, item, value) of the arena's reference pairs: each
    system's preference over the reference (1, 0.5, 0; NaN without a valid verdict).

    ``paths``: setting label -> judged pairs file of rule arena_judge."""
    rows = []
    for setting, path in paths.items():
        for line, record in read_jsonl(path):
            if record.get("kind") != "reference":  # system_b is the reference answer
                continue
            for field in ("system_a", "domain", "qid", "verdict"):
                if field not in record:
                    raise ValueError(f"{path}, line {line}: judged pair lacks {field!r}")
            rows.append(
                {
                    "setting": setting.removesuffix(f".{record.get('judge', '')}"),
                    "judge": record.get("judge", ""),
                    "system": record["system_a"],
                    "item": f"{record['domain']}:{record['qid']}",
                    "value": _PREFERENCE.get(record.get("verdict"), np.nan),
                }
            )
    return pd.DataFrame(rows, columns=["setting", "judge", "system", "item", "value"])


def _family_rows(
    suite: str, setting: str, judge: str, wide: pd.DataFrame, rounds: int, seed: int
) -> list[dict]:
    rows = []
    for a, b in itertools.combinations(sorted(wide.columns), 2):
        pair = wide[[a, b]].dropna()
        row = {
            "suite": suite,
            "setting": setting,
            "judge": judge,
            "system_a": a,
            "system_b": b,
            "n": len(pair),
            "mean_a": float(pair[a].astype(float).mean()) if len(pair) else np.nan,
            "mean_b": float(pair[b].astype(float).mean()) if len(pair) else np.nan,
            "only_a": np.nan,
            "only_b": np.nan,
        }
        row["diff"] = row["mean_b"] - row["mean_a"]
        row["mde"] = paired_mde(pair[a].astype(float), pair[b].astype(float))
        if suite == "drfr":
            result = mcnemar_exact(pair[a].astype(bool), pair[b].astype(bool))
            row.update(result, test="exact McNemar")
        else:
            result = sign_flip_test(
                pair[a].astype(float), pair[b].astype(float), rounds=rounds, seed=seed
            )
            row.update(p=result["p_value"], test=f"sign-flip ({result['method']})")
        rows.append(row)
    adjusted = holm([row["p"] for row in rows])
    for row, p_holm in zip(rows, adjusted, strict=True):
        row["p_holm"] = p_holm
    return rows


def paired_tests(
    outcomes: Mapping[str, pd.DataFrame], rounds: int = 10000, seed: int = 0
) -> pd.DataFrame:
    """Every pair of systems of each (suite, setting, judge) family; ``outcomes``: suite -> long table."""
    rows = []
    for suite, long in outcomes.items():
        duplicated = long.duplicated(["setting", "judge", "system", "item"])
        if duplicated.any():
            first = long.loc[duplicated].iloc[0]
            raise ValueError(
                f"{suite}: two outcomes of {first['system']!r} on item {first['item']!r} "
                f"({first['setting']}, judge {first['judge']})"
            )
        for (setting, judge), family in long.groupby(["setting", "judge"], sort=True):
            wide = family.pivot(index="item", columns="system", values="value")
            rows += _family_rows(suite, setting, judge, wide, rounds, seed)
    return pd.DataFrame(rows, columns=list(COLUMNS))


SIGNIFICANCE = 0.05
FAMILY = ["suite", "setting", "judge"]


def _oriented(table: pd.DataFrame) -> pd.DataFrame:
    """Every tested pair in both orientations: (family, row, column, diff = mean_row - mean_col, p_holm, n);
    + 0.0 turns a -0 into 0 (shown "+0.0", not "-0.0")."""
    forward = table.assign(row=table["system_b"], column=table["system_a"], d=table["diff"] + 0.0)
    backward = table.assign(row=table["system_a"], column=table["system_b"], d=-table["diff"] + 0.0)
    return pd.concat([forward, backward], ignore_index=True)[
        [*FAMILY, "row", "column", "d", "p_holm", "n", "mde"]
    ]


def _matrix_cell(diff: float, p_holm: float, n: int, mde: float = float("nan")) -> str:
    if np.isnan(diff):
        return "--"
    if np.isnan(p_holm):
        return f"{100 * diff:+.1f} (n={n}, no test)"
    if p_holm < SIGNIFICANCE:
        return f"{100 * diff:+.1f}* (p={p_holm:.3f})"
    # not significant: how large a difference the pair could have shown (80% power, 5%)
    power_note = "" if np.isnan(mde) else f", MDE {100 * mde:.1f}"
    return f"{100 * diff:+.1f} (p={p_holm:.3f}{power_note})"


def paired_matrix(table: pd.DataFrame) -> pd.DataFrame:
    """The compact view of :func:`paired_tests`: one block of rows per (suite, setting, judge), a
    row and a column per system; the cell (row r, column c) is mean_r - mean_c on their paired
    items in points (x100), its Holm-adjusted p, ``*`` at p < 0.05 ("no test" below 6 pairs)."""
    if table.empty:
        return pd.DataFrame(columns=[*FAMILY, "system"]).set_index([*FAMILY, "system"])
    cells = _oriented(table)
    cells["cell"] = [
        _matrix_cell(d, p, n, m)
        for d, p, n, m in zip(cells["d"], cells["p_holm"], cells["n"], cells["mde"], strict=True)
    ]
    systems = sorted(set(cells["row"]))
    wide = cells.pivot_table(
        index=[*FAMILY, "row"], columns="column", values="cell", aggfunc="first"
    )
    wide = wide.reindex(columns=systems)
    for key in wide.index:  # the diagonal
        wide.loc[key, key[-1]] = "."
    wide.index.names = [*FAMILY, "system"]
    wide.columns.name = None
    return wide.fillna("")


def paired_figure(
    table: pd.DataFrame, paths: Sequence[str | os.PathLike], warning: str = ""
) -> None:
    """A heatmap per (suite, setting, judge): mean_row - mean_col in points, ``*`` where the
    Holm-adjusted p < 0.05; ``warning``: :func:`isqaflow.report.figures.caveat`'s."""
    families = list(table.groupby(FAMILY, sort=True)) if not table.empty else []
    fig, axes = new_figure(ncols=max(1, len(families)), width=4.6, height=4.0)
    if not families:
        axes[0].text(0.5, 0.5, "no systems judged on the same items", ha="center", va="center")
        axes[0].set_axis_off()
    for ax, ((suite, setting, judge), family) in zip(axes[: len(families)], families, strict=True):
        cells = _oriented(family)
        systems = sorted(set(cells["row"]))
        values = np.full((len(systems), len(systems)), np.nan)
        for row in cells.itertuples(index=False):
            values[systems.index(row.row), systems.index(row.column)] = 100 * row.d
        bound = max(1.0, float(np.nanmax(np.abs(values)))) if np.isfinite(values).any() else 1.0
        image = ax.imshow(values, cmap="RdBu", vmin=-bound, vmax=bound)
        for row in cells.itertuples(index=False):
            if np.isnan(row.d):
                continue
            mark = "*" if row.p_holm < SIGNIFICANCE else ""
            ax.text(
                systems.index(row.column),
                systems.index(row.row),
                f"{100 * row.d:+.0f}{mark}",
                ha="center",
                va="center",
                fontsize=7,
            )
        ax.set_xticks(range(len(systems)), systems, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(systems)), systems, fontsize=7)
        ax.set_title(f"{suite} {setting} ({judge})", fontsize=8)
        fig.colorbar(image, ax=ax, shrink=0.7, label="row - column (points)")
    caveat(fig, warning)
    save_figure(fig, paths)


def write_paired_tests(
    arena_paths: Mapping[str, str],
    drfr_paths: Mapping[str, str],
    out_paths: Sequence[str | os.PathLike],
    rounds: int = 10000,
    seed: int = 0,
    matrix_paths: Sequence[str | os.PathLike] = (),
    figure_paths: Sequence[str | os.PathLike] = (),
    validity_summary_path: str | os.PathLike | None = None,
) -> pd.DataFrame:
    """Entry point of rule paired_tests: the table as .csv, .md and .tex; the matrix
    (``matrix_paths``) and the heatmap (``figure_paths``).  With the validity summary
    (results/validity/summary.json) both captions end with each judge's known-answer
    controls, as every table built on a judge does."""
    table = paired_tests(
        {"arena": arena_outcomes(arena_paths), "drfr": drfr_outcomes(drfr_paths)}, rounds, seed
    )
    caption = (
        "Paired tests between systems judged on the same items, per suite, setting and judge. "
        "DRFR: YES per decomposed question, two-sided exact McNemar (only_a / only_b: questions "
        "only a / only b got YES). Arena: preference over the LFRQA reference per query (win 1, "
        "tie 0.5, loss 0), two-sided sign-flip test (no p-value below 6 pairs). diff = mean_b - "
        "mean_a on the n paired items; p_holm: Holm-corrected within each suite, setting and judge; "
        "mde: the minimum detectable effect at 80% power and a two-sided 5% (normal approximation, the "
        "root mean square of the paired differences): a pair that is not significant shows no difference "
        "larger than mde, not that there is none."
    )
    controls = warning = ""
    if validity_summary_path is not None:
        summary = read_json(validity_summary_path)
        warning = " ".join(w for i in (DRFR_JUDGE, ARENA_JUDGE) if (w := cannot_rank(summary, i)))
        controls = " " + " ".join(
            validity_note(summary, instrument) for instrument in (DRFR_JUDGE, ARENA_JUDGE)
        )
    caption += controls
    write_table(table, out_paths, digits=3, caption=caption)
    if matrix_paths:
        write_table(
            paired_matrix(table),
            matrix_paths,
            caption=(
                "Paired tests as a matrix, per suite, setting and judge: row system minus column system on their "
                "paired items, in points (x100; DRFR: share of YES, arena: preference over LFRQA), Holm-adjusted p "
                f"within the family; * p < {SIGNIFICANCE:g}; no test below 6 pairs; MDE (not significant cells): the "
                "smallest difference the pair could detect at 80% power and 5%, in points. Tests and counts: paired_tests."
                + controls
            ),
        )
    if figure_paths:
        paired_figure(table, figure_paths, warning)
    return table
