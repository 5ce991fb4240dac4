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
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=mem_mb_for("default"),
        runtime=runtime_for("default"),
    params:
        code=code("isqaflow.report.validity"),
    script:
        "../scripts/validity_table.py"
