"""Every arena judgment on one static page -> results/browser/arena.html (rule arena_browser)."""

from isqaflow.arena.browse import run_arena_browser
from isqaflow.runtime import job

with job(snakemake):
    run_arena_browser(
        snakemake.output.page,
        judged=snakemake.params.judged,
        query_paths=list(snakemake.input.queries),
        human_paths=list(snakemake.input.human),
        human_csv=snakemake.input.human_csv or None,  # one named path (a str), or none
        control_paths=list(snakemake.input.controls),
        controls=snakemake.params.controls,
        per_domain=snakemake.params.per_domain,
        seed=snakemake.params.seed,
        rules=snakemake.params.rules,
        summary_paths=list(snakemake.input.summaries),
    )
