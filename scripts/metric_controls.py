"""Known-answer controls of QAGS and QuestEval: own vs another paper's abstract (rule metric_controls)."""

from isqaflow.metrics.controls import run_controls_job
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_controls_job(
        snakemake.input.papers,
        snakemake.output.records,
        qg=snakemake.params.qg,
        qa=snakemake.params.qa,
        settings=snakemake.params.settings,
        weighter=snakemake.params.weighter,
        controls=snakemake.params.controls,
        max_papers=snakemake.params.papers,
        others=snakemake.params.others,
        seed=snakemake.params.seed,
        scope=snakemake.wildcards.dataset,
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
    )
