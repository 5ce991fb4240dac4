"""Input functions of the RAG-QA Arena rules (rules/arena/arena.smk)."""


def retriever_options(retriever):
    return {
        k: v
        for k, v in config["arena"]["retrievers"][retriever].items()
        if k != "backend"
    }


def retrievers_served_by(rules):
    """The wildcard pattern of the retrievers of rules colbert_index and retrieve_colbert
    (``"colbert"``: backend colbert, in envs/colbert.yaml) or of rule retrieve (the rest);
    a pattern that matches nothing where there are none."""
    names = sorted(
        name
        for name, entry in config["arena"]["retrievers"].items()
        if (entry["backend"] == "colbert") == (rules == "colbert")
    )
    return "|".join(names) or "(?!)"


def retriever_gpus(retriever):
    """Dense and ColBERT retrieval encode the corpus on a GPU; BM25 does not."""
    if config["arena"]["retrievers"][retriever]["backend"] == "bm25":
        return 0
    return gpus_for("retrieve")


def arena_files(kind):
    return [rag_files(d)[kind] for d in config["arena"]["domains"]]


def answerer_entry(answerer):
    return config["arena"]["answerers"][answerer]


def arena_runs():
    """Retrieval settings answers are generated from, with their answerers (isqaflow.grid)."""
    return grid.arena_runs(config)


def arena_run(retriever, k):
    for run in arena_runs():
        if run["retriever"] == retriever and str(run["k"]) == str(k):
            return run
    raise ValueError(f"no arena run with retriever {retriever} and k {k}")


def arena_judge_entry(judge):
    return config["arena"]["judges"][judge]


def arena_verdict_rule(judge):
    """An arena judge's verdict settings {"rule", "tie_band"} (defaults raw and 0.0), checked
    when the workflow is built: calibrated verdicts without the log-probabilities of both
    orders fail, naming arena.judges.<judge>."""
    entry = arena_judge_entry(judge)
    verdict = {
        "rule": entry["rule"],
        "tie_band": float(entry.get("tie_band", 0.0)),
    }
    verdicts.check_verdict_rule(
        f"arena.judges.{judge}",
        entry["mode"],
        orders=config["arena"]["orders"],
        **verdict,
    )
    return verdict


def arena_judged_files():
    """setting label -> judged pairs file, for every run and judge."""
    return {
        f"{run['retriever']}-k{run['k']}.{j}": f"results/arena/judgments/{run['retriever']}-k{run['k']}/{j}.jsonl"
        for run in arena_runs()
        for j in config["arena"]["judges"]
    }


def arena_answer_files():
    return [
        f"results/arena/answers/{run['retriever']}-k{run['k']}/{a}.jsonl"
        for run in arena_runs()
        for a in run["answerers"]
    ]


def arena_recall_files():
    return {
        f"{r}/{d}": f"results/arena/retrieval/{d}/{r}.recall.json"
        for r in config["arena"]["retrievers"]
        for d in rag_domains_with_corpus()
    }


def arena_human_files():
    if not config["datasets"]["rag"].get("human_labels"):
        return []
    return [f"results/arena/agreement/{j}.jsonl" for j in config["arena"]["judges"]]


def arena_check_outputs():
    """What the arena_judge_checks job writes: the control records, and the judged
    human-labelled pairs when the config has human labels."""
    outputs = {"validity": "results/validity/arena/{judge}.jsonl"}
    if config["datasets"]["rag"].get("human_labels"):
        outputs["agreement"] = "results/arena/agreement/{judge}.jsonl"
    return outputs


def arena_summary_files():
    return [job.output for job in model_jobs("arena_summaries")]


def reused_calls(judge, pattern, wildcards):
    """[the first output of the same job of the judge whose calls ``judge`` reuses
    (arena.judges.<judge>.reuse_calls)], [] when none: that job's call cache, beside it, is
    copied into this job's before any call (isqaflow.models.cache.copy_calls)."""
    source = arena_judge_entry(judge)["reuse_calls"]
    if source is None:
        return []
    return [pattern.format(**{**dict(wildcards.items()), "judge": source})]
