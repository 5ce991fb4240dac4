"""Known-answer controls of QAGS and QuestEval: own vs another paper's abstract (rule metric_controls)."""

from isqaflow.metrics.controls import MetricControls, run_controls_job
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_controls_job(
        snakemake.input.papers,
        snakemake.output.records,
        job=MetricControls.from_rule(snakemake.params, snakemake.wildcards),
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
    )
