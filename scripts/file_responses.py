"""One's own InFoBench responses from a file, checked (rule file_responses)."""

from isqaflow.drfr.file_responses import run_file_responses
from isqaflow.runtime import job

with job(snakemake):
    run_file_responses(
        snakemake.input.instructions,
        snakemake.input.system,
        snakemake.output.responses,
        snakemake.output.check,
        responder=snakemake.wildcards.responder,
        fmt=snakemake.params.options["format"],
        coverage=snakemake.params.options["coverage"],
    )
