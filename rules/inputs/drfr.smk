"""Input functions of the InFoBench DRFR rules (rules/drfr.smk)."""


def responder_entry(responder):
    return config["drfr"]["responders"][responder]


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
