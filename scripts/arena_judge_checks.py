"""The arena judge on the human-labelled pairs and the known-answer controls (rule arena_judge_checks)."""

from isqaflow.arena.judging.controls import JudgeChecksJob, run_judge_checks
from isqaflow.models.cache import copy_calls
from isqaflow.runtime import call_cache_of, job

with job(snakemake) as ctx:
    # reuse_calls: the other judge's calls of this job, if any (only identical calls are served)
    copy_calls([call_cache_of(f) for f in snakemake.input.reused], ctx.cache_path())
    run_judge_checks(
        snakemake.input.queries,
        snakemake.input.human or None,
        validity_path=snakemake.output.validity,
        agreement_path=snakemake.output.get("agreement"),
        job=JudgeChecksJob.from_rule(snakemake.params, snakemake.wildcards),
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
        prompt_files=list(snakemake.input.prompt),
    )
