"""Pairwise judging against LFRQA and between models (rule arena_judge)."""

from isqaflow.arena.judging.battles import ArenaJudgeJob, run_arena_judge
from isqaflow.models.cache import copy_calls
from isqaflow.runtime import call_cache_of, job

with job(snakemake) as ctx:
    # reuse_calls: the other judge's calls of this job, if any (only identical calls are served)
    copy_calls([call_cache_of(f) for f in snakemake.input.reused], ctx.cache_path())
    run_arena_judge(
        snakemake.input.queries,
        snakemake.input.answers,
        snakemake.output.judged,
        job=ArenaJudgeJob.from_rule(snakemake.params, snakemake.wildcards),
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
        prompt_files=list(snakemake.input.prompt),
    )
