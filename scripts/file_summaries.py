"""One's own summaries from a file, checked, as a summaries file (rule file_summaries)."""

from isqaflow.isqa.file_summaries import run_file_summaries
from isqaflow.runtime import job

with job(snakemake):
    run_file_summaries(
        snakemake.input.papers,
        snakemake.input.system,
        snakemake.output.summaries,
        snakemake.output.check,
        system=snakemake.wildcards.summarizer,
        dataset=snakemake.wildcards.dataset,
        fmt=snakemake.params.options["format"],
        coverage=snakemake.params.options["coverage"],
    )
