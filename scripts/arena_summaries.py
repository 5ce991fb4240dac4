"""ISQA summaries in the arena: vs the abstract and head to head (rule arena_summaries)."""

from isqaflow.arena.judging.summaries import SummaryArenaJob, run_summary_arena
from isqaflow.models.cache import copy_calls
from isqaflow.runtime import call_cache_of, job

with job(snakemake) as ctx:
    # reuse_calls: the other judge's calls of this job, if any (only identical calls are served)
    copy_calls([call_cache_of(f) for f in snakemake.input.reused], ctx.cache_path())
    run_summary_arena(
        snakemake.input.papers,
        snakemake.input.summaries,
        out_path=snakemake.output.judged,
        job=SummaryArenaJob.from_rule(snakemake.params, snakemake.wildcards),
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
        prompt_files=list(snakemake.input.prompt),
    )
