"""InFoBench DRFR: responses of every model in the pool, the multi-turn YES/NO judge
(with its known-answer controls, results/validity/drfr/), DRFR tables and figure; and
the DRFR of the ISQA summaries (QA pairs as requirements).
"""


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/drfr.smk"


rule drfr_responses:
    input:
        instructions=lambda wc: instructions_file(wc.dataset),
        model=lambda wc: generator_files(responder_entry(wc.responder)),
        gpu_smoke=gpu_smoke_gate("drfr_responses"),
    output:
        responses="results/drfr/responses/{dataset}/{responder}.jsonl",
    log:
        "logs/drfr_responses/{dataset}/{responder}.log",
    benchmark:
        benchmark_file("drfr_responses", "{dataset}/{responder}")
    wildcard_constraints:
        responder=names_pattern(model_responders()),  # file-based ones: rule file_responses
    localrule: local_stage("generate")
    conda:
        conda_env("torch")
    threads: threads_for("generate")
    resources:
        **cluster_resources(
            "generate",
            gpu=lambda wc: planned_gpus(
                "generate",
                "drfr_responses",
                wc,
                responder_entry(wc.responder)["model"],
            ),
        ),
    params:
        model=lambda wc: planned_spec(
            "drfr_responses", wc, responder_entry(wc.responder)["model"]
        ),
        adapter=lambda wc: generator_adapter_dir(responder_entry(wc.responder)),
        generation=config["drfr"]["generation"],
        code=code("isqaflow.drfr.responses"),
    script:
        "../../scripts/drfr_responses.py"


rule drfr_judge:
    input:
        instructions=lambda wc: instructions_file(wc.dataset),
        responses=lambda wc: expand(
            "results/drfr/responses/{dataset}/{responder}.jsonl",
            dataset=wc.dataset,
            responder=config["drfr"]["responders"],
        ),
        model=lambda wc: model_files(judge_entry(wc.judge)["model"]),
        prompt=lambda wc: published_prompt_files("drfr", judge_entry(wc.judge)),
        gpu_smoke=gpu_smoke_gate("drfr_judge"),
    output:
        # first: the job's call cache is named after it
        judgments="results/drfr/judgments/{dataset}/{judge}.jsonl",
        controls="results/validity/drfr/{dataset}/{judge}.jsonl",
    log:
        "logs/drfr_judge/{dataset}/{judge}.log",
    benchmark:
        benchmark_file("drfr_judge", "{dataset}/{judge}")
    localrule: local_stage("judge")
    conda:
        conda_env("torch")
    threads: threads_for("judge")
    resources:
        **cluster_resources(
            "judge", gpu=lambda wc: gpus_for("judge", judge_entry(wc.judge)["model"])
        ),
    params:
        model=lambda wc: model_spec(judge_entry(wc.judge)["model"]),
        mode=lambda wc: judge_entry(wc.judge)["mode"],
        rule=lambda wc: drfr_judge_rule(wc.judge),
        generation=lambda wc: judge_entry(wc.judge).get("generation"),
        controls=config["validity"]["drfr"],
        repeats=lambda wc: judge_entry(wc.judge)["repeats"],
        seed=config["seed"],
        code=code("isqaflow.drfr.judge_responses"),
    script:
        "../../scripts/drfr_judge.py"


rule drfr_summaries:
    input:
        papers=lambda wc: papers_file(wc.dataset),
        summaries=lambda wc: summary_files(wc.dataset, wc.summarizer),
        model=lambda wc: model_files(judge_entry(wc.judge)["model"]),
        prompt=lambda wc: published_prompt_files("drfr", judge_entry(wc.judge)),
        gpu_smoke=gpu_smoke_gate("drfr_summaries"),
    output:
        judgments="results/drfr/summaries/{dataset}/{summarizer}.{judge}.jsonl",
    log:
        "logs/drfr_summaries/{dataset}/{summarizer}.{judge}.log",
    benchmark:
        benchmark_file("drfr_summaries", "{dataset}/{summarizer}.{judge}")
    localrule: local_stage("judge")
    conda:
        conda_env("torch")
    threads: threads_for("judge")
    resources:
        **cluster_resources(
            "judge", gpu=lambda wc: gpus_for("judge", judge_entry(wc.judge)["model"])
        ),
    params:
        systems=lambda wc: judged_summary_systems(wc.dataset, wc.summarizer),
        model=lambda wc: model_spec(judge_entry(wc.judge)["model"]),
        mode=lambda wc: judge_entry(wc.judge)["mode"],
        rule=lambda wc: drfr_judge_rule(wc.judge),
        generation=lambda wc: judge_entry(wc.judge).get("generation"),
        code=code("isqaflow.drfr.summaries"),
    script:
        "../../scripts/drfr_summaries.py"


rule drfr_tables:
    input:
        judgments=lambda wc: drfr_judgment_files(),
        summaries=lambda wc: drfr_summary_judgment_files(),
        controls=lambda wc: drfr_validity_files(),
        # the human labels (checked first: rule check_drfr_human_labels) and the responses
        # they label, for drfr_ppi
        human=lambda wc: drfr_human_inputs(),
    output:
        tables=report(
            expand(
                "results/tables/drfr_{table}.{ext}",
                table=DRFR_TABLES,
                ext=["csv", "md", "tex"],
            ),
            caption="../../report/drfr_tables.rst",
            category="InFoBench DRFR",
        ),
        long=expand(
            "results/tables/drfr_{table}_long.csv", table=["table5", "summaries"]
        ),
        figures=report(
            expand("results/figures/drfr_constraints.{ext}", ext=["png", "svg"]),
            caption="../../report/drfr_figure.rst",
            category="InFoBench DRFR",
        ),
    log:
        "logs/drfr_tables.log",
    localrule: local_stage("tables")
    conda:
        "../../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        rounds=config["drfr"]["bootstrap_rounds"],
        seed=config["seed"],
        ppi=lambda wc: drfr_ppi_params(),
        code=code("isqaflow.drfr.tables"),
    script:
        "../../scripts/drfr_tables.py"
