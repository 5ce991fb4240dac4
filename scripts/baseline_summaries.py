"""Summaries with every baseline and pre-hoc prompt (rule baseline_summaries)."""

from isqaflow.isqa.summarize import run_baselines
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_baselines(
        snakemake.input.papers,
        snakemake.output.summaries,
        model_spec=snakemake.params.model,
        prompt_ids=snakemake.params.prompts,
        generation=snakemake.params.generation,
        dataset=snakemake.wildcards.dataset,
        summarizer=snakemake.wildcards.summarizer,
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
    )
