"""Win rates, ratings with intervals, agreement, no-answer ratio and figure (rule arena_tables)."""

from pathlib import Path

from isqaflow.arena.tables import ArenaTablesSettings, build_arena_tables
from isqaflow.runtime import job

with job(snakemake):
    build_arena_tables(
        judged_paths=snakemake.params.judged,
        answer_paths=snakemake.input.answers,
        recall_paths=snakemake.params.recall,
        human_csv=snakemake.input.human_csv or None,  # one named path (a str), or none
        human_paths=snakemake.input.human,
        summary_paths=snakemake.input.summaries,
        out_dir=Path(snakemake.output.tables[0]).parent,
        figure_dir=Path(snakemake.output.figures[0]).parent,
        settings=ArenaTablesSettings.from_rule(snakemake.params, snakemake.wildcards),
        control_paths=snakemake.input.controls,
    )
