"""Paired tests between systems judged on the same items -> results/tables/paired_tests.*, the
matrix results/tables/paired_matrix.* and the heatmap results/figures/paired_tests.* (rule paired_tests)."""

from isqaflow.report.paired import write_paired_tests
from isqaflow.runtime import job

with job(snakemake):
    write_paired_tests(
        snakemake.params.arena,
        snakemake.params.drfr,
        snakemake.output.tables,
        rounds=snakemake.params.rounds,
        seed=snakemake.params.seed,
        matrix_paths=snakemake.output.matrix,
        figure_paths=snakemake.output.figures,
        validity_summary_path=snakemake.input.validity,
    )
