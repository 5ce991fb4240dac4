"""The multi-turn YES/NO judge over every responder's responses (rule drfr_judge)."""

from isqaflow.drfr.responses import run_judge
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_judge(
        snakemake.input.instructions,
        snakemake.input.responses,
        snakemake.output.judgments,
        judge_spec=snakemake.params.model,
        judge_name=snakemake.wildcards.judge,
        mode=snakemake.params.mode,
        generation=snakemake.params.generation,
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
        prompt_files=list(snakemake.input.prompt),
    )
