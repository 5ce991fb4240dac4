"""Iterative factuality refinement with ISQA feedback, Algorithm 1 (rule isqa_refine)."""

from isqaflow.isqa.refine import run_refine
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_refine(
        snakemake.input.papers,
        baseline_path=snakemake.input.baseline,
        steps_out=snakemake.output.steps,
        summaries_out=snakemake.output.summaries,
        summarizer_spec=snakemake.params.summarizer,
        summarizer=snakemake.wildcards.summarizer,
        feedback_spec=snakemake.params.feedback,
        feedback_adapter=snakemake.params.adapter,
        settings=snakemake.params.settings,
        summary_generation=snakemake.params.summary_generation,
        feedback_generation=snakemake.params.feedback_generation,
        system=f"isqa-{snakemake.wildcards.feedback}-{snakemake.wildcards.questions}",
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
        validity_out=snakemake.output.validity,
        validity=snakemake.params.validity,
        feedback_name=snakemake.wildcards.feedback,
        scope=f"{snakemake.wildcards.dataset}/{snakemake.wildcards.summarizer}/{snakemake.wildcards.questions}",
    )
