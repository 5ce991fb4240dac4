"""Raw InFoBench file -> instruction records (rule convert_instructions)."""

from isqaflow.data.convert import write_instructions
from isqaflow.runtime import job

with job(snakemake):
    write_instructions(snakemake.input.raw, snakemake.output.instructions)
