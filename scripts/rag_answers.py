"""One model answers every query from its top-k passages (rule rag_answers)."""

from isqaflow.arena.answers import AnswersJob, run_answers
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_answers(
        snakemake.input.queries,
        snakemake.input.passages,
        snakemake.input.retrieval,
        snakemake.output.answers,
        job=AnswersJob.from_rule(snakemake.params, snakemake.wildcards),
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
    )
