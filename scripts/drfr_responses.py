"""Each pool model answers each instruction, greedily (rule drfr_responses)."""

from isqaflow.drfr.responses import run_responses
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_responses(
        snakemake.input.instructions,
        snakemake.output.responses,
        model_spec=snakemake.params.model,
        adapter=snakemake.params.adapter,
        model_name=snakemake.wildcards.responder,
        generation=snakemake.params.generation,
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
    )
