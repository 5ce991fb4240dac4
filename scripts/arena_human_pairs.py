"""The arena judge on the human-labelled pairs (rule arena_human_pairs)."""

from isqaflow.arena.battles import run_human_pairs
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_human_pairs(
        snakemake.input.human,
        snakemake.output.judged,
        judge_spec=snakemake.params.model,
        judge_name=snakemake.wildcards.judge,
        mode=snakemake.params.mode,
        orders=snakemake.params.orders,
        seed=snakemake.params.seed,
        generation=snakemake.params.generation,
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
        prompt_files=list(snakemake.input.prompt),
    )
