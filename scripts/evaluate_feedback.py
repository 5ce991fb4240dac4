"""The feedback model before vs after fine-tuning on held-out examples (rule evaluate_feedback)."""

from isqaflow.finetune.evaluate import evaluate
from isqaflow.runtime import job

with job(snakemake) as ctx:
    evaluate(
        base=snakemake.params.base,
        adapter=snakemake.params.adapter_dir,
        dev_path=snakemake.input.dev,
        out_json=snakemake.output.summary,
        out_examples=snakemake.output.examples,
        generation=snakemake.params.generation,
        max_input_tokens=snakemake.params.max_input_tokens,
        n_examples=snakemake.params.examples,
        seed=snakemake.params.seed,
        cache_path=ctx.cache_path(),
        threads=ctx.threads,
        prompt_style=snakemake.params.prompt_style,
    )
