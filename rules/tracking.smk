"""The run exported to an experiment tracker (config key tracking, off by default): one MLflow
run with the config, the manifest, the tables and the figures (isqaflow.report.tracking).
"""

from isqaflow.configcheck import format_problems
from isqaflow.configcheck.references import ConfigProblem
from isqaflow.report.tracking import missing_tracker


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/tracking.smk"


exit_if_tracker_missing()


# On the submit host: the default store is a folder beside the results, and a tracking
# server is more often reachable from there than from a compute node.
localrules:
    track_run,


rule track_run:
    input:
        manifest="results/manifest.json",
        files=lambda wc: tracked_files(),
    output:
        record="results/tracking/mlflow_run.json",
    log:
        "logs/track_run.log",
    conda:
        "../envs/tracking.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        uri=config["tracking"]["uri"],
        experiment=config["tracking"]["experiment"],
        code=code("isqaflow.report.tracking"),
    script:
        "../scripts/track_run.py"
