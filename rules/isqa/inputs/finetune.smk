"""Input functions of the feedback-model rules (rules/isqa/finetune.smk)."""


def finetune_entry(adapter):
    return config["finetune"][adapter]


def finetune_settings(adapter):
    """Fine-tuning settings with the run's seed (part of the params, so a new seed retrains)."""
    return {"seed": config["seed"], **finetune_entry(adapter)["settings"]}


def evaluation_plan(adapter):
    """The GPU plan of evaluate_feedback's job (gpu_plan.plan_evaluation); None without a
    gpu_plan section."""
    if config.get("gpu_plan") is None:
        return None
    return gpu_plan.plan_evaluation(config, adapter)


def evaluation_gpus(adapter):
    """The plan's GPUs, else the generate stage's (as before the plan sized this job)."""
    plan = evaluation_plan(adapter)
    return gpus_for("generate") if plan is None else plan.gpus


def evaluation_spec(adapter):
    """The base model's spec with the plan's server (its flags, GPUs and the adapter beside it)."""
    base = finetune_entry(adapter)["base"]
    plan = evaluation_plan(adapter)
    return spec_with_server(base, plan.server_for(base) if plan is not None else None)
