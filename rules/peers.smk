"""The peers' released judgments (config peers:, config/peers.yaml): read as the workflow's judged
records, then the suites' own table code and leaderboard run on them alone, under
results/peers/ -- nothing judged, no model loaded (target peers; docs/reproduction.md).
"""

from isqaflow.data.peers.records import SUITES as PEER_SUITES
from isqaflow.data.peers.records import (
    leaderboard_origins,
    setting_label as peer_setting_label,
)


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/peers.smk"


rule peer_judgments:
    input:
        files=lambda wc: peer_entry(wc.name)["files"],
        answers=lambda wc: peer_entry(wc.name).get("answers") or [],
    output:
        judged="results/peers/judged/{name}.jsonl",
    log:
        "logs/peer_judgments/{name}.log",
    wildcard_constraints:
        name=names_pattern(config["peers"]),
    localrule: local_stage("tables")
    conda:
        "../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        entry=lambda wc: peer_entry(wc.name),
        code=code("isqaflow.data.peers.records"),
    script:
        "../scripts/peer_judgments.py"


# The arena's tables from the released pairs alone: rule arena_tables' script and library, with
# no answers, retrieval, human labels, summaries or known-answer controls (none was run).
rule peer_arena_tables:
    input:
        judged=lambda wc: list(peer_judged_files("arena").values()),
        answers=[],
        recall=[],
        human=[],
        human_csv=[],
        summaries=[],
        controls=[],
        difficulty=config["arena"]["length_control"]["difficulty"] or [],
    output:
        tables=expand(
            "results/peers/tables/arena_{table}.{ext}",
            table=ARENA_TABLES,
            ext=["csv", "md", "tex"],
        ),
        figures=expand("results/peers/figures/arena_ratings.{ext}", ext=["png", "svg"]),
    log:
        "logs/peer_arena_tables.log",
    localrule: local_stage("tables")
    conda:
        "../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        judged=lambda wc: peer_judged_files("arena"),
        recall={},
        human_sample=config["datasets"]["rag"]["human_sample"],
        elo=config["arena"]["elo"],
        rounds=config["arena"]["bootstrap_rounds"],
        seed=config["seed"],
        failed_judgments=config["arena"]["failed_judgments"],
        length_control=config["arena"]["length_control"],
        code=code("isqaflow.arena.tables"),
    script:
        "../scripts/arena_tables.py"


rule peer_drfr_tables:
    input:
        judgments=lambda wc: list(peer_judged_files("drfr").values()),
        summaries=[],
        controls=[],
    output:
        tables=expand(
            "results/peers/tables/drfr_{table}.{ext}",
            table=DRFR_TABLES,
            ext=["csv", "md", "tex"],
        ),
        long=expand(
            "results/peers/tables/drfr_{table}_long.csv", table=["table5", "summaries"]
        ),
        figures=expand(
            "results/peers/figures/drfr_constraints.{ext}", ext=["png", "svg"]
        ),
    log:
        "logs/peer_drfr_tables.log",
    localrule: local_stage("tables")
    conda:
        "../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        rounds=config["drfr"]["bootstrap_rounds"],
        seed=config["seed"],
        ppi={},  # no human labels of the peers' judgments: drfr_ppi without rows
        code=code("isqaflow.drfr.tables"),
    script:
        "../scripts/drfr_tables.py"


# No known-answer control was run: the validity table says so, and the leaderboard's caption.
rule peer_validity_table:
    input:
        controls=[],
    output:
        tables=expand("results/peers/tables/validity.{ext}", ext=["csv", "md", "tex"]),
        summary="results/peers/validity/summary.json",
    log:
        "logs/peer_validity_table.log",
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


rule peer_leaderboard:
    input:
        # the board's tables of each suite the peers' records feed
        unpack(lambda wc: peer_leaderboard_tables()),
        scores=[],
        validity=rules.peer_validity_table.output.summary,
        systems=[],
        panel=[],
        panel_loo=[],
    output:
        tables=PEER_LEADERBOARD,
        long="results/peers/tables/leaderboard_long.csv",
        front="results/peers/report/at_a_glance.html",
    log:
        "logs/peer_leaderboard.log",
    localrule: local_stage("default")
    conda:
        "../envs/data.yaml"
    threads: threads_for("default")
    resources:
        **cluster_resources("default", gpu=0),
    params:
        summary_systems={},
        judge_pairs=[],
        rounds=config["metrics"]["bootstrap_rounds"],
        seed=config["seed"],
        # each entry's benchmark, publisher and baseline (isqaflow.data.peers.records)
        origins=leaderboard_origins(config["peers"]),
        code=code("isqaflow.report.leaderboard"),
    script:
        "../scripts/leaderboard.py"


# `snakemake peers --configfile config/peers.yaml`: the peers' tables and leaderboard, nothing else.
rule peers:
    input:
        peer_targets(),
