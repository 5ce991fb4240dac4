"""isqaflow: ISQA, InFoBench/DRFR and RAG-QA Arena in one DAG.

    snakemake --profile profiles/default                       # embedded default, offline
    snakemake --profile profiles/slurm --configfile config/paper.yaml   # paper scale
"""


from snakemake.utils import min_version, validate

min_version("9.20")


configfile: "config/config.yaml"


validate(config, "config/schema.yaml")


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/models.smk"
include: "rules/finetune.smk"
include: "rules/summarize.smk"
include: "rules/metrics.smk"
include: "rules/drfr.smk"
include: "rules/arena.smk"
include: "rules/report.smk"


rule all:
    input:
        all_targets(),
    default_target: True
