"""Summaries after post-hoc generic feedback (rule generic_feedback)."""

from isqaflow.isqa.summarize import SummaryJob, run_generic
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_generic(
        snakemake.input.papers,
        snakemake.output.summaries,
        job=SummaryJob.from_rule(snakemake.params, snakemake.wildcards),
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
    )
