"""Raw QASPER / SciMRC files -> normalized paper records (rule convert_papers)."""

from isqaflow.data.convert import write_papers
from isqaflow.runtime import job

with job(snakemake):
    write_papers(
        snakemake.input.raw,
        fmt=snakemake.params.format,
        dataset=snakemake.wildcards.dataset,
        out=snakemake.output.papers,
        max_papers=snakemake.params.max_papers,
    )
