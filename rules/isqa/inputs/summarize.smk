"""Input functions of the ISQA rules (rules/isqa/summarize.smk)."""


def question_source(name):
    return config["isqa"]["questions"][name]


def isqa_papers(dataset, questions):
    """The papers with their QA pairs: the dataset's human ones, or model-generated ones."""
    if questions == "human":
        return papers_file(dataset)
    return f"results/questions/{dataset}/generated.jsonl"


def feedback_entry(feedback):
    return config["isqa"]["feedback_models"][feedback]


def feedback_adapter_dir(feedback):
    adapter = feedback_entry(feedback).get("adapter")
    return adapter_dir(adapter) if adapter else None


def feedback_files(feedback):
    entry = feedback_entry(feedback)
    files = model_files(entry["model"])
    if entry.get("adapter"):
        files += adapter_files(entry["adapter"])
    return files


def refine_settings(feedback):
    """Algorithm 1's settings for one feedback model (the prompt style is the model's)."""
    refine = dict(config["isqa"]["refine"])
    dedup = refine.pop("dedup")
    return {
        **refine,
        "dedup_method": dedup["method"],
        "dedup_threshold": dedup["threshold"],
        "dedup_model": dedup["model"],
        "dedup_scope": dedup["scope"],
        "feedback_style": feedback_entry(feedback)["style"],
        "seed": config["seed"],
    }
