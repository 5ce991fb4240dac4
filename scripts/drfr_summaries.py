"""The DRFR judge on ISQA summaries, QA pairs as requirements (rule drfr_summaries)."""

from isqaflow.drfr.summaries import run_summary_judge
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_summary_judge(
        snakemake.input.papers,
        snakemake.input.summaries,
        systems=snakemake.params.systems,
        out_path=snakemake.output.judgments,
        judge_spec=snakemake.params.model,
        judge_name=snakemake.wildcards.judge,
        mode=snakemake.params.mode,
        rule=snakemake.params.rule,
        generation=snakemake.params.generation,
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
        prompt_files=list(snakemake.input.prompt),
    )
