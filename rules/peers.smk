"""The peers' released judgments (config peers:, config/peers.yaml): read as the workflow's judged
records -- or, in a suite's own formats (Arena-Hard's), as released -- then the suites' own
table code and leaderboard run on them alone, under results/peers/ -- nothing judged, no model
loaded (target peers; docs/own-systems.md).
"""

from isqaflow.data.peers.records import JUDGED_BY as PEER_JUDGED_BY
from isqaflow.data.peers.records import READ_BY as PEER_READ_BY
from isqaflow.data.peers.records import SUITES as PEER_SUITES
from isqaflow.data.peers.records import (
    leaderboard_origins,
    released_files,
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
# no answers, retrieval, human labels, summaries or known-answer controls (none was run). Of
# arena-hard's battles they are ratings and lengths beside, off the leaderboard (their column is
# arena_hard_scores', below).
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


# Arena-Hard-Auto's score table from its released files as they are -- judgment and battles files
# are the suite's own formats -- read by rule arena_hard_tables' script and library: one fit per
# judge, no known-answer controls (none was run), style control off (the caption says why).
rule peer_arena_hard_tables:
    input:
        baseline=[],  # named: the released files' baseline (its answers among the answers)
        answers=lambda wc: peer_released("arena_hard").answers,
        judgments=lambda wc: peer_released("arena_hard").paths,
        controls=[],
        style_counts=[],
    output:
        tables=expand(
            "results/peers/tables/arena_hard_scores.{ext}", ext=["csv", "md", "tex"]
        ),
    log:
        "logs/peer_arena_hard_tables.log",
    localrule: local_stage("tables")
    conda:
        "../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        judges=lambda wc: peer_released("arena_hard").judges,
        formats=lambda wc: peer_released("arena_hard").formats,
        strong_weight=lambda wc: peer_released("arena_hard").strong_weights,
        baseline=lambda wc: peer_released("arena_hard").baseline,
        rounds=lambda wc: peer_bootstrap_rounds("arena_hard"),
        seed=config["seed"],
        style_tokenizer=None,
        # the released answers carry no token counts, and a tokenizer is a model this target
        # does not load (docs/own-systems.md)
        style_off=(
            "the released answers carry no token counts (v0.1 counts cl100k_base) and the "
            "peers target loads no tokenizer; arena-hard's published style-controlled scores "
            "were fitted on every leaderboard model's battles, which are not released "
            "(docs/reproduction.md)"
        ),
        about=lambda wc: peer_released("arena_hard").about,
        code=code("isqaflow.arena_hard.tables"),
    script:
        "../scripts/arena_hard_tables.py"


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
