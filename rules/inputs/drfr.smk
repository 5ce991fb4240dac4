"""Input functions of the InFoBench DRFR rules (rules/drfr.smk)."""


def responder_entry(responder):
    return config["drfr"]["responders"][responder]


def responder_adapter_dir(responder):
    adapter = responder_entry(responder).get("adapter")
    return adapter_dir(adapter) if adapter else None


def responder_files(responder):
    entry = responder_entry(responder)
    files = model_files(entry["model"])
    if entry.get("adapter"):
        files += adapter_files(entry["adapter"])
    return files


def judge_entry(judge):
    return config["drfr"]["judges"][judge]


def drfr_judge_rule(judge):
    """How a DRFR judge's verdict is read (raw by default); calibrated needs log-probabilities."""
    entry = judge_entry(judge)
    reading = entry["rule"]
    if (reading, entry["mode"]) == ("calibrated", "text"):
        raise ValueError(
            f"drfr.judges.{judge}: rule 'calibrated' needs mode 'logprob' (it compares "
            f"YES/NO log-probabilities), got mode {entry['mode']!r}; use rule 'raw'"
        )
    return reading


def drfr_judgment_files():
    return [job.output for job in model_jobs("drfr_judge")]


def drfr_summary_judgment_files():
    return [job.output for job in model_jobs("drfr_summaries")]
