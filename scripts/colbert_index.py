"""The PLAID index of one domain's passages for a ColBERT retriever (rule colbert_index)."""

from isqaflow.arena.retrieval.colbert import run_colbert_index
from isqaflow.runtime import job

with job(snakemake):
    run_colbert_index(
        snakemake.input.passages,
        index_dir=snakemake.params.index_dir,
        options=snakemake.params.options,
    )
