"""The run logged to the experiment tracker (rule track_run)."""

import json
from pathlib import Path

from isqaflow.report.tracking import log_run
from isqaflow.runtime import job

with job(snakemake):
    record = log_run(
        snakemake.input.manifest,
        snakemake.input.files,
        uri=snakemake.params.uri,
        experiment=snakemake.params.experiment,
    )
    Path(snakemake.output.record).write_text(json.dumps(record, indent=2) + "\n")
