"""The ISQA paper's Tables 1-4, the oracle table and Figure 3 (rule isqa_tables)."""

from pathlib import Path

from isqaflow.metrics.tables import build_isqa_tables
from isqaflow.runtime import job

with job(snakemake):
    build_isqa_tables(
        snakemake.input.scores,
        snakemake.input.steps,
        out_dir=Path(snakemake.output.tables[0]).parent,
        figure_dir=Path(snakemake.output.figures[0]).parent,
        main_feedback=snakemake.params.main_feedback,
        feedback_models=snakemake.params.feedback_models,
        datasets=snakemake.params.datasets,
        rounds=snakemake.params.rounds,
        seed=snakemake.params.seed,
        control_paths=snakemake.input.controls,
        zero_papers=snakemake.params.zero_papers,
        ppi=snakemake.params.ppi,
    )
