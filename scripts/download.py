"""Fetch one pinned raw file and verify its checksum (rule download)."""

from isqaflow.runtime import allow_hub, job

allow_hub()  # hf:// files come from the Hub (the other jobs run with HF_HUB_OFFLINE=1)

from isqaflow.data.download import fetch  # noqa: E402

with job(snakemake):
    fetch(snakemake.params.url, snakemake.output.file, snakemake.params.checksum)
