"""Input functions of the model-conversion rule (rules/models.smk)."""


def converted_model(dirname):
    """The config entry of the model converted into resources/models/<dirname>."""
    for entry in config["models"].values():
        if "convert" in entry and Path(entry["model"]) == Path(
            "resources/models", dirname
        ):
            return entry
    raise ValueError(f"no model in config converts into resources/models/{dirname}")


# ----------------------------------------------------------------------------- the GPU smoke job
_gpu_smoke = []


def gpu_smoke_plan():
    """(the smoke job's servers and in-process model, its GPU plan or None), computed once
    (isqaflow.models.planning.smoke)."""
    from isqaflow.models.planning import smoke

    if not _gpu_smoke:
        plan = smoke.plan_smoke(config)
        _gpu_smoke.append((plan, smoke.plan_job(config, plan)))
    return _gpu_smoke[0]


def gpu_smoke_gpus():
    """The smoke job's GPUs (isqaflow.models.planning.smoke.job_gpus)."""
    from isqaflow.models.planning import smoke

    return smoke.job_gpus(config)


def gpu_smoke_model_files():
    """The weights of the models it loads, each file once (a served and an in-process entry may
    share a checkpoint)."""
    plan, _ = gpu_smoke_plan()
    return list(dict.fromkeys(f for name in plan.models for f in model_files(name)))


def gpu_smoke_lora(adapter):
    """The LoRA rank, alpha and target modules the run trains `adapter` with (its test adapter
    takes the same, so the server's --max-lora-rank and the modules are tried as the run uses them).
    """
    from isqaflow.finetune.lora import LoraSettings

    settings = LoraSettings.from_dict(finetune_settings(adapter))
    return {
        "name": adapter,
        "r": settings.r,
        "alpha": settings.alpha,
        "target_modules": list(settings.target_modules),
    }


def gpu_smoke_servers():
    """Per engine: the served model's spec with the smoke job's GPU plan, and its test adapter."""
    plan, job = gpu_smoke_plan()
    return [
        {
            "engine": s.engine,
            "name": s.name,
            "spec": spec_with_server(
                s.name,
                job.server_for(s.name) if job is not None else None,
                adapters=False,
            ),
            "adapter": gpu_smoke_lora(s.adapter) if s.adapter else None,
        }
        for s in plan.servers
    ]


def gpu_smoke_in_process():
    plan, _ = gpu_smoke_plan()
    if plan.in_process is None:
        return None
    return {"name": plan.in_process.name, "spec": model_spec(plan.in_process.name)}
