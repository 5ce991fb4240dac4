"""Factuality per system and Cohen's kappa on the shared papers from filled sheets (rule human_eval_results)."""

from isqaflow.metrics.human import run_results
from isqaflow.runtime import job

with job(snakemake):
    run_results(
        snakemake.input.key,
        snakemake.input.assignment,
        dict(zip(snakemake.params.annotators, snakemake.input.filled)),
        seed=snakemake.params.seed,
        factuality_out=snakemake.output.factuality,
        agreement_out=snakemake.output.agreement,
    )
