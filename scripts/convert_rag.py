"""LFRQA annotations + corpus -> queries and <=N-word passages (rule convert_rag)."""

from isqaflow.data.convert import write_rag
from isqaflow.runtime import job

with job(snakemake):
    write_rag(
        snakemake.wildcards.domain,
        snakemake.input.annotations,
        snakemake.input.corpus or None,
        corpus_format=snakemake.params.corpus_format,
        passage_words=snakemake.params.passage_words,
        queries_out=snakemake.output.queries,
        passages_out=snakemake.output.passages,
    )
