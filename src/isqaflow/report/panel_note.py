"""The arena judge panel in the leaderboard's notes: agreement, panel verdict, leave one out.

Reads the judges' audit tables (results/tables/judges_panel.csv and judges_panel_loo.csv,
written by :mod:`isqaflow.arena.judging.judge_audit`, a floor above this one) and says per retrieval
run, in one line: the judges, the kappa with its 95% interval and n, the raw agreement, the
panel's verdict rule, the ranking's stability when each judge is left out (Kendall's tau, the
top system kept or not, the largest rank change) and the note on judges that are not
independent (one reuses another's calls).  With one judge: that there is no panel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["panel_lines"]


def _number(value: Any, digits: int = 2) -> str:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if math.isnan(value) else f"{value:.{digits}f}"


def _left_out(row: Mapping[str, Any]) -> str:
    if row.get("top_same") is None or (
        isinstance(row.get("top_same"), float) and math.isnan(row["top_same"])
    ):
        top = "no single top system (a tie at the top, or no rates)"
    else:
        top = (
            "same top system"
            if str(row["top_same"]) == "True"
            else f"top system {row['top_system']} (panel: {row['top_system_panel']})"
        )
    return (
        f"without {row['left_out']}: Kendall's tau {_number(row['kendall_tau'])} over "
        f"{_number(row['systems'], 0)} systems, {top}, largest rank change {_number(row['max_rank_shift'], 0)}"
    )


def panel_lines(panel_path: str | Path | None, loo_path: str | Path | None) -> list[str]:
    """One note per retrieval run (none without the tables)."""
    if not panel_path or not Path(panel_path).exists():
        return []
    panel = pd.read_csv(panel_path, index_col=0, keep_default_na=True)
    loo = (
        pd.read_csv(loo_path, index_col=0)
        if loo_path and Path(loo_path).exists()
        else pd.DataFrame()
    )
    lines = []
    for row in panel.to_dict("records"):
        head = f"Arena judge panel ({row['run']}: {row['judges']}"
        if "kappa" not in row or pd.isna(row.get("kappa_kind")):
            lines.append(f"{head}): {row.get('note') or 'no panel'}.")
            continue
        reason = row.get("not_identified")
        kappa = (
            f"not identified ({reason})"
            if isinstance(reason, str) and reason
            else f"{_number(row['kappa'])} [{_number(row['lower'])}, {_number(row['upper'])}]"
        )
        text = (
            f"{head}; panel verdict {row['panel_verdict']}): {row['kappa_kind']}'s kappa "
            f"{kappa} "
            f"(n={_number(row['n'], 0)} pairs all judged validly, raw agreement "
            f"{_number(100 * float(row['raw_agreement']), 0)}%)."
        )
        mine = loo[loo["run"] == row["run"]].to_dict("records") if not loo.empty else []
        if mine:
            text += " Leave one judge out: " + "; ".join(_left_out(r) for r in mine) + "."
        if isinstance(row.get("note"), str) and row["note"]:
            text += f" Note: {row['note']}."
        lines.append(text + " (judges_panel, judges_panel_loo)")
    return lines
