"""The DRFR human labels checked against the converted instructions (rule check_drfr_human_labels)."""

from isqaflow.data.instruction_labels import check_instruction_labels
from isqaflow.runtime import job

with job(snakemake):
    check_instruction_labels(
        snakemake.params.labels,
        snakemake.input.instructions,
        snakemake.output.checked,
    )
