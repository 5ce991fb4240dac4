"""Model-generated QA pairs from spaCy answer candidates (rule generate_questions)."""

from isqaflow.isqa.questions import QuestionsJob, run_generated_questions
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_generated_questions(
        snakemake.input.papers,
        snakemake.output.papers,
        job=QuestionsJob.from_rule(snakemake.params),
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
    )
