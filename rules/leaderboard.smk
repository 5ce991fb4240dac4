"""One leaderboard across the suites: every system -- the models the workflow runs and the
systems read from files -- in one table (results/tables/leaderboard.*), from the suites'
tables, with n per cell and each judge's known-answer controls in the caption."""


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/leaderboard.smk"


rule leaderboard:
    input:
        # the suites' tables the board reads, each a named input (isqaflow.suites: board_tables)
        unpack(lambda wc: leaderboard_tables()),
        scores=lambda wc: leaderboard_score_files(),
        validity=rules.validity_table.output.summary,
        systems=lambda wc: systems_targets(),
        # the arena judges' panel: agreement and leave one out (rule judge_audit)
        panel="results/tables/judges_panel.csv",
        panel_loo="results/tables/judges_panel_loo.csv",
    output:
        tables=report(
            LEADERBOARD,
            caption="../report/leaderboard.rst",
            category="Leaderboard",
        ),
        long="results/tables/leaderboard_long.csv",
        # the page the report opens on (report/workflow.rst): the leaderboard at a glance
        front=report(
            FRONT_PAGE,
            caption="../report/leaderboard.rst",
            category="Leaderboard",
        ),
    log:
        "logs/leaderboard.log",
    localrule: local_stage("default")
    conda:
        "../envs/data.yaml"
    threads: threads_for("default")
    resources:
        **cluster_resources("default", gpu=0),
    params:
        summary_systems=lambda wc: leaderboard_summary_systems(),
        # the SELF flags: judge x system with model families (rules/inputs/judges.smk)
        judge_pairs=lambda wc: judge_audit_pairs(),
        rounds=config["metrics"]["bootstrap_rounds"],
        seed=config["seed"],
        # every record is the workflow's own: no other benchmark's origin
        origins={},
        code=code("isqaflow.report.leaderboard"),
    script:
        "../scripts/leaderboard.py"
