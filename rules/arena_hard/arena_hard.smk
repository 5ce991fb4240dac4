"""Arena-Hard-Auto v0.1: the answerers answer its questions, each judge judges every answer
against the baseline's in two games (with its known-answer controls, results/validity/arena_hard/),
and Bradley-Terry scores the answerers against the baseline, plainly and with style control
(results/tables/arena_hard_scores.*).
"""


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/arena_hard.smk"


rule arena_hard_answers:
    input:
        questions=lambda wc: arena_hard_questions(),
        model=lambda wc: generator_files(arena_hard_answerer(wc.answerer)),
        gpu_smoke=gpu_smoke_gate("arena_hard_answers"),
    output:
        answers="results/arena_hard/answers/{answerer}.jsonl",
    log:
        "logs/arena_hard_answers/{answerer}.log",
    benchmark:
        benchmark_file("arena_hard_answers", "{answerer}")
    localrule: local_stage("generate")
    conda:
        conda_env("torch")
    threads: threads_for("generate")
    resources:
        **cluster_resources(
            "generate",
            gpu=lambda wc: planned_gpus(
                "generate",
                "arena_hard_answers",
                wc,
                arena_hard_answerer(wc.answerer)["model"],
            ),
        ),
    params:
        model=lambda wc: planned_spec(
            "arena_hard_answers", wc, arena_hard_answerer(wc.answerer)["model"]
        ),
        adapter=lambda wc: generator_adapter_dir(arena_hard_answerer(wc.answerer)),
        generation=lambda wc: config["arena_hard"]["generation"],
        limit=lambda wc: config["arena_hard"]["limit"],
        code=code("isqaflow.arena_hard.answers"),
    script:
        "../../scripts/arena_hard_answers.py"


rule arena_hard_judge:
    input:
        questions=lambda wc: arena_hard_questions(),
        baseline=lambda wc: arena_hard_baseline(),
        answers=lambda wc: arena_hard_answer_files(),
        model=lambda wc: model_files(arena_hard_judge_entry(wc.judge)["model"]),
        gpu_smoke=gpu_smoke_gate("arena_hard_judge"),
    output:
        # first: the job's call cache is named after it
        judgments="results/arena_hard/judgments/{judge}.jsonl",
        controls="results/validity/arena_hard/{judge}.jsonl",
    log:
        "logs/arena_hard_judge/{judge}.log",
    benchmark:
        benchmark_file("arena_hard_judge", "{judge}")
    localrule: local_stage("judge")
    conda:
        conda_env("torch")
    threads: threads_for("judge")
    resources:
        **cluster_resources(
            "judge",
            gpu=lambda wc: gpus_for(
                "judge", arena_hard_judge_entry(wc.judge)["model"]
            ),
        ),
    params:
        model=lambda wc: model_spec(arena_hard_judge_entry(wc.judge)["model"]),
        mode=lambda wc: arena_hard_judge_entry(wc.judge)["mode"],
        prompts=lambda wc: arena_hard_judge_entry(wc.judge)["prompts"],
        generation=lambda wc: arena_hard_judge_entry(wc.judge).get("generation"),
        limit=lambda wc: config["arena_hard"]["limit"],
        control_questions=lambda wc: config["arena_hard"]["control_questions"],
        code=code("isqaflow.arena_hard.judge"),
    script:
        "../../scripts/arena_hard_judge.py"


rule arena_hard_browser:
    input:
        questions=lambda wc: arena_hard_questions(),
        baseline=lambda wc: arena_hard_baseline(),
        answers=lambda wc: arena_hard_answer_files(),
        judgments=lambda wc: arena_hard_judgment_files(),
        controls=lambda wc: arena_hard_validity_files(),
    output:
        page=report(
            "results/browser/arena_hard.html",
            caption="../../report/browser.rst",
            category="Judgments",
            labels={"suite": "Arena-Hard-Auto"},
        ),
    log:
        "logs/arena_hard_browser.log",
    localrule: local_stage("tables")
    conda:
        "../../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        code=code("isqaflow.arena_hard.browse"),
    script:
        "../../scripts/arena_hard_browser.py"


# Style control's counts: each answer's tokens (one tokenizer for all, as v0.1's cl100k_base) and
# markdown; a tokenizer only, on the host that runs the tables (isqaflow.arena_hard.style).
rule arena_hard_style_counts:
    input:
        baseline=lambda wc: arena_hard_baseline(),
        answers=lambda wc: arena_hard_answer_files(),
        model=lambda wc: model_files(arena_hard_style_tokenizer()),
    output:
        counts="results/arena_hard/style_counts.jsonl",
    log:
        "logs/arena_hard_style_counts.log",
    localrule: local_stage("tables")
    conda:
        conda_env("torch")
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        tokenizer=lambda wc: model_spec(arena_hard_style_tokenizer()),
        code=code("isqaflow.arena_hard.style"),
    script:
        "../../scripts/arena_hard_style_counts.py"


rule arena_hard_tables:
    input:
        baseline=lambda wc: arena_hard_baseline(),
        answers=lambda wc: arena_hard_answer_files(),
        judgments=lambda wc: arena_hard_judgment_files(),
        controls=lambda wc: arena_hard_validity_files(),
        # none with style control off (arena_hard.style_control.tokenizer: null)
        style_counts=lambda wc: arena_hard_style_counts_files(),
    output:
        tables=report(
            expand("results/tables/arena_hard_scores.{ext}", ext=["csv", "md", "tex"]),
            caption="../../report/arena_hard_tables.rst",
            category="Hard prompts: Arena-Hard-Auto",  # after the validity table's ("Controls ...")
        ),
    log:
        "logs/arena_hard_tables.log",
    localrule: local_stage("tables")
    conda:
        "../../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        judges=lambda wc: [
            job.wildcard("judge") for job in model_jobs("arena_hard_judge")
        ],
        formats=None,  # every file a judge's model_judgment file
        strong_weight=lambda wc: config["arena_hard"]["strong_weight"],
        baseline=None,  # the model of the baseline's answers file
        rounds=lambda wc: config["arena_hard"]["bootstrap_rounds"],
        seed=config["seed"],
        style_tokenizer=lambda wc: arena_hard_style_tokenizer(),
        style_off="arena_hard.style_control.tokenizer: null",
        about="",
        code=code("isqaflow.arena_hard.tables"),
    script:
        "../../scripts/arena_hard_tables.py"
