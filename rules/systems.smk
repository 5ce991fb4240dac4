"""Systems from files: one's own answers, responses and summaries, checked against the
datasets (file, line, id) and written as the records of the models' own outputs, so that
every judge, metric, table and the leaderboard treat them like the models the workflow
runs (docs/own-systems.md).  The import jobs run first (priority): a malformed file stops
the run before any job that reads it.  The judges read a system's records, not
results/systems/checked.json (that gate, before every judge, reran every judge of every suite
when one file changed; as an ancient() input it hid the judges' own changes instead)."""


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/systems.smk"


# Seconds each, right after the data conversion: on the submitting host, not in a queue.
localrules:
    file_answers,
    file_responses,
    file_summaries,
    check_systems,


# A file-based answerer or responder is written by these rules, a model's outputs by
# rag_answers and drfr_responses: each rule is constrained to its own names.


rule file_answers:
    input:
        queries=lambda wc: arena_files("queries"),
        system=lambda wc: system_inputs(config["arena"]["answerers"][wc.answerer]),
    output:
        answers="results/arena/answers/{retriever}-k{k}/{answerer}.jsonl",
        check="results/systems/arena/{retriever}-k{k}/{answerer}.json",
    log:
        "logs/file_answers/{retriever}-k{k}/{answerer}.log",
    wildcard_constraints:
        answerer=names_pattern(file_answerers()),
    priority: 90
    conda:
        "../envs/data.yaml"
    threads: threads_for("default")
    resources:
        **cluster_resources("default", gpu=0),
    params:
        options=lambda wc: system_file_options(
            config["arena"]["answerers"][wc.answerer]
        ),
        code=code("isqaflow.arena.file_answers"),
    script:
        "../scripts/file_answers.py"


rule file_responses:
    input:
        instructions=lambda wc: instructions_file(wc.dataset),
        system=lambda wc: system_inputs(config["drfr"]["responders"][wc.responder]),
    output:
        responses="results/drfr/responses/{dataset}/{responder}.jsonl",
        check="results/systems/drfr/{dataset}/{responder}.json",
    log:
        "logs/file_responses/{dataset}/{responder}.log",
    wildcard_constraints:
        responder=names_pattern(file_responders()),
    priority: 90
    conda:
        "../envs/data.yaml"
    threads: threads_for("default")
    resources:
        **cluster_resources("default", gpu=0),
    params:
        options=lambda wc: system_file_options(
            config["drfr"]["responders"][wc.responder]
        ),
        code=code("isqaflow.drfr.file_responses"),
    script:
        "../scripts/file_responses.py"


rule file_summaries:
    input:
        papers=lambda wc: papers_file(wc.dataset),
        system=lambda wc: system_inputs(file_summary_entries()[wc.summarizer]),
    output:
        summaries="results/summaries/{dataset}/{summarizer}/file.jsonl",
        check="results/systems/isqa/{dataset}/{summarizer}.json",
    log:
        "logs/file_summaries/{dataset}/{summarizer}.log",
    wildcard_constraints:
        summarizer=names_pattern(list(file_summary_entries())),
    priority: 90
    conda:
        "../envs/data.yaml"
    threads: threads_for("default")
    resources:
        **cluster_resources("default", gpu=0),
    params:
        options=lambda wc: system_file_options(file_summary_entries()[wc.summarizer]),
        code=code("isqaflow.isqa.file_summaries"),
    script:
        "../scripts/file_summaries.py"


rule check_systems:
    input:
        checks=lambda wc: system_check_files(),
    output:
        checked=SYSTEMS_CHECKED,
    log:
        "logs/check_systems.log",
    conda:
        "../envs/data.yaml"
    threads: threads_for("default")
    resources:
        **cluster_resources("default", gpu=0),
    params:
        code=code("isqaflow.data.outputs"),
    script:
        "../scripts/check_systems.py"
