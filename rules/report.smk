"""Provenance: the manifest of the run (git commit, config hash, dataset checksums, model
and adapter identities, package versions, seed, command), shown in the report; the judgment
browsers (every judged item on a static page per suite) and every table as HTML, so that the
report shows them inline."""


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/report.smk"


localrules:
    manifest,
    arena_browser,
    drfr_browser,
    table_html,


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
        # the tracker's settings change no result: switching tracking on reruns only track_run
        config={key: value for key, value in config.items() if key != "tracking"},
        raw=lambda wc: raw_dataset_files(),
        adapters=lambda wc: {a: adapter_dir(a) for a in config["finetune"]},
        weights=weight_records(),
        code_versions=lambda wc: stage_code_versions(),
        code=code("isqaflow.report.manifest", "isqaflow.spend"),
    script:
        "../scripts/manifest.py"


# Every judgment readable: one static page per judged suite (no server; opens from disk and
# inside the report), filters in the URL's hash (docs/outputs.md).
rule arena_browser:
    input:
        judged=lambda wc: list(arena_judged_files().values()),
        queries=lambda wc: arena_files("queries"),
        human=lambda wc: arena_human_files(),
        human_csv=config["datasets"]["rag"].get("human_labels") or [],
        controls=lambda wc: arena_validity_files(),
        summaries=lambda wc: arena_summary_files(),
    output:
        page=report(
            "results/browser/arena.html",
            caption="../report/browser.rst",
            category="Judgments",
            labels={"suite": "RAG-QA Arena"},
        ),
    log:
        "logs/arena_browser.log",
    conda:
        "../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        judged=lambda wc: arena_judged_files(),
        controls=config["validity"]["arena"]["controls"],
        per_domain=config["validity"]["arena"]["per_domain"],
        seed=config["seed"],
        rules=lambda wc: {
            j: arena_verdict_rule(j)["rule"] for j in config["arena"]["judges"]
        },
        code=code("isqaflow.arena.browse"),
    script:
        "../scripts/arena_browser.py"


rule drfr_browser:
    input:
        instructions=lambda wc: drfr_browser_inputs("instructions"),
        responses=lambda wc: drfr_browser_inputs("responses"),
        judgments=lambda wc: drfr_browser_inputs("judgments"),
        controls=lambda wc: drfr_browser_inputs("controls"),
        summaries=lambda wc: drfr_summary_browser_inputs(),
    output:
        page=report(
            "results/browser/drfr.html",
            caption="../report/browser.rst",
            category="Judgments",
            labels={"suite": "InFoBench DRFR"},
        ),
    log:
        "logs/drfr_browser.log",
    conda:
        "../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        datasets=lambda wc: drfr_browser_files(),
        summaries=lambda wc: drfr_summary_browser_files(),
        rules=lambda wc: {j: drfr_judge_rule(j) for j in config["drfr"]["judges"]},
        code=code("isqaflow.drfr.browse"),
    script:
        "../scripts/drfr_browser.py"


# Every table shown in the report itself: Snakemake's report shows .csv/.md/.tex as download
# links only, an .html result inline.  One job renders every table's page: a page is a small
# render of its Markdown (milliseconds), so one job per table spent nearly all its time starting
# an interpreter -- 30 start-ups in the embedded run (docs/speed.md).  The pages are the same
# files as before, each registered in the report with its own label and subcategory.
rule table_html:
    input:
        **readable_table_sources(),
    output:
        **{
            table: report(
                f"results/tables/{table}.html",
                caption="../report/table_html.rst",
                category="Tables",
                subcategory=table_suite(table),
                labels={"table": table},
            )
            for table in table_names()
        },
    log:
        "logs/table_html.log",
    conda:
        "../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        code=code("isqaflow.report.table_html"),
    script:
        "../scripts/table_html.py"


# Paired tests between systems judged on the same items (McNemar for DRFR's YES/NO,
# sign-flip for the arena's preferences), Holm-corrected.
rule paired_tests:
    input:
        arena=lambda wc: list(arena_judged_files().values()),
        drfr=lambda wc: list(drfr_judged_files().values()),
        validity=rules.validity_table.output.summary,
    output:
        tables=report(
            expand("results/tables/paired_tests.{ext}", ext=["csv", "md", "tex"]),
            caption="../report/paired_tests.rst",
            category="Leaderboard",
        ),
        matrix=report(
            expand("results/tables/paired_matrix.{ext}", ext=["csv", "md", "tex"]),
            caption="../report/paired_tests.rst",
            category="Leaderboard",
        ),
        figures=report(
            expand("results/figures/paired_tests.{ext}", ext=["png", "svg"]),
            caption="../report/paired_tests.rst",
            category="Leaderboard",
        ),
    log:
        "logs/paired_tests.log",
    localrule: local_stage("tables")
    conda:
        "../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        arena=lambda wc: arena_judged_files(),
        drfr=lambda wc: drfr_judged_files(),
        rounds=config["metrics"]["bootstrap_rounds"],
        seed=config["seed"],
        code=code("isqaflow.report.paired"),
    script:
        "../scripts/paired_tests.py"
