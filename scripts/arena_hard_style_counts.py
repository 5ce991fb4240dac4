"""Arena-Hard-Auto's style counts of every answer, the baseline's included (rule
arena_hard_style_counts)."""

from isqaflow.arena_hard.style import write_counts
from isqaflow.runtime import job

with job(snakemake):
    write_counts(
        [snakemake.input.baseline, *snakemake.input.answers],
        snakemake.params.tokenizer,
        snakemake.output.counts,
    )
