"""Fetch one Hub model's weights into the shared cache and record its commit (rule fetch_weights)."""

from isqaflow.runtime import allow_hub, job

allow_hub()  # the one kind of job that reaches the Hub (before huggingface_hub is imported)

from isqaflow.models.weights.hub import fetch  # noqa: E402

with job(snakemake):
    fetch(
        snakemake.params.repo,
        snakemake.params.revision,
        snakemake.output.record,
        cache_dir=snakemake.params.cache_dir,
        name=snakemake.wildcards.model,
    )
