"""The API spend before and during a run (no rules here): the spend plan a dry run prints
(isqaflow.spend), the budget check when a run starts, and the budget and prices every job
reads from the environment (isqaflow.models.api.budget)."""

import os

from isqaflow.models.api import budget  # noqa: E402

# Not a param: raising the budget reruns no job (a SLURM job re-reads this file).
SPEND_LEDGER = "results/spend/ledger.json"
os.environ[budget.ENV] = budget.environment(
    SPEND_LEDGER, config.get("budget"), config["models"]
)


def print_spend_plan():
    """A dry run of a config with API models prints the spend plan and what the budget
    check of a real run would say (stderr)."""
    # imported only here: every Snakefile parse runs this function
    if {"-n", "--dry-run", "--dryrun"} & set(sys.argv):
        from isqaflow import spend

        text = spend.dry_run_text(config, SPEND_LEDGER)
        if text:
            print(text, file=sys.stderr)
        # what differences this config's n can detect (every config, API models or not)
        from isqaflow.spend import power

        print(power.power_text(config, power.power_lines(config)), file=sys.stderr)


def check_budget_or_exit():
    """At the start of a run (onstart), before any job: the plan's dollars left plus what
    the ledger says was spent stay within budget:, else the run stops naming the stages.
    """
    from isqaflow import spend

    problems = spend.start_problems(config, SPEND_LEDGER)
    if problems:
        print(
            "isqaflow: the spend plan is above the budget; no job was started:\n  "
            + "\n  ".join(problems),
            file=sys.stderr,
            flush=True,
        )
        sys.exit(1)
