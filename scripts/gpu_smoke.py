"""The GPU smoke job: one server per engine and one in-process model, tried before any GPU job
(rule gpu_smoke; isqaflow.models.smoke)."""

from isqaflow.models.smoke import run_smoke
from isqaflow.runtime import job

with job(snakemake) as ctx:
    run_smoke(
        snakemake.params.servers,
        snakemake.params.in_process,
        snakemake.output.record,
        threads=ctx.threads,
    )
