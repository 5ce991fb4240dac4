"""Iterative factuality refinement with ISQA feedback, Algorithm 1 (rule isqa_refine)."""

from isqaflow.isqa.refine import RefineJob, run_refine
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_refine(
        snakemake.input.papers,
        baseline_path=snakemake.input.baseline,
        steps_out=snakemake.output.steps,
        summaries_out=snakemake.output.summaries,
        job=RefineJob.from_rule(snakemake.params, snakemake.wildcards),
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
        validity_out=snakemake.output.validity,
    )
