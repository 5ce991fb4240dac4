"""One model answers every query from its top-k passages (rule rag_answers)."""

from isqaflow.arena.answers import run_answers
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_answers(
        snakemake.input.queries,
        snakemake.input.passages,
        snakemake.input.retrieval,
        snakemake.output.answers,
        model_spec=snakemake.params.model,
        answerer=snakemake.wildcards.answerer,
        adapter=snakemake.params.adapter,
        cot=snakemake.params.cot,
        k=int(snakemake.wildcards.k),
        retriever=snakemake.wildcards.retriever,
        generation=snakemake.params.generation,
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
    )
