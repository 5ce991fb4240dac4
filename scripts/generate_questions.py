"""Model-generated QA pairs from spaCy answer candidates (rule generate_questions)."""

from isqaflow.isqa.questions import run_generated_questions
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_generated_questions(
        snakemake.input.papers,
        snakemake.output.papers,
        qg_spec=snakemake.params.model,
        qg_mode=snakemake.params.mode,
        generation=snakemake.params.generation,
        pipeline=snakemake.params.pipeline,
        per_paper=snakemake.params.per_paper,
        seed=snakemake.params.seed,
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
    )
