"""The human-evaluation sample and each annotator's blind per-sentence sheet (rule human_eval_sheets)."""

from isqaflow.metrics.human import HumanEvalSample, run_sheets
from isqaflow.runtime import job

with job(snakemake):
    run_sheets(
        snakemake.input.summaries,
        HumanEvalSample.from_rule(snakemake.params, snakemake.wildcards),
        sheet_outs=dict(zip(snakemake.params.annotators, snakemake.output.sheets)),
        key_out=snakemake.output.key,
        assignment_out=snakemake.output.assignment,
    )
