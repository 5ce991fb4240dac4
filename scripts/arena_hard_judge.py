"""Every answer against the baseline's in two games, and the known-answer controls (rule arena_hard_judge)."""

from isqaflow.arena_hard.judge import run_judge
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_judge(
        snakemake.input.questions,
        snakemake.input.baseline,
        list(snakemake.input.answers),
        snakemake.output.judgments,
        snakemake.output.controls,
        judge=snakemake.wildcards.judge,
        model_spec=snakemake.params.model,
        mode=snakemake.params.mode,
        prompts=snakemake.params.prompts,
        generation=snakemake.params.generation,
        cache_path=ctx.cache_path(),
        scope="arena-hard",
        limit=snakemake.params.limit,
        control_questions=snakemake.params.control_questions,
        threads=ctx.threads,
    )
