"""Every judge's and metric's known-answer controls -> results/tables/validity.* (rule validity_table)."""

from isqaflow.report.validity import build_validity_table
from isqaflow.runtime import job

with job(snakemake):
    build_validity_table(
        snakemake.input.controls,
        snakemake.output.tables,
        snakemake.output.summary,
    )
