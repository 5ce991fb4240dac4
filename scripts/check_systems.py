"""Every file-based system checked: their check records in one file (rule check_systems)."""

from isqaflow.data.outputs import merge_checks
from isqaflow.runtime import job

with job(snakemake):
    merge_checks(snakemake.input.checks, snakemake.output.checked)
