"""Judges you can audit: self-preference flags (judge x system, model families), judge
noise (flip rates of repeated judgments), the known-answer controls as canaries against the
previous run's manifest, and the arena judges as a panel (agreement, panel verdict, leave
one out)."""


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/judges.smk"


rule judge_audit:
    input:
        judged=lambda wc: [
            f for run in judge_audit_judged().values() for f in run.values()
        ],
        drfr=lambda wc: list(drfr_judged_files().values()),
        arena_controls=lambda wc: arena_validity_files(),
        drfr_controls=lambda wc: drfr_validity_files(),
        validity=rules.validity_table.output.summary,
    output:
        tables=report(
            JUDGE_AUDIT,
            caption="../report/judges.rst",
            category="Judges",
        ),
        canaries="results/judges/canaries.json",
    log:
        "logs/judge_audit.log",
    localrule: local_stage("tables")
    conda:
        "../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        judged=lambda wc: judge_audit_judged(),
        drfr=lambda wc: judge_audit_drfr(),
        # mode, generation and reuse_calls of every judge: what a flip rate is, the panel's note
        judges=lambda wc: judge_audit_entries(),
        pairs=judge_audit_pairs(),
        # read if there (the run before this one), not an input: the manifest is made last
        previous_manifest="results/manifest.json",
        panel_rule=config["arena"]["panel_verdict"],
        rounds=config["arena"]["bootstrap_rounds"],
        seed=config["seed"],
        code=code("isqaflow.arena.judging.judge_audit"),
    script:
        "../scripts/judge_audit.py"
