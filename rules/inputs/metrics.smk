"""Input functions of the metric rules (rules/metrics.smk)."""


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
