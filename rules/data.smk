"""Datasets: pinned downloads verified by checksum, archive members, and converters
from each raw format to the normalized records under results/data/."""

# Downloads and archive extraction need the network or only move bytes: on the submit host
# (compute nodes often have no internet), unless resources.download.local is false
# (localrule: every rule follows its stage's resources.<stage>.local).


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/data.smk"


rule download:
    output:
        file="resources/downloads/{download}/{filename}",
    log:
        "logs/download/{download}/{filename}.log",
    wildcard_constraints:
        filename="[^/]+",
    retries: 2
    localrule: local_stage("download")
    conda:
        "../envs/data.yaml"
    threads: threads_for("download")
    resources:
        **cluster_resources("download", gpu=0),
    params:
        url=lambda wc: config["downloads"][wc.download]["url"],
        checksum=lambda wc: config["downloads"][wc.download]["checksum"],
        code=code("isqaflow.data.download"),
    script:
        "../scripts/download.py"


rule extract:
    input:
        archive=lambda wc: f"resources/downloads/{wc.download}/{download_filename(wc.download)}",
    output:
        file="resources/extracted/{download}/{member}",
    log:
        "logs/extract/{download}/{member}.log",
    wildcard_constraints:
        member=".+",
    localrule: local_stage("download")
    conda:
        "../envs/data.yaml"
    threads: threads_for("download")
    resources:
        **cluster_resources("download", gpu=0),
    params:
        member=lambda wc: wc.member,
        code=code("isqaflow.data.download"),
    script:
        "../scripts/extract.py"


rule convert_papers:
    input:
        raw=lambda wc: raw_paths(papers_entry(wc.dataset)["files"]),
    output:
        papers="results/data/papers/{dataset}.jsonl",
    log:
        "logs/convert_papers/{dataset}.log",
    # the ISQA chain (summaries -> refinement -> scoring) is the longest
    priority: 80
    localrule: local_stage("data")
    conda:
        "../envs/data.yaml"
    threads: threads_for("data")
    resources:
        **cluster_resources("data", gpu=0),
    params:
        format=lambda wc: papers_entry(wc.dataset)["format"],
        max_papers=lambda wc: papers_entry(wc.dataset).get("max_papers"),
        code=code("isqaflow.data.convert"),
    script:
        "../scripts/convert_papers.py"


rule convert_qa_train:
    input:
        raw=lambda wc: raw_paths(qa_entry(wc.dataset)[wc.split]),
        # the dev split is held out from the train split: no example in both
        train=lambda wc: (
            [f"results/data/qa/{wc.dataset}.train.jsonl"] if wc.split == "dev" else []
        ),
    output:
        examples="results/data/qa/{dataset}.{split}.jsonl",
    log:
        "logs/convert_qa_train/{dataset}.{split}.log",
    # on the critical path: training data -> fine-tuning
    priority: 90
    localrule: local_stage("data")
    conda:
        "../envs/data.yaml"
    threads: threads_for("data")
    resources:
        **cluster_resources("data", gpu=0),
    params:
        lenient=lambda wc: qa_entry(wc.dataset)["lenient"],
        code=code("isqaflow.data.convert"),
    script:
        "../scripts/convert_qa_train.py"


rule convert_instructions:
    input:
        raw=lambda wc: raw_paths(
            config["datasets"]["instructions"][wc.dataset]["files"]
        ),
    output:
        instructions="results/data/instructions/{dataset}.jsonl",
    log:
        "logs/convert_instructions/{dataset}.log",
    # seconds, and the DRFR chain starts here
    priority: 90
    localrule: local_stage("data")
    conda:
        "../envs/data.yaml"
    threads: threads_for("data")
    resources:
        **cluster_resources("data", gpu=0),
    params:
        code=code("isqaflow.data.convert"),
    script:
        "../scripts/convert_instructions.py"


rule convert_rag:
    input:
        annotations=lambda wc: raw_paths(rag_domain(wc.domain)["annotations"]),
        corpus=lambda wc: rag_corpus(wc.domain),
    output:
        queries="results/data/rag/{domain}/queries.jsonl",
        passages="results/data/rag/{domain}/passages.jsonl",
    log:
        "logs/convert_rag/{domain}.log",
    # seconds, and the arena chain (retrieval -> answers -> judges) starts here: at priority 0
    # one domain's conversion waited until 342 s of a 539 s DAG and the chain ended it
    priority: 90
    localrule: local_stage("data")
    conda:
        "../envs/data.yaml"
    threads: threads_for("data")
    resources:
        **cluster_resources("data", gpu=0),
    params:
        corpus_format=lambda wc: rag_domain(wc.domain).get("corpus_format"),
        passage_words=config["datasets"]["rag"]["passage_words"],
        code=code("isqaflow.data.convert"),
    script:
        "../scripts/convert_rag.py"


# The DRFR human labels of a dataset (one file per responder), checked against its converted
# instructions right after them (priority 90); drfr_tables, the one job that reads them, waits.
rule check_drfr_human_labels:
    input:
        labels=lambda wc: list(instruction_labels(wc.dataset).values()),
        instructions=lambda wc: instructions_file(wc.dataset),
    output:
        checked="results/data/instructions/{dataset}.human_labels.checked.json",
    log:
        "logs/check_drfr_human_labels/{dataset}.log",
    priority: 90
    localrule: local_stage("data")
    conda:
        "../envs/data.yaml"
    threads: threads_for("data")
    resources:
        **cluster_resources("data", gpu=0),
    params:
        labels=lambda wc: instruction_labels(wc.dataset),
        code=code("isqaflow.data.instruction_labels"),
    script:
        "../scripts/check_drfr_human_labels.py"


# The human preference file, checked against the converted queries right after them (priority
# 90); the jobs that read the labels (arena_judge_checks, and through it arena_tables) wait for
# it, so a malformed file stops them before they start, not inside the judge's job.  Only those:
# a gate before every judge would rerun every judge of every suite when the labels change.
rule check_human_labels:
    input:
        labels=config["datasets"]["rag"].get("human_labels") or [],
        queries=lambda wc: human_labels_queries(),
    output:
        checked=HUMAN_LABELS_CHECKED,
    log:
        "logs/check_human_labels.log",
    priority: 90
    localrule: local_stage("data")
    conda:
        "../envs/data.yaml"
    threads: threads_for("data")
    resources:
        **cluster_resources("data", gpu=0),
    params:
        code=code("isqaflow.data.human_labels"),
    script:
        "../scripts/check_human_labels.py"
