"""RAG-QA Arena: retrieval, answers of every model, pairwise judging against LFRQA
and between models, win rates, Elo and Bradley-Terry with bootstrap intervals,
judge-human agreement, known-answer controls of every judge, and the ISQA summaries in
the same arena."""


# This stage's input functions (rules with functions fail snakemake --lint).
include: "inputs/arena.smk"


# Every judge's verdict rule is checked when the workflow is built, before any job.
for _judge in config["arena"]["judges"]:
    arena_verdict_rule(_judge)


rule retrieve:
    input:
        queries="results/data/rag/{domain}/queries.jsonl",
        passages="results/data/rag/{domain}/passages.jsonl",
        gpu_smoke=gpu_smoke_gate("retrieve"),
    output:
        hits="results/arena/retrieval/{domain}/{retriever}.jsonl",
        recall="results/arena/retrieval/{domain}/{retriever}.recall.json",
    log:
        "logs/retrieve/{domain}/{retriever}.log",
    benchmark:
        benchmark_file("retrieve", "{domain}/{retriever}")
    wildcard_constraints:
        retriever=retrievers_served_by("retrieve"),
    # seconds each, and every rag_answers job waits on all domains' hits: at priority 0 the
    # last BM25 job ran at 419 s of a 596 s DAG and held the arena chain (answers -> judge) back
    priority: 90
    localrule: local_stage("retrieve")
    conda:
        conda_env("torch")
    threads: threads_for("retrieve")
    resources:
        **cluster_resources("retrieve", gpu=lambda wc: retriever_gpus(wc.retriever)),
    params:
        backend=lambda wc: config["arena"]["retrievers"][wc.retriever]["backend"],
        options=lambda wc: retriever_options(wc.retriever),
        ks=config["arena"]["k"],
        cache_dir=lambda wc: f"resources/indexes/{wc.domain}/{wc.retriever}",
        code=code("isqaflow.arena.retrieval.bm25_dense"),
    script:
        "../../scripts/retrieve.py"


# ColBERTv2 (the paper's retriever) through PyLate, in its own environment: a PLAID index
# per domain, built once, then the same hits and recall files as rule retrieve.
rule colbert_index:
    input:
        passages="results/data/rag/{domain}/passages.jsonl",
        weights=lambda wc: retriever_weight_files(wc.retriever),
        gpu_smoke=gpu_smoke_gate("colbert_index"),
    output:
        meta="resources/indexes/{domain}/{retriever}/colbert/meta.json",
    log:
        "logs/colbert_index/{domain}/{retriever}.log",
    benchmark:
        benchmark_file("colbert_index", "{domain}/{retriever}")
    wildcard_constraints:
        retriever=retrievers_served_by("colbert"),
    localrule: local_stage("retrieve")
    conda:
        conda_env("colbert")
    threads: threads_for("retrieve")
    resources:
        **cluster_resources("retrieve", gpu=lambda wc: retriever_gpus(wc.retriever)),
    params:
        options=lambda wc: retriever_options(wc.retriever),
        index_dir=lambda wc: f"resources/indexes/{wc.domain}/{wc.retriever}",
        code=code("isqaflow.arena.retrieval.colbert"),
    script:
        "../../scripts/colbert_index.py"


rule retrieve_colbert:
    input:
        queries="results/data/rag/{domain}/queries.jsonl",
        passages="results/data/rag/{domain}/passages.jsonl",
        index="resources/indexes/{domain}/{retriever}/colbert/meta.json",
        weights=lambda wc: retriever_weight_files(wc.retriever),
        gpu_smoke=gpu_smoke_gate("retrieve_colbert"),
    output:
        hits="results/arena/retrieval/{domain}/{retriever}.jsonl",
        recall="results/arena/retrieval/{domain}/{retriever}.recall.json",
    log:
        "logs/retrieve/{domain}/{retriever}.log",
    benchmark:
        benchmark_file("retrieve", "{domain}/{retriever}")
    wildcard_constraints:
        retriever=retrievers_served_by("colbert"),
    localrule: local_stage("retrieve")
    conda:
        conda_env("colbert")
    threads: threads_for("retrieve")
    resources:
        **cluster_resources("retrieve", gpu=lambda wc: retriever_gpus(wc.retriever)),
    params:
        options=lambda wc: retriever_options(wc.retriever),
        ks=config["arena"]["k"],
        index_dir=lambda wc: f"resources/indexes/{wc.domain}/{wc.retriever}",
        code=code("isqaflow.arena.retrieval.colbert"),
    script:
        "../../scripts/retrieve_colbert.py"


rule rag_answers:
    input:
        queries=lambda wc: arena_files("queries"),
        passages=lambda wc: arena_files("passages"),
        retrieval=lambda wc: [
            f"results/arena/retrieval/{d}/{wc.retriever}.jsonl"
            for d in config["arena"]["domains"]
        ],
        model=lambda wc: generator_files(answerer_entry(wc.answerer)),
        gpu_smoke=gpu_smoke_gate("rag_answers"),
    output:
        answers="results/arena/answers/{retriever}-k{k}/{answerer}.jsonl",
    log:
        "logs/rag_answers/{retriever}-k{k}/{answerer}.log",
    benchmark:
        benchmark_file("rag_answers", "{retriever}-k{k}/{answerer}")
    wildcard_constraints:
        answerer=names_pattern(model_answerers()),  # file-based ones: rule file_answers
    # the arena chain: answers -> the longest judge job, started early so short jobs end the DAG
    priority: 50
    localrule: local_stage("generate")
    conda:
        conda_env("torch")
    threads: threads_for("generate")
    resources:
        **cluster_resources(
            "generate",
            gpu=lambda wc: planned_gpus(
                "generate", "rag_answers", wc, answerer_entry(wc.answerer)["model"]
            ),
        ),
    params:
        model=lambda wc: planned_spec(
            "rag_answers", wc, answerer_entry(wc.answerer)["model"]
        ),
        adapter=lambda wc: generator_adapter_dir(answerer_entry(wc.answerer)),
        cot=lambda wc: answerer_entry(wc.answerer)["cot"],
        generation=config["arena"]["generation"],
        code=code("isqaflow.arena.answers"),
    script:
        "../../scripts/rag_answers.py"


rule arena_judge:
    input:
        queries=lambda wc: arena_files("queries"),
        answers=lambda wc: [
            f"results/arena/answers/{wc.retriever}-k{wc.k}/{a}.jsonl"
            for a in arena_run(wc.retriever, wc.k)["answerers"]
        ],
        model=lambda wc: model_files(arena_judge_entry(wc.judge)["model"]),
        prompt=lambda wc: published_prompt_files("arena", arena_judge_entry(wc.judge)),
        # the same job of the judge whose calls this one reuses (reuse_calls), if any
        reused=lambda wc: reused_calls(
            wc.judge, "results/arena/judgments/{retriever}-k{k}/{judge}.jsonl", wc
        ),
        gpu_smoke=gpu_smoke_gate("arena_judge"),
    output:
        judged="results/arena/judgments/{retriever}-k{k}/{judge}.jsonl",
    log:
        "logs/arena_judge/{retriever}-k{k}/{judge}.log",
    benchmark:
        benchmark_file("arena_judge", "{retriever}-k{k}/{judge}")
    # the longest judge job: early, so short jobs end the DAG
    priority: 50
    localrule: local_stage("judge")
    conda:
        conda_env("torch")
    threads: threads_for("judge")
    resources:
        **cluster_resources(
            "judge",
            gpu=lambda wc: gpus_for("judge", arena_judge_entry(wc.judge)["model"]),
        ),
    params:
        model=lambda wc: model_spec(arena_judge_entry(wc.judge)["model"]),
        mode=lambda wc: arena_judge_entry(wc.judge)["mode"],
        generation=lambda wc: arena_judge_entry(wc.judge).get("generation"),
        orders=config["arena"]["orders"],
        verdict_rule=lambda wc: arena_verdict_rule(wc.judge),
        all_pairs=lambda wc: arena_run(wc.retriever, wc.k)["all_pairs_per_domain"],
        repeats=lambda wc: arena_judge_entry(wc.judge)["repeats"],
        seed=config["seed"],
        code=code("isqaflow.arena.judging.battles", "isqaflow.models.cache"),
    script:
        "../../scripts/arena_judge.py"


rule arena_judge_checks:
    input:
        queries=lambda wc: arena_files("queries"),
        human=config["datasets"]["rag"].get("human_labels") or [],
        # the labels' check first (not ancient: Snakemake skips the own reasons of a job
        # downstream of a pending ancient input, so an edited label file would need two runs)
        checked=lambda wc: human_labels_checked(),
        model=lambda wc: model_files(arena_judge_entry(wc.judge)["model"]),
        prompt=lambda wc: published_prompt_files("arena", arena_judge_entry(wc.judge)),
        reused=lambda wc: reused_calls(
            wc.judge, "results/validity/arena/{judge}.jsonl", wc
        ),
        gpu_smoke=gpu_smoke_gate("arena_judge_checks"),
    output:
        # the known-answer controls always; the human-labelled pairs when configured
        **arena_check_outputs(),
    log:
        "logs/arena_judge_checks/{judge}.log",
    benchmark:
        benchmark_file("arena_judge_checks", "{judge}")
    # needs only the queries and the model, yet at priority 0 it ran last (57 s alone at the end
    # of a 496 s DAG, one core idle): early, so short jobs end the DAG
    priority: 40
    localrule: local_stage("judge")
    conda:
        conda_env("torch")
    threads: threads_for("judge")
    resources:
        **cluster_resources(
            "judge",
            gpu=lambda wc: gpus_for("judge", arena_judge_entry(wc.judge)["model"]),
        ),
    params:
        model=lambda wc: model_spec(arena_judge_entry(wc.judge)["model"]),
        mode=lambda wc: arena_judge_entry(wc.judge)["mode"],
        generation=lambda wc: arena_judge_entry(wc.judge).get("generation"),
        orders=config["arena"]["orders"],
        verdict_rule=lambda wc: arena_verdict_rule(wc.judge),
        controls=config["validity"]["arena"]["controls"],
        per_domain=config["validity"]["arena"]["per_domain"],
        seed=config["seed"],
        code=code("isqaflow.arena.judging.controls", "isqaflow.models.cache"),
    script:
        "../../scripts/arena_judge_checks.py"


rule arena_summaries:
    input:
        papers=lambda wc: papers_file(wc.dataset),
        summaries=lambda wc: summary_files(wc.dataset, wc.summarizer),
        model=lambda wc: model_files(arena_judge_entry(wc.judge)["model"]),
        prompt=lambda wc: published_prompt_files("arena", arena_judge_entry(wc.judge)),
        reused=lambda wc: reused_calls(
            wc.judge,
            "results/arena/summaries/{dataset}/{summarizer}.{judge}.jsonl",
            wc,
        ),
        gpu_smoke=gpu_smoke_gate("arena_summaries"),
    output:
        judged="results/arena/summaries/{dataset}/{summarizer}.{judge}.jsonl",
    log:
        "logs/arena_summaries/{dataset}/{summarizer}.{judge}.log",
    benchmark:
        benchmark_file("arena_summaries", "{dataset}/{summarizer}.{judge}")
    localrule: local_stage("judge")
    conda:
        conda_env("torch")
    threads: threads_for("judge")
    resources:
        **cluster_resources(
            "judge",
            gpu=lambda wc: gpus_for("judge", arena_judge_entry(wc.judge)["model"]),
        ),
    params:
        systems=lambda wc: judged_summary_systems(wc.dataset, wc.summarizer),
        baseline=config["isqa"]["refine"]["initial_prompt"],
        model=lambda wc: model_spec(arena_judge_entry(wc.judge)["model"]),
        mode=lambda wc: arena_judge_entry(wc.judge)["mode"],
        generation=lambda wc: arena_judge_entry(wc.judge).get("generation"),
        orders=config["arena"]["orders"],
        verdict_rule=lambda wc: arena_verdict_rule(wc.judge),
        seed=config["seed"],
        code=code("isqaflow.arena.judging.summaries", "isqaflow.models.cache"),
    script:
        "../../scripts/arena_summaries.py"


rule arena_tables:
    input:
        judged=lambda wc: list(arena_judged_files().values()),
        answers=lambda wc: arena_answer_files(),
        recall=lambda wc: list(arena_recall_files().values()),
        human=lambda wc: arena_human_files(),
        # the ratings themselves (the agreement table reads them): an input, so an edited
        # rating reruns the tables
        human_csv=config["datasets"]["rag"].get("human_labels") or [],
        summaries=lambda wc: arena_summary_files(),
        controls=lambda wc: arena_validity_files(),
        # arena.length_control.difficulty: length_controlled_v1's instruction difficulty
        difficulty=config["arena"]["length_control"]["difficulty"] or [],
    output:
        tables=report(
            expand(
                "results/tables/arena_{table}.{ext}",
                table=ARENA_TABLES,
                ext=["csv", "md", "tex"],
            ),
            caption="../../report/arena_tables.rst",
            category="RAG-QA Arena",
        ),
        figures=report(
            expand("results/figures/arena_ratings.{ext}", ext=["png", "svg"]),
            caption="../../report/arena_figure.rst",
            category="RAG-QA Arena",
        ),
    log:
        "logs/arena_tables.log",
    localrule: local_stage("tables")
    conda:
        "../../envs/data.yaml"
    threads: threads_for("tables")
    resources:
        **cluster_resources("tables", gpu=0),
    params:
        judged=lambda wc: arena_judged_files(),
        recall=lambda wc: arena_recall_files(),
        human_sample=config["datasets"]["rag"]["human_sample"],
        elo=config["arena"]["elo"],
        rounds=config["arena"]["bootstrap_rounds"],
        seed=config["seed"],
        failed_judgments=config["arena"]["failed_judgments"],
        length_control=config["arena"]["length_control"],
        code=code("isqaflow.arena.tables"),
    script:
        "../../scripts/arena_tables.py"
