"""Provenance: the manifest of the run (git commit, config hash, dataset checksums, model
and adapter identities, package versions, seed, command), shown in the report."""


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/report.smk"


localrules:
    manifest,


rule manifest:
    input:
        results=lambda wc: result_targets(),
        raw=lambda wc: [p for paths in raw_dataset_files().values() for p in paths],
        adapters=lambda wc: [f for a in config["finetune"] for f in adapter_files(a)],
    output:
        manifest=report(
            "results/manifest.json",
            caption="../report/manifest.rst",
            category="Provenance",
        ),
    log:
        "logs/manifest.log",
    conda:
        "../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        config=config,
        raw=lambda wc: raw_dataset_files(),
        adapters=lambda wc: {a: adapter_dir(a) for a in config["finetune"]},
        weights=weight_records(),
        code_versions=lambda wc: stage_code_versions(),
        code=code("isqaflow.report.manifest", "isqaflow.spend"),
    script:
        "../scripts/manifest.py"
