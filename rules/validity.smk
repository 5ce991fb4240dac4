"""Validity of the instruments: every judge's and metric's known-answer controls in one
table (results/tables/validity.*), shown first in the report."""


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/validity.smk"


rule validity_table:
    input:
        controls=lambda wc: validity_control_files(),
    output:
        tables=report(
            VALIDITY_TABLE,
            caption="../report/validity.rst",
            category=VALIDITY_CATEGORY,
        ),
        summary="results/validity/summary.json",
    log:
        "logs/validity_table.log",
    localrule: local_stage("tables")
    conda:
        "../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        code=code("isqaflow.report.validity"),
    script:
        "../scripts/validity_table.py"
