"""Every Arena-Hard-Auto judgment on one static page -> results/browser/arena_hard.html (rule
arena_hard_browser)."""

from isqaflow.arena_hard.browse import run_arena_hard_browser
from isqaflow.runtime import job

with job(snakemake):
    run_arena_hard_browser(
        snakemake.output.page,
        snakemake.input.questions,
        snakemake.input.baseline,
        list(snakemake.input.answers),
        list(snakemake.input.judgments),
        list(snakemake.input.controls),
    )
