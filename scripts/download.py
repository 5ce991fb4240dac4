"""Fetch one pinned raw file and verify its checksum (rule download)."""

from isqaflow.data.download import fetch
from isqaflow.runtime import job

with job(snakemake):
    fetch(snakemake.params.url, snakemake.output.file, snakemake.params.checksum)
