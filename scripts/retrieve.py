"""Top-k passages for every query of a domain, and the retriever's recall (rule retrieve)."""

from isqaflow.arena.retrieval.bm25_dense import run_retrieval
from isqaflow.runtime import job

with job(snakemake):
    run_retrieval(
        snakemake.input.queries,
        snakemake.input.passages,
        out_path=snakemake.output.hits,
        recall_path=snakemake.output.recall,
        backend=snakemake.params.backend,
        ks=snakemake.params.ks,
        options=snakemake.params.options,
        cache_dir=snakemake.params.cache_dir,
        domain=snakemake.wildcards.domain,
    )
