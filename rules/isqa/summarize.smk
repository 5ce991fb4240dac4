"""ISQA: model-generated questions, baseline and pre-hoc prompts, generic feedback,
and iterative factuality refinement (Algorithm 1), for every dataset x summarizer x run.
"""


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/summarize.smk"


rule generate_questions:
    input:
        papers=lambda wc: papers_file(wc.dataset),
        model=lambda wc: model_files(question_source("generated")["model"]),
        gpu_smoke=gpu_smoke_gate("generate_questions"),
    output:
        papers="results/questions/{dataset}/generated.jsonl",
    log:
        "logs/generate_questions/{dataset}.log",
    benchmark:
        benchmark_file("generate_questions", "{dataset}")
    # the ISQA chain: the run with generated questions
    priority: 70
    localrule: local_stage("generate")
    conda:
        conda_env("torch")
    threads: threads_for("generate")
    resources:
        **cluster_resources("generate", gpu=gpus_for("generate")),
    params:
        model=lambda wc: model_spec(question_source("generated")["model"]),
        mode=lambda wc: question_source("generated")["mode"],
        generation=lambda wc: question_source("generated")["generation"],
        pipeline=lambda wc: question_source("generated")["spacy_pipeline"],
        per_paper=lambda wc: question_source("generated")["per_paper"],
        seed=config["seed"],
        code=code("isqaflow.isqa.questions"),
    script:
        "../../scripts/generate_questions.py"


rule baseline_summaries:
    input:
        papers=lambda wc: papers_file(wc.dataset),
        model=lambda wc: model_files(wc.summarizer),
        gpu_smoke=gpu_smoke_gate("baseline_summaries"),
    output:
        summaries="results/summaries/{dataset}/{summarizer}/baseline.jsonl",
    log:
        "logs/baseline_summaries/{dataset}/{summarizer}.log",
    benchmark:
        benchmark_file("baseline_summaries", "{dataset}/{summarizer}")
    # the ISQA chain: its first summaries
    priority: 80
    localrule: local_stage("generate")
    conda:
        conda_env("torch")
    threads: threads_for("generate")
    resources:
        **cluster_resources(
            "generate",
            gpu=lambda wc: planned_gpus(
                "generate", "baseline_summaries", wc, wc.summarizer
            ),
        ),
    params:
        model=lambda wc: planned_spec("baseline_summaries", wc, wc.summarizer),
        prompts=config["isqa"]["prompts"],
        generation=config["isqa"]["summary_generation"],
        code=code("isqaflow.isqa.summarize"),
    script:
        "../../scripts/baseline_summaries.py"


rule generic_feedback:
    input:
        papers=lambda wc: papers_file(wc.dataset),
        model=lambda wc: model_files(wc.summarizer),
        gpu_smoke=gpu_smoke_gate("generic_feedback"),
    output:
        summaries="results/summaries/{dataset}/{summarizer}/generic.jsonl",
    log:
        "logs/generic_feedback/{dataset}/{summarizer}.log",
    benchmark:
        benchmark_file("generic_feedback", "{dataset}/{summarizer}")
    # the ISQA chain: scoring waits for it
    priority: 70
    localrule: local_stage("generate")
    conda:
        conda_env("torch")
    threads: threads_for("generate")
    resources:
        **cluster_resources(
            "generate",
            gpu=lambda wc: planned_gpus(
                "generate", "generic_feedback", wc, wc.summarizer
            ),
        ),
    params:
        model=lambda wc: planned_spec("generic_feedback", wc, wc.summarizer),
        generation=config["isqa"]["summary_generation"],
        steps=config["isqa"]["generic_steps"],
        code=code("isqaflow.isqa.summarize"),
    script:
        "../../scripts/generic_feedback.py"


rule isqa_refine:
    input:
        papers=lambda wc: isqa_papers(wc.dataset, wc.questions),
        baseline="results/summaries/{dataset}/{summarizer}/baseline.jsonl",
        summarizer=lambda wc: model_files(wc.summarizer),
        feedback=lambda wc: feedback_files(wc.feedback),
        gpu_smoke=gpu_smoke_gate("isqa_refine"),
    output:
        steps="results/summaries/{dataset}/{summarizer}/isqa-{feedback}-{questions}.steps.jsonl",
        summaries="results/summaries/{dataset}/{summarizer}/isqa-{feedback}-{questions}.jsonl",
        # the feedback model's known-answer control (issue 12), run where the model is loaded
        validity="results/validity/feedback/{dataset}/{summarizer}/{feedback}-{questions}.jsonl",
    log:
        "logs/isqa_refine/{dataset}/{summarizer}/{feedback}-{questions}.log",
    benchmark:
        benchmark_file("isqa_refine", "{dataset}/{summarizer}/{feedback}-{questions}")
    # the ISQA chain
    priority: 70
    localrule: local_stage("generate")
    conda:
        conda_env("torch")
    threads: threads_for("generate")
    resources:
        **cluster_resources(
            "generate",
            gpu=lambda wc: planned_gpus(
                "generate",
                "isqa_refine",
                wc,
                wc.summarizer,
                feedback_entry(wc.feedback)["model"],
            ),
        ),
    params:
        summarizer=lambda wc: planned_spec("isqa_refine", wc, wc.summarizer),
        feedback=lambda wc: planned_spec(
            "isqa_refine", wc, feedback_entry(wc.feedback)["model"]
        ),
        adapter=lambda wc: feedback_adapter_dir(wc.feedback),
        settings=lambda wc: refine_settings(wc.feedback),
        summary_generation=config["isqa"]["summary_generation"],
        feedback_generation=config["isqa"]["feedback_generation"],
        validity=lambda wc: feedback_control_settings(wc.questions),
        code=code("isqaflow.isqa.refine"),
    script:
        "../../scripts/isqa_refine.py"
