"""The DRFR judge on ISQA summaries, QA pairs as requirements (rule drfr_summaries)."""

from isqaflow.drfr.summaries import SummaryJudgeJob, run_summary_judge
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_summary_judge(
        snakemake.input.papers,
        snakemake.input.summaries,
        out_path=snakemake.output.judgments,
        job=SummaryJudgeJob.from_rule(snakemake.params, snakemake.wildcards),
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
        prompt_files=list(snakemake.input.prompt),
    )
