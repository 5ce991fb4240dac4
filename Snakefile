"""isqaflow: ISQA, InFoBench/DRFR and RAG-QA Arena in one DAG.

snakemake --profile profiles/local                                  # embedded default, offline
snakemake --profile profiles/slurm --configfile config/paper.yaml   # paper scale
ISQAFLOW_GPUS=0,1,2,3 snakemake --profile profiles/workstation --configfile config/paper.yaml
                                                                    # one machine, 4 GPUs
"""

import sys
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.20")


# The library (common.smk puts it on the path too, for the jobs).
sys.path.insert(0, str(Path(workflow.basedir) / "src"))
from isqaflow.configcheck.files import (
    drop_removed_entries,
    exit_on_misplaced_targets,
    exit_on_syntax_problems,
    is_overlay,
)
from isqaflow.configcheck.schema import exit_on_schema_problems, load_schema
from isqaflow.report.last_run import record_run
from isqaflow.scheduler_timers import one_pending_timer

# Snakemake's scheduler would wake ~60 times a second by the end of a run (a timer chain more per
# finished job), taking CPU from the jobs: one pending timer instead (isqaflow.scheduler_timers).
one_pending_timer()

SCHEMA = Path(workflow.basedir) / "config/schema.yaml"
# The workflow's own YAML files, read next by Snakemake's `configfile:` and `validate` (whose
# message names neither file nor line): a YAML error named with its file, line and column.
# The --configfile files Snakemake loads before it reads this file (see CONFIG_FILES below).
exit_on_syntax_problems([Path(workflow.basedir) / "config/config.yaml", SCHEMA])
# The embedded default, unless a whole config (every top-level section, as config/paper.yaml) is
# given on the command line: it replaces the default whole (Snakemake would otherwise merge the
# two). Config files with only some sections -- an overlay adding one's own systems
# (docs/own-systems.md) -- are merged onto the default, in the order given.
DEFAULT_CONFIG = not workflow.overwrite_configfiles or is_overlay(
    workflow.overwrite_configfiles, load_schema(SCHEMA)["required"]
)
if DEFAULT_CONFIG:

    configfile: "config/config.yaml"


CONFIG_FILES = ["config/config.yaml"] * DEFAULT_CONFIG + list(
    workflow.overwrite_configfiles
)

# A target given after --configfile is read as a config file: "put targets first" (Snakemake
# itself fails earlier, in its command line before it reads this file, without naming the
# file, on a missing one or a YAML error: `python -m isqaflow.configcheck <files>` names file
# and line; docs/configuration.md).
exit_on_misplaced_targets(workflow.overwrite_configfiles, CONFIG_FILES)
# A default's system an overlay sets to null (`handwritten: null`, docs/own-systems.md) is
# taken out, with its name in the lists that name it, before the schema sees the null.
drop_removed_entries(config)
# The schema's errors, each naming its config key in one line (isqaflow.configcheck.schema):
# "did you mean" for a misspelled key or value, never jsonschema's dump of a oneOf; then
# validate fills in the defaults.
exit_on_schema_problems(config, SCHEMA, CONFIG_FILES)
validate(config, "config/schema.yaml")


include: "rules/common.smk"
include: "rules/spend.smk"


# Every name the config refers to, every local model path and every API key variable the
# run needs (isqaflow.configcheck): all problems at once, then exit before any rule is
# parsed -- in a dry run too, with no job started and no output deleted.
exit_on_config_problems()
# conda is told the config's CUDA (CONDA_OVERRIDE_CUDA) before it builds an environment.
export_conda_cuda()
# One machine without a scheduler (ISQAFLOW_GPUS): at most as many GPU jobs at once as GPUs.
use_gpu_pool_or_exit()
print_spend_plan()


# API models: one listing per endpoint, and the spend plan within budget:, when the run
# starts (not in a dry run), before any job.
onstart:
    check_api_models_or_exit()
    check_budget_or_exit()
    # the config files and targets of this run, for `make report` (isqaflow.report.last_run)
    record_run(
        Path.cwd(),
        workflow.overwrite_configfiles,
        workflow.dag_settings.targets,
        sys.argv,
    )


report: "report/workflow.rst"


include: "rules/systems.smk"  # first: the model rules of answers and responses use its constraints
include: "rules/data.smk"
include: "rules/models.smk"
include: "rules/isqa/finetune.smk"
include: "rules/isqa/summarize.smk"
include: "rules/isqa/metrics.smk"
include: "rules/drfr/drfr.smk"
include: "rules/arena/arena.smk"
include: "rules/arena_hard/arena_hard.smk"
include: "rules/validity.smk"
include: "rules/leaderboard.smk"
include: "rules/peers.smk"  # released judgments: tables only (config peers:)
include: "rules/judges.smk"
include: "rules/report.smk"
include: "rules/tracking.smk"


# each script's content as a param of its rule (rules/common.smk: Snakemake's own `code` trigger
# reads the script's mtime, which every checkout changes)
version_scripts(workflow.rules)


rule all:
    default_target: True
    input:
        all_targets(),
        tracking_targets(),


# One suite only (docs/own-systems.md: judging only one's own system): `snakemake arena
# --configfile mine.yaml` plans the jobs of RAG-QA Arena's tables and controls and of nothing
# else (no ISQA, no DRFR, no leaderboard, which reads every suite).
rule arena:
    input:
        arena_targets(),


rule drfr:
    input:
        drfr_targets(),


rule arena_hard:
    input:
        arena_hard_targets(),
