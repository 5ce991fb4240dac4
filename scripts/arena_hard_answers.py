"""Each answerer answers Arena-Hard-Auto's questions, greedily (rule arena_hard_answers)."""

from isqaflow.arena_hard.answers import run_answers
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_answers(
        snakemake.input.questions,
        snakemake.output.answers,
        model_spec=snakemake.params.model,
        model_name=snakemake.wildcards.answerer,
        generation=snakemake.params.generation,
        cache_path=ctx.cache_path(),
        limit=snakemake.params.limit,
        adapter=snakemake.params.adapter,
        threads=ctx.threads,
    )
