"""Summaries after post-hoc generic feedback (rule generic_feedback)."""

from isqaflow.isqa.summarize import run_generic
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_generic(
        snakemake.input.papers,
        snakemake.output.summaries,
        model_spec=snakemake.params.model,
        generation=snakemake.params.generation,
        dataset=snakemake.wildcards.dataset,
        summarizer=snakemake.wildcards.summarizer,
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
        steps=snakemake.params.steps,
    )
