"""The tables the judge audit writes (results/tables/judges_<table>.*,
:func:`isqaflow.arena.judging.judge_audit.run_judge_audit`), apart from the audit itself: the
rule files name them at DAG-build time (``rules/inputs/judges.smk``: the rule's outputs, the
report's readable tables), and the audit imports pandas (seconds at every Snakemake start)."""

from __future__ import annotations

__all__ = ["TABLES"]

TABLES = (
    "self_preference",
    "noise",
    "noise_win_rates",
    "canaries",
    "panel",
    "panel_loo",
    "panel_reliability",
)
