"""Pairwise judging against LFRQA and between models (rule arena_judge)."""

from isqaflow.arena.judging.battles import run_arena_judge
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_arena_judge(
        snakemake.input.queries,
        snakemake.input.answers,
        snakemake.output.judged,
        judge_spec=snakemake.params.model,
        judge_name=snakemake.wildcards.judge,
        mode=snakemake.params.mode,
        orders=snakemake.params.orders,
        **snakemake.params.verdict_rule,
        all_pairs_per_domain=snakemake.params.all_pairs,
        seed=snakemake.params.seed,
        generation=snakemake.params.generation,
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
        prompt_files=list(snakemake.input.prompt),
        repeats=snakemake.params.repeats,
    )
