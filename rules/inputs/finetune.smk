"""Input functions of the feedback-model rules (rules/finetune.smk)."""


def finetune_entry(adapter):
    return config["finetune"][adapter]


def finetune_settings(adapter):
    """Fine-tuning settings with the run's seed (part of the params, so a new seed retrains)."""
    return {"seed": config["seed"], **finetune_entry(adapter)["settings"]}
