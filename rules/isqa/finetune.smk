"""Feedback model: LoRA fine-tuning on QA-with-evidence data, and its evaluation
before and after fine-tuning (consistency, answer and evidence ROUGE)."""


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/finetune.smk"


rule finetune_feedback:
    input:
        train=lambda wc: qa_file(finetune_entry(wc.adapter)["data"], "train"),
        model=lambda wc: model_files(finetune_entry(wc.adapter)["base"]),
        gpu_smoke=gpu_smoke_gate("finetune_feedback"),
    output:
        weights="results/finetune/{adapter}/adapter/adapter_model.safetensors",
        adapter_config="results/finetune/{adapter}/adapter/adapter_config.json",
        train_log=report(
            "results/finetune/{adapter}/train_log.csv",
            caption="../../report/finetune_log.rst",
            category="Feedback model",
            labels={"adapter": "{adapter}", "table": "training loss per step"},
        ),
    log:
        "logs/finetune_feedback/{adapter}.log",
    benchmark:
        benchmark_file("finetune_feedback", "{adapter}")
    # on the critical path: adapter -> ISQA runs and responders -> scoring -> tables
    priority: 90
    localrule: local_stage("finetune")
    conda:
        conda_env("torch")
    threads: threads_for("finetune")
    resources:
        **cluster_resources("finetune", gpu=gpus_for("finetune")),
    params:
        base=lambda wc: model_spec(finetune_entry(wc.adapter)["base"]),
        settings=lambda wc: finetune_settings(wc.adapter),
        checkpoint_dir=lambda wc: f"results/finetune/{wc.adapter}/checkpoint",
        code=code("isqaflow.finetune.lora"),
    script:
        "../../scripts/finetune_feedback.py"


rule evaluate_feedback:
    input:
        dev=lambda wc: qa_file(finetune_entry(wc.adapter)["data"], "dev"),
        model=lambda wc: model_files(finetune_entry(wc.adapter)["base"]),
        adapter=lambda wc: adapter_files(wc.adapter),
        gpu_smoke=gpu_smoke_gate("evaluate_feedback"),
    output:
        summary="results/finetune/{adapter}/eval.json",
        examples="results/finetune/{adapter}/eval_examples.jsonl",
    log:
        "logs/evaluate_feedback/{adapter}.log",
    benchmark:
        benchmark_file("evaluate_feedback", "{adapter}")
    localrule: local_stage("generate")
    conda:
        conda_env("torch")
    threads: threads_for("generate")
    resources:
        **cluster_resources("generate", gpu=lambda wc: evaluation_gpus(wc.adapter)),
    params:
        base=lambda wc: evaluation_spec(wc.adapter),
        adapter_dir=lambda wc: adapter_dir(wc.adapter),
        generation=lambda wc: finetune_entry(wc.adapter)["evaluation"]["generation"],
        max_input_tokens=lambda wc: finetune_entry(wc.adapter)["evaluation"].get(
            "max_input_tokens", gpu_plan.EVALUATION_INPUT_TOKENS
        ),
        examples=lambda wc: finetune_entry(wc.adapter)["evaluation"]["examples"],
        prompt_style=lambda wc: finetune_settings(wc.adapter).get(
            "prompt_style", "isqa"
        ),
        seed=config["seed"],
        code=code("isqaflow.finetune.evaluate"),
    script:
        "../../scripts/evaluate_feedback.py"
