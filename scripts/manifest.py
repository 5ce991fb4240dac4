"""The provenance manifest of the run (rule manifest)."""

from pathlib import Path

from isqaflow.report.manifest import write_manifest
from isqaflow.spend import plan
from isqaflow.runtime import job

with job(snakemake):
    write_manifest(
        snakemake.output.manifest,
        config=snakemake.params.config,
        raw_files=snakemake.params.raw,
        adapters=snakemake.params.adapters,
        weights=snakemake.params.weights,
        code_versions=snakemake.params.code_versions,
        spend_plan=[row.record() for row in plan(snakemake.params.config)],
        # the checkout this script belongs to: a moved checkout is the same workflow
        workflow_dir=Path(snakemake.scriptdir).parent,
    )
