"""Summaries with every baseline and pre-hoc prompt (rule baseline_summaries)."""

from isqaflow.isqa.summarize import SummaryJob, run_baselines
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_baselines(
        snakemake.input.papers,
        snakemake.output.summaries,
        job=SummaryJob.from_rule(snakemake.params, snakemake.wildcards),
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
    )
