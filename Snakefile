"""isqaflow: ISQA, InFoBench/DRFR and RAG-QA Arena in one DAG.

snakemake --profile profiles/local                                  # embedded default, offline
snakemake --profile profiles/slurm --configfile config/paper.yaml   # paper scale
"""

from snakemake.utils import min_version, validate

min_version("9.20")


# The embedded default, unless a config is given on the command line (config/paper.yaml
# replaces it whole: Snakemake would otherwise merge the two).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


validate(config, "config/schema.yaml")


include: "rules/common.smk"
include: "rules/spend.smk"


# Every name the config refers to, every local model path and every API key variable the
# run needs (isqaflow.configcheck): all problems at once, then exit before any rule is
# parsed -- in a dry run too, with no job started and no output deleted.
exit_on_config_problems()
print_spend_plan()


# API models: one listing per endpoint, and the spend plan within budget:, when the run
# starts (not in a dry run), before any job.
onstart:
    check_api_models_or_exit()
    check_budget_or_exit()


report: "report/workflow.rst"


include: "rules/systems.smk"  # first: the model rules of answers and responses use its constraints
include: "rules/data.smk"
include: "rules/models.smk"
include: "rules/finetune.smk"
include: "rules/summarize.smk"
include: "rules/metrics.smk"
include: "rules/drfr.smk"
include: "rules/arena.smk"
include: "rules/validity.smk"
include: "rules/leaderboard.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),
