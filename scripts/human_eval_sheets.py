"""The human-evaluation sample and each annotator's blind per-sentence sheet (rule human_eval_sheets)."""

from isqaflow.metrics.human import run_sheets
from isqaflow.runtime import job

with job(snakemake):
    run_sheets(
        snakemake.input.summaries,
        systems=snakemake.params.systems,
        seed=snakemake.params.seed,
        dataset=snakemake.wildcards.dataset,
        papers=snakemake.params.papers,
        shared=snakemake.params.shared,
        sheet_outs=dict(zip(snakemake.params.annotators, snakemake.output.sheets)),
        key_out=snakemake.output.key,
        assignment_out=snakemake.output.assignment,
    )
