"""The human preference file checked against the converted queries (rule check_human_labels)."""

from isqaflow.data.human_labels import check_human_labels
from isqaflow.runtime import job

with job(snakemake):
    check_human_labels(snakemake.input.labels, snakemake.input.queries, snakemake.output.checked)
