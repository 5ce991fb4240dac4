"""Blind per-sentence annotation sheets for the human evaluation (rule human_eval_sheets)."""

from isqaflow.metrics.human import run_sheets
from isqaflow.runtime import job

with job(snakemake):
    run_sheets(
        snakemake.input.summaries,
        systems=snakemake.params.systems,
        seed=snakemake.params.seed,
        sheet_out=snakemake.output.sheet,
        key_out=snakemake.output.key,
    )
