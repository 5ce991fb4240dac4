"""Metrics of every summary (QAGS, QuestEval, ROUGE; every ISQA step), the ISQA paper's
Tables 1-4 and Figure 3 with confidence intervals, and human-evaluation sheets."""


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/metrics.smk"


rule score_summaries:
    input:
        papers=lambda wc: papers_file(wc.dataset),
        summaries=lambda wc: summary_files(wc.dataset, wc.summarizer),
        models=lambda wc: metric_model_files(),
        gpu_smoke=gpu_smoke_gate("score_summaries"),
    output:
        scores="results/metrics/{dataset}/{summarizer}/scores.jsonl",
        details="results/metrics/{dataset}/{summarizer}/questions.jsonl",
    log:
        "logs/score_summaries/{dataset}/{summarizer}.log",
    benchmark:
        benchmark_file("score_summaries", "{dataset}/{summarizer}")
    # the ISQA chain: the last model job before the tables
    priority: 60
    localrule: local_stage("generate")
    conda:
        conda_env("torch")
    threads: threads_for("generate")
    resources:
        **cluster_resources("generate", gpu=gpus_for("generate")),
    params:
        qg=lambda wc: metric_model("qg"),
        qa=lambda wc: metric_model("qa"),
        settings=lambda wc: metric_settings(),
        weighter=lambda wc: metric_weighter(),
        code=code("isqaflow.metrics.score", "isqaflow.metrics.scorers"),
    script:
        "../../scripts/score_summaries.py"


rule metric_controls:
    input:
        papers=lambda wc: papers_file(wc.dataset),
        models=lambda wc: metric_model_files(),
        gpu_smoke=gpu_smoke_gate("metric_controls"),
    output:
        records="results/validity/metrics/{dataset}.jsonl",
    log:
        "logs/metric_controls/{dataset}.log",
    benchmark:
        benchmark_file("metric_controls", "{dataset}")
    localrule: local_stage("generate")
    conda:
        conda_env("torch")
    threads: threads_for("generate")
    resources:
        **cluster_resources("generate", gpu=gpus_for("generate")),
    params:
        qg=lambda wc: metric_model("qg"),
        qa=lambda wc: metric_model("qa"),
        settings=lambda wc: metric_settings(),
        weighter=lambda wc: metric_weighter(),
        controls=config["validity"]["metrics"]["controls"],
        papers=config["validity"]["metrics"]["papers"],
        others=config["validity"]["metrics"]["others"],
        seed=config["seed"],
        code=code("isqaflow.metrics.controls"),
    script:
        "../../scripts/metric_controls.py"


rule isqa_tables:
    input:
        scores=lambda wc: [
            f"results/metrics/{d}/{s}/scores.jsonl" for d, s in isqa_pairs()
        ],
        steps=lambda wc: isqa_steps_files(),
        controls=lambda wc: metric_validity_files() + feedback_validity_files(),
        # the filled human sheets, for isqa_ppi
        human=lambda wc: isqa_human_inputs(),
    output:
        tables=report(
            expand(
                "results/tables/isqa_{table}.{ext}",
                table=ISQA_TABLES,
                ext=["csv", "md", "tex"],
            ),
            caption="../../report/isqa_tables.rst",
            category="ISQA",
        ),
        long=expand("results/tables/isqa_{table}_long.csv", table=ISQA_LONG_TABLES),
        figures=report(
            expand(
                "results/figures/isqa_figure3_{dataset}.{ext}",
                dataset=config["isqa"]["datasets"],
                ext=["png", "svg"],
            ),
            caption="../../report/isqa_figure3.rst",
            category="ISQA",
        ),
    log:
        "logs/isqa_tables.log",
    localrule: local_stage("tables")
    conda:
        "../../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        main_feedback=config["metrics"]["main_feedback"],
        feedback_models=list(config["isqa"]["feedback_models"]),
        datasets=config["isqa"]["datasets"],
        rounds=config["metrics"]["bootstrap_rounds"],
        zero_papers=config["metrics"]["zero_papers"],
        seed=config["seed"],
        ppi=lambda wc: isqa_ppi_params(),
        code=code("isqaflow.metrics.tables"),
    script:
        "../../scripts/isqa_tables.py"


rule human_eval_sheets:
    input:
        summaries=lambda wc: summary_files(wc.dataset, wc.summarizer),
    output:
        sheets=expand(
            "results/human_eval/{{dataset}}/{{summarizer}}/sheet-{annotator}.csv",
            annotator=config["human_eval"]["annotators"],
        ),
        key="results/human_eval/{dataset}/{summarizer}/key.csv",
        assignment="results/human_eval/{dataset}/{summarizer}/assignment.json",
    log:
        "logs/human_eval_sheets/{dataset}/{summarizer}.log",
    localrule: local_stage("tables")
    conda:
        "../../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        systems=config["human_eval"]["systems"],
        papers=config["human_eval"]["papers"],
        shared=config["human_eval"]["shared"],
        annotators=config["human_eval"]["annotators"],
        seed=config["seed"],
        code=code("isqaflow.metrics.human"),
    script:
        "../../scripts/human_eval_sheets.py"


rule human_eval_results:
    input:
        key="results/human_eval/{dataset}/{summarizer}/key.csv",
        assignment="results/human_eval/{dataset}/{summarizer}/assignment.json",
        filled=lambda wc: list(human_eval_filled(wc.dataset, wc.summarizer).values()),
    output:
        factuality=report(
            "results/human_eval/{dataset}/{summarizer}/factuality.csv",
            caption="../../report/human_eval.rst",
            category="ISQA",
        ),
        agreement="results/human_eval/{dataset}/{summarizer}/agreement.csv",
    log:
        "logs/human_eval_results/{dataset}/{summarizer}.log",
    localrule: local_stage("tables")
    conda:
        "../../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        annotators=lambda wc: list(human_eval_filled(wc.dataset, wc.summarizer)),
        seed=config["seed"],
        code=code("isqaflow.metrics.human"),
    script:
        "../../scripts/human_eval_results.py"
