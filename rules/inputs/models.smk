"""Input functions of the model-conversion rule (rules/models.smk)."""


def converted_model(dirname):
    """The config entry of the model converted into resources/models/<dirname>."""
    for entry in config["models"].values():
        if "convert" in entry and Path(entry["model"]) == Path(
            "resources/models", dirname
        ):
            return entry
    raise ValueError(f"no model in config converts into resources/models/{dirname}")
