"""The multi-turn YES/NO judge over every responder's responses and the known-answer controls (rule drfr_judge)."""

from isqaflow.drfr.judge_responses import run_judge
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_judge(
        snakemake.input.instructions,
        snakemake.input.responses,
        snakemake.output.judgments,
        snakemake.output.controls,
        judge_spec=snakemake.params.model,
        judge_name=snakemake.wildcards.judge,
        dataset=snakemake.wildcards.dataset,
        mode=snakemake.params.mode,
        rule=snakemake.params.rule,
        generation=snakemake.params.generation,
        controls=snakemake.params.controls["controls"],
        control_instructions=snakemake.params.controls["instructions"],
        seed=snakemake.params.seed,
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
        prompt_files=list(snakemake.input.prompt),
        repeats=snakemake.params.repeats,
    )
