"""Copy one member out of a downloaded archive (rule extract)."""

from isqaflow.data.download import extract_member
from isqaflow.runtime import job

with job(snakemake):
    extract_member(snakemake.input.archive, snakemake.params.member, snakemake.output.file)
