"""Input functions of the metric rules (rules/isqa/metrics.smk)."""


def metric_model(role):
    """The QG or QA model of the metrics, with its model entry resolved for params."""
    entry = dict(config["metrics"][role])
    entry["model"] = model_spec(entry["model"])
    return entry


def metric_settings():
    """QAGS/QuestEval settings with the run's seed (QuestEval's: its weighter apart)."""
    questeval = config["metrics"].get("questeval") or {}
    return {
        **config["metrics"]["qags"],
        "questeval": {k: v for k, v in questeval.items() if k != "weighter"},
        "seed": config["seed"],
    }


def metric_weighter():
    """QuestEval's query weighter with its model entry resolved, or None (off)."""
    entry = config["metrics"].get("questeval", {}).get("weighter")
    if not entry:
        return None
    return {**entry, "model": model_spec(entry["model"])}


def metric_model_files():
    models = {config["metrics"][role]["model"] for role in ("qg", "qa")}
    if metric_weighter():
        models.add(config["metrics"]["questeval"]["weighter"]["model"])
    return sorted({f for m in models for f in model_files(m)})


def isqa_steps_files():
    return [
        f"results/summaries/{d}/{s}/isqa-{f}-{q}.steps.jsonl"
        for d, s, f, q in isqa_runs()
    ]


def isqa_ppi_params():
    """ "<dataset>/<summarizer>" -> the isqa_ppi table's human evaluation (isqaflow.metrics.
    ppi_table): the systems compared, the sheets' key and assignment, the filled sheets.
    """
    return {
        f"{d}/{s}": {
            "systems": list(config["human_eval"]["systems"]),
            "key": f"results/human_eval/{d}/{s}/key.csv",
            "assignment": f"results/human_eval/{d}/{s}/assignment.json",
            "filled": dict(human_eval_filled(d, s)),
        }
        for d, s in isqa_pairs()
    }


def isqa_human_inputs():
    """The filled sheets with their key and assignment, where sheets are filled."""
    return [
        p
        for entry in isqa_ppi_params().values()
        if entry["filled"]
        for p in [entry["key"], entry["assignment"], *entry["filled"].values()]
    ]
