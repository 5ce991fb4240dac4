"""QAGS, QuestEval and ROUGE of every summary of a dataset and summarizer (rule score_summaries)."""

from isqaflow.metrics.score import run_scoring
from isqaflow.metrics.scorers import MetricModels
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_scoring(
        snakemake.input.papers,
        snakemake.input.summaries,
        scores_out=snakemake.output.scores,
        details_out=snakemake.output.details,
        models=MetricModels.from_rule(snakemake.params),
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
    )
