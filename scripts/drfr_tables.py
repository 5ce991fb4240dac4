"""DRFR tables (InFoBench Table 5, per constraint, per category, summaries) and figure (rule drfr_tables)."""

from pathlib import Path

from isqaflow.drfr.tables import build_drfr_tables
from isqaflow.runtime import job

with job(snakemake):
    build_drfr_tables(
        snakemake.input.judgments,
        snakemake.input.summaries,
        out_dir=Path(snakemake.output.tables[0]).parent,
        figure_dir=Path(snakemake.output.figures[0]).parent,
        rounds=snakemake.params.rounds,
        seed=snakemake.params.seed,
        control_paths=snakemake.input.controls,
        ppi=snakemake.params.ppi,
    )
