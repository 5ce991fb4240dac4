"""Top-k passages for every query of a domain from its PLAID index, and the recall (rule retrieve_colbert)."""

from isqaflow.arena.retrieval.colbert import run_colbert_retrieval
from isqaflow.runtime import job

with job(snakemake):
    run_colbert_retrieval(
        snakemake.input.queries,
        snakemake.input.passages,
        index_dir=snakemake.params.index_dir,
        out_path=snakemake.output.hits,
        recall_path=snakemake.output.recall,
        ks=snakemake.params.ks,
        options=snakemake.params.options,
        domain=snakemake.wildcards.domain,
    )
